// Embedding on CPU devices: rows copied (rounded once for bfloat16), the
// gradient added row by row in position order.
#include "nn/ops/embedding.h"

#include <cstdint>
#include <cstring>

#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

constexpr int64_t kRowGrain = 64;

Tensor EmbeddingForwardCpu(const Tensor& ids, const Tensor& weight,
                           DType out_type) {
  const int64_t n = ids.numel(), vocab = weight.dim(0), d = weight.dim(1);
  CheckEmbeddingIds(ids.data(), n, vocab);
  Shape shape = ids.shape();
  shape.push_back(d);
  Tensor y = Tensor::Uninitialized(shape);
  const float* id = ids.data();
  const float* w = weight.data();
  float* out = y.data();
  ParallelForElements(n, kRowGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      std::memcpy(out + i * d, w + static_cast<int64_t>(id[i]) * d,
                  d * sizeof(float));
    }
  });
  return AsDType(y, out_type);
}

Tensor EmbeddingBackwardCpu(const Tensor& ids, const Tensor& dy_any,
                            int64_t vocab) {
  const int64_t n = ids.numel();
  const int64_t d = dy_any.dim(dy_any.rank() - 1);
  CheckEmbeddingIds(ids.data(), n, vocab);
  const Tensor dy = AsDType(dy_any, DType::kFloat32);
  Tensor dw({vocab, d});
  const float* id = ids.data();
  const float* g = dy.data();
  float* out = dw.data();
  // Columns split over the threads: each sums its columns over the
  // positions in order.
  ParallelForElements(d, 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = 0; i < n; ++i) {
      float* row = out + static_cast<int64_t>(id[i]) * d;
      const float* grad = g + i * d;
      for (int64_t j = begin; j < end; ++j) row[j] += grad[j];
    }
  });
  return dw;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::embedding_forward, DeviceType::kCpu,
                        EmbeddingForwardCpu);
RINGLET_REGISTER_KERNEL(kernels::embedding_backward, DeviceType::kCpu,
                        EmbeddingBackwardCpu);

}  // namespace ringlet::nn
