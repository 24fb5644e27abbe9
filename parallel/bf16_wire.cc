#include "parallel/bf16_wire.h"

#include <stdexcept>
#include <string>

namespace ringlet::parallel {

void CheckGradWire(collectives::DataType wire) {
  if (wire == collectives::DataType::kFloat32) return;
  if (wire != collectives::DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("gradients go on the wire as float32 or bfloat16, not ") +
        collectives::Name(wire));
  }
}

GradWire::GradWire(collectives::DataType wire, const nn::Tensor& flat)
    : type_(wire), flat_(flat) {
  CheckGradWire(wire);
  if (type_ == collectives::DataType::kBFloat16) {
    wire_ = nn::Tensor::Uninitialized({flat.numel()}, flat.device(),
                                      nn::DType::kBFloat16);
    cast_ = nn::DeviceEvent(flat.device());
  }
}

const nn::DeviceEvent& GradWire::Prepare(const nn::DeviceEvent& flat_ready,
                                         bool host_wait) {
  if (!wire_.defined()) return flat_ready;
  nn::ConvertElements(flat_, wire_);  // Queued after what wrote the buffer.
  cast_.Record();
  if (host_wait) cast_.Wait();
  return cast_;
}

void* GradWire::data() {
  return wire_.defined() ? wire_.raw_data() : flat_.raw_data();
}

void GradWire::Finish() {
  if (wire_.defined()) nn::ConvertElements(wire_, flat_);
}

}  // namespace ringlet::parallel
