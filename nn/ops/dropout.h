// Inverted dropout (torch.nn.functional.dropout in training): each element
// is kept with probability 1 - p and scaled by 1 / (1 - p), else zeroed.
// The mask is drawn from (seed, element index) alone by a counter-based
// hash, so it needs no storage, the backward recomputes it, and a CPU and
// a GPU, any number of threads, draw the same mask. float32 or bfloat16
// (computed in float32, rounded once), outputs in the input's type.
#ifndef RINGLET_NN_OPS_DROPOUT_H_
#define RINGLET_NN_OPS_DROPOUT_H_

#include <cstdint>
#include <string>

#include "nn/ops/dispatch.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

#ifdef __CUDACC__
#define RINGLET_HOST_DEVICE __host__ __device__
#else
#define RINGLET_HOST_DEVICE
#endif

namespace ringlet::nn {

// Element i's 64 random bits under `seed`: splitmix64's finaliser of the
// seed and the index (the same function on the host and the device).
RINGLET_HOST_DEVICE inline uint64_t DropoutBits(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Whether element i is kept: its top 32 bits at or above `threshold`
// (DropoutThreshold(p)).
RINGLET_HOST_DEVICE inline bool DropoutKeeps(uint64_t seed, uint64_t i,
                                             uint64_t threshold) {
  return (DropoutBits(seed, i) >> 32) >= threshold;
}

// p of the 2^32 values of the top bits: so an element is dropped with
// probability p (to within 2^-32).
inline uint64_t DropoutThreshold(float p) {
  return static_cast<uint64_t>(static_cast<double>(p) * 4294967296.0);
}

// Implementations per device type (kernel_table.h), given 0 < p < 1:
// y = x * keep(i) * scale, and the same of dy for the backward.
namespace kernels {
inline KernelTable<Tensor(const Tensor& x, uint64_t seed, uint64_t threshold,
                          float scale)>
    dropout{"dropout"};
}  // namespace kernels

// p in [0, 1) (ShapeError otherwise); p = 0 returns x itself.
inline Tensor DropoutForward(const Tensor& x, float p, uint64_t seed) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw ShapeError("dropout: probability " + std::to_string(p) +
                     " is outside [0, 1)");
  }
  if (p == 0.0f) return x;
  return kernels::dropout.For(OpDeviceOfAnyType("dropout", {&x}))(
      x, seed, DropoutThreshold(p), 1.0f / (1.0f - p));
}

// The forward's p and seed: the gradient passes where the element was kept,
// scaled alike.
inline Tensor DropoutBackward(const Tensor& dy, float p, uint64_t seed) {
  return DropoutForward(dy, p, seed);
}

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_DROPOUT_H_
