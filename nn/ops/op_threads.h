// The cores an op may use. A CPU device is driven by its own thread; that
// thread says how many cores its ops may split work over (its share), and
// the ops that pay for it (convolutions, per image) do.
#ifndef RINGLET_NN_OPS_OP_THREADS_H_
#define RINGLET_NN_OPS_OP_THREADS_H_

#include <cstdint>
#include <functional>

namespace ringlet::nn {

// For ops called from this thread (ComputeOptions::op_threads,
// nn/compute_options.h); 1 (the default) keeps them on it.
int OpThreads();

// Calls fn(begin, end, worker) over [0, n) cut into at most OpThreads()
// contiguous parts, worker 0 on the calling thread and the others on helper
// threads the calling thread keeps for its lifetime; returns when all are
// done. A ParallelFor inside fn runs on its thread alone. fn must not throw
// on a helper (worker 0's exception is rethrown once the others are done).
void ParallelFor(int64_t n,
                 const std::function<void(int64_t, int64_t, int)>& fn);

// Calls fn(item, worker) for every item in [0, n), each item taken by
// whichever op thread is free next (worker 0 the calling thread): for items
// that write only their own outputs, so results do not depend on which
// thread runs which item, yet a slower thread (a virtual CPU shared with
// another machine's work) takes fewer. `worker` picks per-thread scratch.
// Same rules as ParallelFor otherwise.
void ParallelForEachItem(int64_t n,
                         const std::function<void(int64_t, int)>& fn);

// Calls fn(begin, end) over [0, n) in contiguous ranges of at least `grain`
// elements, one per op thread (on the calling thread alone when n is
// small): for elementwise ops, where threads pay only on large tensors.
void ParallelForElements(int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_OP_THREADS_H_
