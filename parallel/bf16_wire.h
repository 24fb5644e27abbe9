// Gradients on the wire in bfloat16 (DDP's bf16_compress_hook): a flat
// gradient buffer is cast once to bfloat16, rounding to nearest even,
// summed across replicas (each step in float32, rounded once:
// collectives/api/types.h), and cast back to the float32 gradients
// (ConvertElements, nn/tensor.h: a kernel on a GPU). Half the bytes of
// float32 on the wire. DataParallel's bucket reducer and the from-scratch
// trainer's allreduce both go through GradWire.
#ifndef RINGLET_PARALLEL_BF16_WIRE_H_
#define RINGLET_PARALLEL_BF16_WIRE_H_

#include <cstddef>

#include "collectives/api/types.h"
#include "nn/device_event.h"
#include "nn/tensor.h"

namespace ringlet::parallel {

// Throws std::invalid_argument unless `wire` is float32 or bfloat16.
void CheckGradWire(collectives::DataType wire);

// What a collective sums for one flat float32 gradient buffer: the buffer
// itself (float32), or a bfloat16 copy made once per step.
class GradWire {
 public:
  GradWire() = default;
  // `flat`: the float32 buffer (on any device) that this wire carries;
  // its storage must outlive this. Throws as CheckGradWire.
  GradWire(collectives::DataType wire, const nn::Tensor& flat);

  // Queues the cast to the wire (nothing for float32) after what the
  // device has queued so far, and returns the event after which data() is
  // ready. With `host_wait` the host waits for it too (a collective that
  // reads the buffer at once).
  const nn::DeviceEvent& Prepare(const nn::DeviceEvent& flat_ready,
                                 bool host_wait);
  // The buffer to sum, its element count and type.
  void* data();
  size_t count() const { return static_cast<size_t>(flat_.numel()); }
  collectives::DataType type() const { return type_; }
  // After the sum: the float32 gradients take the summed values (queued on
  // the device; nothing for float32, which was summed in place).
  void Finish();

 private:
  collectives::DataType type_ = collectives::DataType::kFloat32;
  nn::Tensor flat_;  // A view of the caller's float32 buffer.
  nn::Tensor wire_;  // bfloat16, flat_'s size: the one cast of the step.
  nn::DeviceEvent cast_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_BF16_WIRE_H_
