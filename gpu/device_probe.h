// Discovery of usable CUDA devices, as d2l's try_all_gpus() sees them.
//
// A device counts as usable when the CUDA runtime reports it and a small
// kernel compiled into ringlet runs on it and returns the expected value, so
// a GPU whose architecture ringlet was not compiled for is not counted.
// Never throws and never aborts: without a driver or a device the answer is
// zero GPUs with the runtime's reason.
//
// The answers come from the CUDA runtime through a probe that the CUDA
// build registers (device_probe.cu, linked whole); a build without CUDA
// registers none and reports zero GPUs, "built without CUDA".
#ifndef RINGLET_GPU_DEVICE_PROBE_H_
#define RINGLET_GPU_DEVICE_PROBE_H_

#include <string>
#include <vector>

namespace ringlet::gpu {

struct CudaDeviceReport {
  // False in a build without CUDA (toolkit not found, or --config=cpu_only).
  bool compiled_with_cuda = false;
  // Devices the CUDA runtime reports, usable or not.
  int reported = 0;
  // Indices of the reported devices that ran the probe kernel correctly.
  std::vector<int> usable;
  // One line per reported device, e.g. "cuda:0 NVIDIA A100 (sm_80)".
  std::vector<std::string> descriptions;
  // Why there are fewer usable devices than reported, or none at all.
  std::string reason;
};

// Asks the CUDA runtime; safe to call on any machine, any number of times.
// Runs a kernel on every device: call it once at start-up, not per step.
CudaDeviceReport ProbeCudaDevices();

// The runtime's device count without running anything (0 without a
// driver, a device or CUDA in the build); when it is 0 and `reason` is
// given, *reason says why. For checking a request against what exists.
int CountCudaDevices(std::string* reason = nullptr);

// How a build with CUDA answers the two calls above.
struct CudaDeviceProbe {
  CudaDeviceReport (*probe)();
  int (*count)(std::string* reason);
};
// Called once, by the CUDA build's static initialiser; `probe` must
// outlive the program.
void RegisterCudaDeviceProbe(const CudaDeviceProbe* probe);

// "" when GPU `device` exists; else "cuda:N does not exist: the CUDA
// runtime reports M GPU(s) (why)", for a caller's own error.
inline std::string MissingGpu(int device) {
  std::string reason;
  const int count = CountCudaDevices(&reason);
  if (device >= 0 && device < count) return "";
  return "cuda:" + std::to_string(device) +
         " does not exist: the CUDA runtime reports " + std::to_string(count) +
         " GPU(s)" + (reason.empty() ? "" : " (" + reason + ")");
}

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_DEVICE_PROBE_H_
