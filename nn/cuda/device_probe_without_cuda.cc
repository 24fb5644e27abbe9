// ProbeCudaDevices() for builds without CUDA: there is nothing to ask.
#include "nn/cuda/device_probe.h"

namespace ringlet::nn::cuda {

CudaDeviceReport ProbeCudaDevices() {
  CudaDeviceReport report;
  report.reason =
      "ringlet was built without CUDA (no toolkit at $CUDA_PATH, or "
      "--config=cpu_only)";
  return report;
}

}  // namespace ringlet::nn::cuda
