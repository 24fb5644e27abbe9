#include "gpu/device_guard.h"

#include <cuda_runtime.h>

#include "gpu/cuda_check.h"

namespace ringlet::gpu {

DeviceGuard::DeviceGuard(int device) {
  RINGLET_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) RINGLET_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  // A destructor must not throw; setting back a device that was current a
  // moment ago does not fail short of a lost driver.
  cudaSetDevice(previous_);
}

}  // namespace ringlet::gpu
