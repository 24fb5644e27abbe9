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
void AddScaledInPlace(Tensor&, const Tensor&, float) { NoCuda(); }
void DivideInPlace(Tensor&, float) { NoCuda(); }
Tensor QueueCountNonFinite(const std::vector<const Tensor*>&) { NoCuda(); }
void ScaleInPlace(Tensor&, float) { NoCuda(); }
double SumOfSquares(const std::vector<const Tensor*>&) { NoCuda(); }
void SgdUpdate(Tensor&, const Tensor&, Tensor*, float, float, float,
               const unsigned int*) {
  NoCuda();
}
void SgdUpdateAll(const std::vector<Tensor*>&,
                  const std::vector<const Tensor*>&,
                  const std::vector<Tensor*>&, float, float, float,
                  const unsigned int*) {
  NoCuda();
}
void AdamUpdateAll(const std::vector<Tensor*>&,
                   const std::vector<const Tensor*>&,
                   const std::vector<Tensor*>&, const std::vector<Tensor*>&,
                   float, float, float, float, float, float, float,
                   const unsigned int*) {
  NoCuda();
}
void ZeroAll(const std::vector<Tensor*>&) { NoCuda(); }
Tensor Conv2dForward(const Tensor&, const Tensor&, const Tensor&,
                     const Conv2dParams&) {
  NoCuda();
}
Conv2dGrads Conv2dBackward(const Tensor&, const Tensor&, bool, const Tensor&,
                           const Conv2dParams&, bool) {
  NoCuda();
}
Tensor LinearForward(const Tensor&, const Tensor&, const Tensor&) { NoCuda(); }
LinearGrads LinearBackward(const Tensor&, const Tensor&, bool, const Tensor&) {
  NoCuda();
}
Tensor AvgPool2dForward(const Tensor&, int, int) { NoCuda(); }
Tensor AvgPool2dBackward(const Shape&, const Tensor&, int, int) { NoCuda(); }
Tensor GlobalAvgPoolForward(const Tensor&) { NoCuda(); }
Tensor GlobalAvgPoolBackward(const Shape&, const Tensor&) { NoCuda(); }
Tensor BatchNorm2dTrainForward(const Tensor&, const Tensor&, const Tensor&,
                               BatchNormStats*, BatchNormCache*,
                               const ReplicaSum&) {
  NoCuda();
}
Tensor BatchNorm2dEvalForward(const Tensor&, const Tensor&, const Tensor&,
                              const BatchNormStats&) {
  NoCuda();
}
BatchNormGrads BatchNorm2dBackward(const Tensor&, const Tensor&,
                                   const BatchNormCache&, const ReplicaSum&) {
  NoCuda();
}
void QueueSoftmaxCrossEntropy(const Tensor&, const int32_t*, Reduction, Tensor*,
                              Tensor*) {
  NoCuda();
}

}  // namespace ringlet::nn::cuda_ops
