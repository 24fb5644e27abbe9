// The CUDA build's device probe, registered when linked in: the runtime's
// device count, then a one-thread kernel per device to prove ringlet's code
// runs there.
#include <cuda_runtime.h>
#include <unistd.h>

#include <string>

#include "gpu/device_probe.h"

namespace ringlet::gpu {
namespace {

constexpr int kProbeValue = 0x5eed;

__global__ void probe_forward_kernel(int* out) { *out = kProbeValue; }

std::string Describe(cudaError_t err) {
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

// Why the runtime found no device, for people: without a driver the runtime
// reports cudaErrorInsufficientDriver, which reads as "update the driver"
// on a machine that has none. The runtime's own words follow in brackets.
std::string NoDeviceReason(cudaError_t err) {
  const std::string runtime = " (CUDA runtime: " + Describe(err) + ")";
  const bool driver_loaded = access("/proc/driver/nvidia/version", F_OK) == 0;
  if (err == cudaErrorInsufficientDriver && driver_loaded) {
    return "the NVIDIA driver is older than this build's CUDA runtime "
           "needs; update the driver" +
           runtime;
  }
  if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver) {
    return "this machine has no usable NVIDIA GPU or driver" + runtime;
  }
  return "CUDA runtime: " + Describe(err);
}

// Runs the probe kernel on `device`; on failure returns the reason.
std::string RunProbe(int device) {
  cudaError_t err = cudaSetDevice(device);
  if (err != cudaSuccess) return "cudaSetDevice: " + Describe(err);
  int* value = nullptr;
  err = cudaMalloc(&value, sizeof(int));
  if (err != cudaSuccess) return "cudaMalloc: " + Describe(err);
  probe_forward_kernel<<<1, 1>>>(value);
  err = cudaGetLastError();
  int host = 0;
  if (err == cudaSuccess) {
    err = cudaMemcpy(&host, value, sizeof(int), cudaMemcpyDeviceToHost);
  }
  cudaFree(value);
  if (err != cudaSuccess) return "probe kernel: " + Describe(err);
  if (host != kProbeValue) return "probe kernel returned a wrong value";
  return "";
}

int CountWithRuntime(std::string* reason) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // Clear the error so later calls start clean.
    if (reason != nullptr) *reason = NoDeviceReason(err);
    return 0;
  }
  if (count == 0 && reason != nullptr) {
    *reason = "CUDA runtime reports no device";
  }
  return count;
}

CudaDeviceReport ProbeWithRuntime() {
  CudaDeviceReport report;
  report.compiled_with_cuda = true;
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // Clear the sticky error so later calls start clean.
    report.reason = NoDeviceReason(err);
    return report;
  }
  report.reported = count;
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    std::string line = "cuda:" + std::to_string(d);
    if (cudaGetDeviceProperties(&prop, d) == cudaSuccess) {
      line += std::string(" ") + prop.name + " (sm_" +
              std::to_string(prop.major) + std::to_string(prop.minor) + ", " +
              std::to_string(prop.totalGlobalMem >> 20) + " MiB)";
    }
    const std::string failure = RunProbe(d);
    if (failure.empty()) {
      report.usable.push_back(d);
    } else {
      line += " unusable: " + failure;
      report.reason = "cuda:" + std::to_string(d) + " " + failure;
    }
    report.descriptions.push_back(line);
  }
  if (count == 0) report.reason = "CUDA runtime reports no device";
  return report;
}

const CudaDeviceProbe kRuntimeProbe{&ProbeWithRuntime, &CountWithRuntime};
[[maybe_unused]] const bool kRegistered =
    (RegisterCudaDeviceProbe(&kRuntimeProbe), true);

}  // namespace

}  // namespace ringlet::gpu
