// Makes a GPU current for a scope and restores the previous one, so code
// that drives several GPUs from one thread cannot leave the wrong device
// current behind (every cudaMalloc, stream and kernel uses the current one).
#ifndef RINGLET_GPU_DEVICE_GUARD_H_
#define RINGLET_GPU_DEVICE_GUARD_H_

namespace ringlet::gpu {

class DeviceGuard {
 public:
  // Throws CudaError when `device` cannot be made current (no driver, no
  // such device).
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_DEVICE_GUARD_H_
