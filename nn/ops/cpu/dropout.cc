// Dropout on CPU devices: the mask drawn per element (dropout.h), so the
// op's threads split the elements freely.
#include "nn/ops/dropout.h"

#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kGrain = int64_t{1} << 15;

Tensor DropoutCpu(const Tensor& x_any, uint64_t seed, uint64_t threshold,
                  float scale) {
  const Tensor x = AsDType(x_any, DType::kFloat32);
  Tensor y = Tensor::Uninitialized(x.shape());
  const float* in = x.data();
  float* out = y.data();
  ParallelForElements(x.numel(), kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      out[i] = DropoutKeeps(seed, i, threshold) ? in[i] * scale : 0.0f;
    }
  });
  return AsDType(y, x_any.dtype());
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::dropout, DeviceType::kCpu, DropoutCpu);

}  // namespace ringlet::nn
