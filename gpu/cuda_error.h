// The one error type for a failed call into the CUDA runtime (and the CUDA
// libraries nn uses): "file:line: call: library's error string". Callers
// that know more (which rank, which op, which layer) catch it and wrap it in
// their own error with that context.
//
// No CUDA header here, so code without CUDA can catch it too.
#ifndef RINGLET_GPU_CUDA_ERROR_H_
#define RINGLET_GPU_CUDA_ERROR_H_

#include <stdexcept>
#include <string>

namespace ringlet::gpu {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws CudaError("file:line: call: what"); the check macros call it.
[[noreturn]] inline void ThrowCudaError(const char* file, int line,
                                        const char* call,
                                        const std::string& what) {
  throw CudaError(std::string(file) + ":" + std::to_string(line) + ": " + call +
                  ": " + what);
}

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_CUDA_ERROR_H_
