// How ops compute, bound to the calling thread by a scope (torch.autocast's
// model), not set for the whole process: two models in one process, or a
// test that changes a setting, cannot disagree. A thread with no scope
// computes with the defaults below (the book's: float32, NCHW, one op
// thread). Threads that run a caller's ops take the caller's options:
// DataParallel's and the trainers' device workers bind the options current
// where they were made (or the ones given per replica).
#ifndef RINGLET_NN_COMPUTE_OPTIONS_H_
#define RINGLET_NN_COMPUTE_OPTIONS_H_

#include "nn/dtype.h"
#include "nn/gpu_precision.h"
#include "nn/memory_format.h"

namespace ringlet::nn {

// Which implementation CPU convolutions run (nn/ops/cpu_conv_backend.h):
// kDefault is $RINGLET_CPU_CONV when set, else oneDNN where the build has
// it, else Eigen.
enum class CpuConvBackend { kDefault, kOneDnn, kEigen };

struct ComputeOptions {
  // bfloat16: autocast (nn/ops/autocast.h), the ops that take it compute in
  // bfloat16 on float32 parameters.
  DType autocast = DType::kFloat32;
  // The activations' memory format on GPUs (CPU devices ignore it).
  MemoryFormat gpu_layout = MemoryFormat::kContiguous;
  // float32 convolutions and products on GPUs: FMA or TF32.
  GpuPrecision gpu_precision = GpuPrecision::kFp32;
  // How cuDNN's convolution algorithms are chosen.
  ConvAlgorithms conv_algorithms = ConvAlgorithms::kMeasure;
  CpuConvBackend cpu_conv = CpuConvBackend::kDefault;
  // Threads each CPU op may use (nn/ops/op_threads.h); at least 1.
  int op_threads = 1;
};

// The calling thread's options: its innermost ComputeScope's, else the
// defaults.
const ComputeOptions& CurrentComputeOptions();

// Binds `options` to the calling thread until it goes (scopes nest, and
// must end in reverse order on the thread that made them). Throws
// std::invalid_argument for op_threads below 1.
class ComputeScope {
 public:
  explicit ComputeScope(const ComputeOptions& options);
  ~ComputeScope();
  ComputeScope(const ComputeScope&) = delete;
  ComputeScope& operator=(const ComputeScope&) = delete;

 private:
  ComputeOptions options_;
  const ComputeOptions* outer_;
};

// The current options with one field changed, bound for a scope:
//   const auto scope = ScopedCompute(&ComputeOptions::op_threads, 2);
template <typename T, typename V>
ComputeScope ScopedCompute(T ComputeOptions::*field, V value) {
  ComputeOptions options = CurrentComputeOptions();
  options.*field = static_cast<T>(value);
  return ComputeScope(options);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_COMPUTE_OPTIONS_H_
