// nn's CUDA ops in builds without CUDA: no tensor can be on a GPU there
// (its storage fails first), so these only say so if ever reached.
#include "nn/ops/cuda/cuda_ops.h"

namespace ringlet::nn::cuda_ops {
namespace {

[[noreturn]] void NoCuda() {
  throw DeviceError(
      "nn's CUDA ops are not in this build (no CUDA toolkit, "
      "or --config=cpu_only)");
}

}  // namespace

Tensor ReluForward(const Tensor&) { NoCuda(); }
Tensor ReluBackward(const Tensor&, const Tensor&) { NoCuda(); }
Tensor Add(const Tensor&, const Tensor&) { NoCuda(); }
void AddInPlace(Tensor&, const Tensor&) { NoCuda(); }
void SgdUpdate(Tensor&, const Tensor&, Tensor*, float, float, float) {
  NoCuda();
}

}  // namespace ringlet::nn::cuda_ops
