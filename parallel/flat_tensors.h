// Several tensors of one device in one flat tensor on that device, so a
// collective moves them as one message: a gradient bucket, or the
// parameters and buffers broadcast from the first replica. The one place
// in parallel where tensors become a flat buffer and back; on a GPU the
// copies are queued on the device's stream (no host copy).
//
// Two layouts:
//   kCopies  the flat tensor is separate; Pack copies the tensors in,
//            Unpack copies them out (the broadcast of parameters).
//   kViews   each tensor becomes a view into the flat tensor (its values
//            kept), as DDP's gradient_as_bucket_view: the collective
//            reads and writes the tensors themselves, and Pack/Unpack copy
//            only a tensor that was replaced since (reassigned, not
//            written in place). Each view starts 256 bytes aligned, as
//            cudaMalloc's blocks do, for vectorised kernels; the gaps are
//            zeros and stay zeros under a sum.
//
//   FlatTensors bucket({&w.grad, &b.grad}, FlatTensors::kViews);
//   bucket.PackForCollective();          // (copies nothing) then fenced
//   comm.AllReduce(bucket.data(), bucket.data(), bucket.count(), ...);
//   bucket.Unpack();                     // (copies nothing)
#ifndef RINGLET_PARALLEL_FLAT_TENSORS_H_
#define RINGLET_PARALLEL_FLAT_TENSORS_H_

#include <cstdint>
#include <vector>

#include "nn/device_event.h"
#include "nn/tensor.h"

namespace ringlet::parallel {

class FlatTensors {
 public:
  enum Layout { kCopies, kViews };

  FlatTensors() = default;
  // The flat tensor is allocated on the tensors' device (CPU for an empty
  // list). Throws DeviceError when they are on different devices. The
  // tensors must outlive this object and keep their sizes.
  explicit FlatTensors(std::vector<nn::Tensor*> tensors,
                       Layout layout = kCopies);

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
  nn::Tensor& flat() { return flat_; }  // [count()], on device().
  // Passed once the last Pack() has run on the device.
  const nn::DeviceEvent& packed() const { return packed_; }
  // Elements of the flat tensor, the kViews layout's gaps included.
  int64_t count() const { return count_; }
  nn::Device device() const { return flat_.device(); }
  const std::vector<nn::Tensor*>& tensors() const { return tensors_; }
  // Tensor i's storage is its place in the flat tensor (no copy needed).
  bool IsView(size_t i) const;

 private:
  std::vector<nn::Tensor*> tensors_;
  std::vector<int64_t> offsets_;  // Of each tensor in the flat tensor.
  nn::Tensor flat_;
  int64_t count_ = 0;
  nn::DeviceEvent packed_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_FLAT_TENSORS_H_
