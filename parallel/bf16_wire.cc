#include "parallel/bf16_wire.h"

#include <stdexcept>
#include <string>

namespace ringlet::nn {

void CheckGradWire(collectives::DataType wire) {
  if (wire == collectives::DataType::kFloat32) return;
  if (wire != collectives::DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("gradients go on the wire as float32 or bfloat16, not ") +
        collectives::Name(wire));
  }
}

}  // namespace ringlet::nn
