// The ring: reduce-scatter then all-gather, chunked and pipelined.
//
// Ranks form a ring r -> r+1. A buffer of S bytes is cut into `size` chunks.
//   reduce-scatter, n-1 steps: in step s rank r sends chunk r-s to the next
//     rank and combines chunk r-s-1 from the previous one into its own; after
//     the last step rank r holds the finished chunk r+1.
//   all-gather, n-1 steps: finished chunks travel once around the ring.
// Each rank sends 2(n-1) chunks: 2(n-1)/n x S bytes, whatever n is, against
// (n-1) x S at the root of the naive algorithm. Steps: 2(n-1), each
// pipelined in segments so a rank forwards segment k while segment k+1 is
// still on its way. Results are identical to the bit on every rank: each
// chunk is combined once, in ring order, and then only copied.
#ifndef RINGLET_COLLECTIVES_ALGORITHMS_RING_ALGORITHM_H_
#define RINGLET_COLLECTIVES_ALGORITHMS_RING_ALGORITHM_H_

#include <cstddef>

#include "collectives/algorithms/algorithm.h"

namespace ringlet::collectives {

class RingAlgorithm : public Algorithm {
 public:
  // Messages carry at most `segment_bytes` (fewer segments if the transport
  // limits messages per link).
  explicit RingAlgorithm(size_t segment_bytes = size_t{1} << 20)
      : segment_bytes_(segment_bytes) {}

  const char* name() const override { return "ring"; }
  void AllReduce(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void Broadcast(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void ReduceScatter(Transport& t, const CallDesc& call, const void* send,
                     void* recv) const override;
  void AllGather(Transport& t, const CallDesc& call, const void* send,
                 void* recv) const override;
  void Barrier(Transport& t, const CallDesc& call) const override;
  // The allreduce with the reduction's words as partial sums: the first
  // send carries a rank's values as they are (or its words), each step of
  // the reduce-scatter combines into words, the last one into finished
  // values, which the all-gather passes on unchanged. Words cross a link
  // only in the n-2 middle steps; with 2 ranks none does, and the bytes
  // are a plain allreduce's.
  bool RunsWire() const override { return true; }
  void AllReduceWire(Transport& t, const CallDesc& call,
                     const WireReduction& reduction) const override;

 private:
  const size_t segment_bytes_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_ALGORITHMS_RING_ALGORITHM_H_
