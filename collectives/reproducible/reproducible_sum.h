// A sum over ranks whose bits depend only on the summands: not on the
// number of ranks, on how the summands are spread over them or ordered, on
// the algorithm (ring, naive, mpi, nccl) or on how a backend chunks the
// buffer. What a run needs to give the same bits on 1 device and on 8.
//
// How (pre-rounding to a common grid, the simplest form of Demmel and
// Nguyen's binned sums): the buffer is cut into blocks of kReproducibleBlock
// elements.
//   1. Each rank finds, per block, the largest finite magnitude among its
//      summands; one MAX allreduce makes it the job's, m.
//   2. Every summand is rounded to a multiple of 2^q, where 2^(q+33) is
//      the power of two just above m, and held as a float64 integer count
//      of 2^q. At most 2^20 such values, each below 2^33 in magnitude, add
//      up exactly in float64, so any order of additions, on any rank and in
//      any backend, gives the same float64 sum.
//   3. One float64 SUM allreduce, then each element is rounded once, to
//      nearest even, into the output type.
// Accuracy: the result is the correctly rounded sum of the pre-rounded
// summands; each pre-rounding moves a summand by at most m * 2^-33, so
//   |result - exact sum| <= half an ulp of the result + N * m * 2^-33
// for N summands in all (a float32 ring's error grows with N * 2^-24 times
// the partial sums). Non-finite summands give the IEEE sum's answer,
// which does not depend on order (inf, -inf, or a quiet NaN).
// Blocks are short so that a large value dulls only its neighbours.
// Cost: one MAX allreduce of count / kReproducibleBlock + 1 float32 values, and
// a float64 allreduce of count values: twice the bytes of a float32 sum.
#ifndef RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_H_
#define RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/types.h"

namespace ringlet::collectives {

// Elements per block of the common grid (a constant of the format: every
// rank and every run must use the same).
inline constexpr size_t kReproducibleBlock = 256;
// Summands over the whole job, most (the grid's headroom: 2^20).
inline constexpr int64_t kMaxReproducibleSummands = int64_t{1} << 20;

// recv[i] = sum over every rank r and every s of summands_r[s][i], for
// i < count, the same bits on every rank and for any placement of the
// summands. A rank may hold any number of summands, none included (it adds
// nothing). type: kFloat32 or kBFloat16 (the summands' and recv's). recv
// may be one of the summands (in place). Buffers in host memory; the
// communicator any host backend (it makes two calls, both ordinary
// AllReduces). Collective: every rank calls with the same count and type.
// Throws std::invalid_argument for another type, a null buffer, or more
// than kMaxReproducibleSummands summands over the job (every rank throws);
// CollectiveError as the communicator does.
void ReproducibleAllReduce(Communicator& comm,
                           const std::vector<const void*>& summands, void* recv,
                           size_t count, DataType type,
                           const CallOptions& options = {});

// The usual one-buffer form: summands = {send}.
inline void ReproducibleAllReduce(Communicator& comm, const void* send,
                                  void* recv, size_t count, DataType type,
                                  const CallOptions& options = {}) {
  ReproducibleAllReduce(comm, std::vector<const void*>{send}, recv, count, type,
                        options);
}

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_H_
