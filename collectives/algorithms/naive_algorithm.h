// The textbook algorithm of d2l's from-scratch chapter: every rank sends its
// buffer to rank 0, which combines them one after another, then sends the
// result back to every rank. Kept as the baseline every benchmark compares
// against: rank 0 sends (n-1) x S bytes and does all the arithmetic, while
// the ring spreads both evenly.
#ifndef RINGLET_COLLECTIVES_ALGORITHMS_NAIVE_ALGORITHM_H_
#define RINGLET_COLLECTIVES_ALGORITHMS_NAIVE_ALGORITHM_H_

#include <cstddef>

#include "collectives/algorithms/algorithm.h"

namespace ringlet::collectives {

class NaiveAlgorithm : public Algorithm {
 public:
  explicit NaiveAlgorithm(size_t segment_bytes = size_t{1} << 20)
      : segment_bytes_(segment_bytes) {}

  const char* name() const override { return "naive"; }
  void AllReduce(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void Broadcast(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void ReduceScatter(Transport& t, const CallDesc& call, const void* send,
                     void* recv) const override;
  void AllGather(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void Barrier(Transport& t, const CallDesc& call) const override;

 private:
  // Reduces every rank's `count` elements into rank 0's `dst` (step 0).
  void ReduceToRoot(Transport& t, const CallDesc& call, size_t count,
                    const void* send, void* dst) const;
  // Sends rank 0's `count` elements at `src` to every rank's `dst` (step 1).
  void BroadcastFromRoot(Transport& t, const CallDesc& call, size_t count,
                         int root, const void* src, void* dst,
                         uint32_t step) const;
  size_t Segments(const Transport& t, size_t bytes) const;

  const size_t segment_bytes_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_ALGORITHMS_NAIVE_ALGORITHM_H_
