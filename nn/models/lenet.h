// The from-scratch LeNet of d2l's "Training on Multiple GPUs": a plain
// parameter list with a functional forward and backward, so the trainer can
// copy it to every device (get_params) and sum its gradients by hand.
//   conv(W1 [20,1,3,3], b1) relu avgpool(2,2) conv(W2 [50,20,5,5], b2) relu
//   avgpool(2,2) flatten linear(W3 [800,128], b3) relu linear(W4 [128,10], b4)
// 129,068 parameters.
#ifndef RINGLET_NN_MODELS_LENET_H_
#define RINGLET_NN_MODELS_LENET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/layers/init.h"
#include "nn/tensor.h"

namespace ringlet::nn {

struct LeNetParams {
  Tensor W1, b1, W2, b2, W3, b3, W4, b4;

  // Biases zero; weights from `seed` with d2l's normal(0, 0.01) (the
  // chapter's choice, which starts slowly) or Kaiming normal.
  static LeNetParams Init(uint64_t seed,
                          InitScheme scheme = InitScheme::kNormal001);
  // Zeros of every shape (gradient accumulators).
  static LeNetParams Zeros();
  // Pointers in the order above, for loops over all parameters.
  std::vector<Tensor*> All();
  std::vector<const Tensor*> All() const;
  // Their names, in the same order: "W1", "b1", ...
  static std::vector<std::string> Names();
  // A deep copy (d2l's get_params: one replica per device).
  LeNetParams Clone() const;
  // A copy on `device` (cuda:0, say).
  LeNetParams To(Device device) const;
};

// What the backward pass needs from the forward pass.
struct LeNetActivations {
  Tensor x, a1, p1, a2, p2, f, h3, a3;
};

// x [N, 1, 28, 28] -> logits [N, 10]; fills `acts` for the backward pass.
Tensor LeNetForward(const LeNetParams& params, const Tensor& x,
                    LeNetActivations* acts);

// Gradients of all parameters from d loss / d logits.
LeNetParams LeNetBackward(const LeNetParams& params,
                          const LeNetActivations& acts, const Tensor& dlogits);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_MODELS_LENET_H_
