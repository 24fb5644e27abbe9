// A device's queue of work for one thread of control, such as one replica
// of a data-parallel model. On a GPU a lane has its own stream, cuDNN and
// cuBLAS handles and memory pool; on a CPU it is nothing (CPU ops finish
// before they return).
//
// Why: several replicas may share one GPU (--devices=cuda:0,cuda:0), each
// driven by its own thread, and cuDNN forbids two threads using one handle
// at once. With a lane each, their work also runs side by side instead of
// queueing on one stream.
//
// While a DeviceLane::Use is alive, nn's work on the lane's device from
// that thread goes to the lane. Work of two lanes is not ordered: before a
// tensor made on a lane is used elsewhere, Synchronize() the lane.
#ifndef RINGLET_NN_DEVICE_LANE_H_
#define RINGLET_NN_DEVICE_LANE_H_

#include <memory>

#include "nn/device.h"

namespace ringlet::nn {

class GpuLane;
class GpuLaneBinding;

class DeviceLane {
 public:
  DeviceLane() = default;  // A CPU lane: Use and Synchronize do nothing.
  // A lane of `device`; on a GPU, a new one. Throws DeviceError for a GPU
  // that does not exist or a build without CUDA.
  explicit DeviceLane(Device device);

  const Device& device() const { return device_; }
  // Waits until the lane's queued work has run.
  void Synchronize() const;

  // Binds the lane to the calling thread for the scope.
  class Use {
   public:
    explicit Use(const DeviceLane& lane);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    std::unique_ptr<GpuLaneBinding> binding_;
  };

 private:
  Device device_;
  std::shared_ptr<GpuLane> context_;  // Null on CPUs.
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_DEVICE_LANE_H_
