#include "nn/models/lenet.h"

#include <cmath>
#include <random>

#include "nn/ops/activation.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/pooling.h"

namespace ringlet::nn {

LeNetParams LeNetParams::Zeros() {
  return LeNetParams{Tensor({20, 1, 3, 3}),  Tensor({20}),
                     Tensor({50, 20, 5, 5}), Tensor({50}),
                     Tensor({800, 128}),     Tensor({128}),
                     Tensor({128, 10}),      Tensor({10})};
}

LeNetParams LeNetParams::Init(uint64_t seed, InitScheme scheme) {
  LeNetParams p = Zeros();
  std::mt19937_64 rng(seed);
  for (Tensor* w : {&p.W1, &p.W2, &p.W3, &p.W4}) {
    // fan_in: C*R*S for a convolution [K, C, R, S], rows of a linear [in, out].
    const int64_t fan_in = w->rank() == 4 ? w->numel() / w->dim(0) : w->dim(0);
    const double stddev = scheme == InitScheme::kNormal001
                              ? 0.01
                              : std::sqrt(2.0 / static_cast<double>(fan_in));
    std::normal_distribution<float> dist(0.0f, static_cast<float>(stddev));
    for (int64_t i = 0; i < w->numel(); ++i) w->data()[i] = dist(rng);
  }
  return p;
}

std::vector<Tensor*> LeNetParams::All() {
  return {&W1, &b1, &W2, &b2, &W3, &b3, &W4, &b4};
}

std::vector<const Tensor*> LeNetParams::All() const {
  return {&W1, &b1, &W2, &b2, &W3, &b3, &W4, &b4};
}

std::vector<std::string> LeNetParams::Names() {
  return {"W1", "b1", "W2", "b2", "W3", "b3", "W4", "b4"};
}

LeNetParams LeNetParams::To(Device device) const {
  return LeNetParams{W1.To(device), b1.To(device), W2.To(device),
                     b2.To(device), W3.To(device), b3.To(device),
                     W4.To(device), b4.To(device)};
}

LeNetParams LeNetParams::Clone() const {
  return LeNetParams{W1.Clone(), b1.Clone(), W2.Clone(), b2.Clone(),
                     W3.Clone(), b3.Clone(), W4.Clone(), b4.Clone()};
}

Tensor LeNetForward(const LeNetParams& p, const Tensor& x,
                    LeNetActivations* a) {
  ExpectShape("lenet", "input", x, {-1, 1, 28, 28});
  a->x = x;
  // Each convolution's ReLU runs in its pass over the output.
  a->a1 = Conv2dReluForward(x, p.W1, p.b1, {});
  a->p1 = AvgPool2dForward(a->a1, 2, 2);
  a->a2 = Conv2dReluForward(a->p1, p.W2, p.b2, {});
  a->p2 = AvgPool2dForward(a->a2, 2, 2);
  a->f = Flatten(a->p2);
  a->h3 = LinearForward(a->f, p.W3, p.b3);
  a->a3 = ReluForward(a->h3);
  return LinearForward(a->a3, p.W4, p.b4);
}

LeNetParams LeNetBackward(const LeNetParams& p, const LeNetActivations& a,
                          const Tensor& dlogits) {
  LeNetParams g;
  LinearGrads l4 = LinearBackward(a.a3, p.W4, true, dlogits);
  g.W4 = l4.dw;
  g.b4 = l4.db;
  LinearGrads l3 = LinearBackward(a.f, p.W3, true, ReluBackward(a.a3, l4.dx));
  g.W3 = l3.dw;
  g.b3 = l3.db;
  const Tensor dp2 = l3.dx.View(a.p2.shape());
  const Tensor da2 = AvgPool2dBackward(a.a2.shape(), dp2, 2, 2);
  Conv2dGrads c2 =
      Conv2dBackward(a.p1, p.W2, true, ReluBackward(a.a2, da2), {});
  g.W2 = c2.dw;
  g.b2 = c2.db;
  const Tensor da1 = AvgPool2dBackward(a.a1.shape(), c2.dx, 2, 2);
  // The input needs no gradient.
  Conv2dGrads c1 = Conv2dBackward(a.x, p.W1, true, ReluBackward(a.a1, da1), {},
                                  /*need_dx=*/false);
  g.W1 = c1.dw;
  g.b1 = c1.db;
  return g;
}

}  // namespace ringlet::nn
