// Several tensors of one device, packed back to back into one flat tensor
// on that device, so a collective moves them as one message: a gradient
// bucket, or the parameters and buffers broadcast from the first replica.
// The one place in nn/parallel where tensors become a flat buffer and back;
// on a GPU the copies are queued on the device's stream (no host copy).
//
//   FlatTensors bucket({&w.grad, &b.grad});
//   bucket.PackForCollective();          // flat <- tensors, then fenced
//   comm.AllReduce(bucket.data(), bucket.data(), bucket.count(), ...);
//   bucket.Unpack();                     // tensors <- flat
#ifndef RINGLET_NN_PARALLEL_FLAT_TENSORS_H_
#define RINGLET_NN_PARALLEL_FLAT_TENSORS_H_

#include <cstdint>
#include <vector>

#include "nn/device_fence.h"
#include "nn/tensor.h"

namespace ringlet::nn {

class FlatTensors {
 public:
  FlatTensors() = default;
  // The flat tensor is allocated on the tensors' device (CPU for an empty
  // list). Throws DeviceError when they are on different devices. The
  // tensors must outlive this object and keep their sizes.
  explicit FlatTensors(std::vector<Tensor*> tensors);

  // flat <- tensors. The packed values are visible to host code and to
  // other streams only after WaitUntilPacked (PackForCollective does both).
  void Pack();
  // Blocks the calling thread until the last Pack's copies have run (GPU);
  // nothing to wait for on a CPU device.
  void WaitUntilPacked() const;
  // Pack, then wait: the flat buffer is ready for a collective, which reads
  // it on its own stream (or thread).
  void PackForCollective();
  // tensors <- flat (queued on the device's stream on a GPU).
  void Unpack();

  // The flat buffer's storage (device memory on a GPU), for collectives.
  float* data() { return flat_.device_data(); }
  Tensor& flat() { return flat_; }  // [count()], on device().
  // Passed once the last Pack() has run on the device.
  const DeviceFence& packed() const { return packed_; }
  int64_t count() const { return count_; }
  Device device() const { return flat_.device(); }
  const std::vector<Tensor*>& tensors() const { return tensors_; }

 private:
  std::vector<Tensor*> tensors_;
  Tensor flat_;
  int64_t count_ = 0;
  DeviceFence packed_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_PARALLEL_FLAT_TENSORS_H_
