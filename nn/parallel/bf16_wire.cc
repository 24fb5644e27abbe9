#include "nn/parallel/bf16_wire.h"

#include <stdexcept>
#include <string>

namespace ringlet::nn {

void CheckGradWire(collectives::DataType wire,
                   const std::vector<Device>& devices) {
  if (wire == collectives::DataType::kFloat32) return;
  if (wire != collectives::DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("gradients go on the wire as float32 or bfloat16, not ") +
        collectives::Name(wire));
  }
  for (const Device& d : devices) {
    if (d.is_cuda()) {
      throw std::invalid_argument(
          "gradients in bfloat16 on the wire (--grad_dtype=bf16) run on CPU "
          "devices; on " +
          ToString(d) +
          " they are not written yet: use --grad_dtype=fp32 there");
    }
  }
}

}  // namespace ringlet::nn
