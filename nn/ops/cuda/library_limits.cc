#include "nn/ops/cuda/library_limits.h"

#include <climits>
#include <string>

#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {

void CheckCudnnTensor(int64_t n, int64_t c, int64_t h, int64_t w) {
  const Shape shape = {n, c, h, w};
  for (int64_t d : shape) {
    if (d < 0) {
      throw ShapeError("GPU op: tensor shape " + ToString(shape) +
                       " has a negative dimension");
    }
  }
  const int64_t per_sample = NumElements({c, h, w});
  const int64_t elements = NumElements(shape);
  if (elements <= kMaxCudnnElements) return;
  const int64_t fits = per_sample > 0 ? kMaxCudnnElements / per_sample : 0;
  throw ShapeError(
      "GPU op: a " + ToString(shape) + " tensor has " +
      std::to_string(elements) +
      " elements and cuDNN takes at most 2^31 - 1 per tensor; at most " +
      std::to_string(fits) +
      " samples per GPU fit this layer: use a smaller --batch_size, or "
      "more GPUs");
}

void CheckCublasProduct(int64_t n, int64_t in, int64_t out) {
  for (int64_t d : {n, in, out}) {
    if (d < 0 || d > INT_MAX) {
      throw ShapeError("linear on a GPU: [" + std::to_string(n) + ", " +
                       std::to_string(in) + "] x [" + std::to_string(in) +
                       ", " + std::to_string(out) +
                       "]: cuBLAS takes at most 2^31 - 1 rows or "
                       "columns; use a smaller --batch_size, or more GPUs");
    }
  }
}

}  // namespace ringlet::nn::cuda_ops
