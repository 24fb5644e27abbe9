// Embedding lookup (torch.nn.Embedding): each id picks a row of the weight.
// Ids come as float32 tensors of any shape (the loader's inputs are
// floats), each an integer in [0, V) (exact to 2^24); the output is
// [..., D], float32, or bfloat16 under autocast (the rows rounded once).
// The weight's gradient adds each position's output gradient into its
// id's row in position order: the same bits on every run and device type.
#ifndef RINGLET_NN_OPS_EMBEDDING_H_
#define RINGLET_NN_OPS_EMBEDDING_H_

#include <cstdint>
#include <string>

#include "nn/ops/autocast.h"
#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Implementations per device type (kernel_table.h), given checked shapes
// on one device: the kernels check the ids (a GPU's on the host, one
// wait) and throw ShapeError naming the first bad one.
namespace kernels {
inline KernelTable<Tensor(const Tensor& ids, const Tensor& weight,
                          DType out_type)>
    embedding_forward{"embedding"};
inline KernelTable<Tensor(const Tensor& ids, const Tensor& dy, int64_t vocab)>
    embedding_backward{"embedding backward"};
}  // namespace kernels

// weight [V, D] float32.
inline Tensor EmbeddingForward(const Tensor& ids, const Tensor& weight) {
  ExpectShape("embedding", "weight", weight, {-1, -1});
  const DType out_type =
      ComputesInBf16({&weight}) ? DType::kBFloat16 : DType::kFloat32;
  return kernels::embedding_forward.For(OpDevice("embedding", {&ids, &weight}))(
      ids, weight, out_type);
}

// dy [..., D] of either type -> the weight's gradient [vocab, D], float32.
inline Tensor EmbeddingBackward(const Tensor& ids, const Tensor& dy,
                                int64_t vocab) {
  Shape expected = ids.shape();
  expected.push_back(dy.rank() > 0 ? dy.dim(dy.rank() - 1) : 0);
  ExpectShape("embedding backward", "output gradient", dy, expected);
  const Device device = CommonDevice(
      "embedding backward", {OpDevice("embedding backward", {&ids}),
                             OpDeviceOfAnyType("embedding backward", {&dy})});
  return kernels::embedding_backward.For(device)(ids, dy, vocab);
}

// Throws ShapeError unless every id is an integer in [0, vocab): for the
// kernels, on host memory.
inline void CheckEmbeddingIds(const float* ids, int64_t n, int64_t vocab) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = ids[i];
    if (!(v >= 0.0f && v < static_cast<float>(vocab)) ||
        v != static_cast<float>(static_cast<int64_t>(v))) {
      throw ShapeError("embedding: id " + std::to_string(v) + " at position " +
                       std::to_string(i) + " is not an integer in [0, " +
                       std::to_string(vocab) + ")");
    }
  }
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_EMBEDDING_H_
