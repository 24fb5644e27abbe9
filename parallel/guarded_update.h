// The update that ends every data-parallel step, once each replica holds
// the job's summed gradients, shared by DataParallel and the from-scratch
// trainer:
//   1. count non-finite gradient values (on a GPU, on the device; on a CPU
//      the first bad value is named at once),
//   2. clip the mean gradient to a global norm (the host reads the norm),
//   3. step the optimizer on the mean gradient, skipped (on a GPU, on the
//      device) when any value was non-finite, keeping the last finite ones.
// Every replica holds the same sums, so every replica skips or clips alike
// and the replicas stay bitwise equal.
#ifndef RINGLET_PARALLEL_GUARDED_UPDATE_H_
#define RINGLET_PARALLEL_GUARDED_UPDATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "nn/optim/optimizer.h"
#include "nn/tensor.h"
#include "parallel/pending_step.h"

namespace ringlet::parallel {

struct SummedGradients {
  std::vector<nn::Tensor*> grads;  // On the replica's device; may be changed.
  // The parameters' names, in the same order; they outlive the step (the
  // pending step names a non-finite gradient by them).
  const std::vector<std::string>* names = nullptr;
  // The gradients are sums over this many samples: the update takes
  // grads / samples. 1 when they are means already.
  int64_t samples = 1;
};

// Steps `optimizer` on `g` as above, into `step` (its device set): the
// counts, the names and, on a CPU, the divergence. clip_grad_norm 0: no
// clipping. Returns false when the step stopped on the host (clipping
// cannot take a non-finite norm); the update is skipped then too.
bool QueueGuardedUpdate(const SummedGradients& g, double clip_grad_norm,
                        nn::Optimizer& optimizer, QueuedReplicaStep* step);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_GUARDED_UPDATE_H_
