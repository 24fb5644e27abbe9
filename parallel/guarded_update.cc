#include "parallel/guarded_update.h"

#include <stdexcept>

#include "nn/optim/grad_clip.h"
#include "parallel/replica_checks.h"

namespace ringlet::parallel {

bool QueueGuardedUpdate(const SummedGradients& g, double clip_grad_norm,
                        nn::Optimizer& optimizer, QueuedReplicaStep* step) {
  if (g.names == nullptr || g.names->size() != g.grads.size()) {
    throw std::invalid_argument(
        "guarded update: one name per gradient is needed");
  }
  if (g.samples < 1) {
    throw std::invalid_argument("guarded update: samples must be 1 or more");
  }
  const std::vector<const nn::Tensor*> read(g.grads.begin(), g.grads.end());
  step->gradients = nn::QueueCountNonFinite(read);
  step->gradient_names = g.names;
  if (step->device.is_cpu()) {
    // The values are here: say which value it was.
    const int bad = step->gradients.FirstBad();
    if (bad >= 0) {
      step->divergence = "the gradient of " + (*g.names)[bad] + " became " +
                         FirstNonFinite(read[bad]->data(), read[bad]->numel());
    }
  }
  double divisor = static_cast<double>(g.samples);
  if (clip_grad_norm > 0) {
    // The norm is read on the host (on a GPU a wait), after the check.
    if (step->gradients.FirstBad() >= 0) return false;
    if (g.samples == 1) {
      nn::ClipGradNorm(g.grads, clip_grad_norm);  // torch's clip_grad_norm_.
    } else {
      // The sums' division takes the coefficient with it: one pass.
      divisor /=
          nn::ClipCoefficient(nn::GlobalNorm(read) / divisor, clip_grad_norm);
    }
  }
  if (divisor == 1) {
    optimizer.Step(read, &step->gradients);
  } else {
    optimizer.StepOnSum(g.grads, divisor, &step->gradients);
  }
  return true;
}

}  // namespace ringlet::parallel
