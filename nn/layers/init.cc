#include "nn/layers/init.h"

#include <cmath>

namespace ringlet::nn {

void InitParameters(Module& module, InitScheme scheme, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (Parameter* p : module.Parameters()) {
    const std::string& name = p->name;
    const bool weight = name.size() >= 6 &&
                        name.compare(name.size() - 6, 6, "weight") == 0 &&
                        (p->value.rank() == 2 || p->value.rank() == 4);
    const bool bias =
        name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    if (bias) p->value.Fill(0.0f);
    if (!weight) continue;
    double stddev = 0.01;
    if (scheme == InitScheme::kKaimingNormal) {
      // fan_in: input features (linear: rows of [in, out]) or C*R*S.
      const int64_t fan_in = p->value.rank() == 2
                                 ? p->value.dim(0)
                                 : p->value.numel() / p->value.dim(0);
      stddev = std::sqrt(2.0 / static_cast<double>(fan_in));
    }
    std::normal_distribution<float> dist(0.0f, static_cast<float>(stddev));
    for (int64_t i = 0; i < p->value.numel(); ++i)
      p->value.data()[i] = dist(rng);
  }
}

}  // namespace ringlet::nn
