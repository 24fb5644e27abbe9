// A sum over ranks whose bits depend only on the summands: not on the
// number of ranks, on how the summands are spread over them or ordered, on
// the algorithm (ring, naive, mpi, nccl) or on how a backend chunks the
// buffer. What a run needs to give the same bits on 1 device and on 8.
//
// How (pre-rounding to a common grid, the simplest form of Demmel and
// Nguyen's binned sums; the arithmetic in grid_arithmetic.h): the buffer is
// cut into blocks of kReproducibleBlock elements.
//   1. Each block's largest finite magnitude over every summand of the
//      job, m.
//   2. Every summand is rounded to a multiple of 2^q, where 2^(q+33) is
//      the power of two just above m, and held as a float64 integer count
//      of 2^q (a word). At most 2^20 such values, each below 2^33 in
//      magnitude, add up exactly in float64, so any order of additions, on
//      any rank and in any backend, gives the same float64 sum.
//   3. The words are summed over the ranks, then each element is rounded
//      once, to nearest even, into the output type.
// Accuracy: the result is the correctly rounded sum of the pre-rounded
// summands; each pre-rounding moves a summand by at most m * 2^-33, so
//   |result - exact sum| <= half an ulp of the result + N * m * 2^-33
// for N summands in all (a float32 ring's error grows with N * 2^-24 times
// the partial sums). Non-finite summands give the IEEE sum's answer,
// which does not depend on order (inf, -inf, or a quiet NaN).
// Blocks are short so that a large value dulls only its neighbours.
// Cost, where the backend runs the ring over host memory
// (Communicator::AllReduceWire): an 8-byte MAX allreduce of the summand
// counts; then, with two ranks of one summand each, a ring with a plain
// allreduce's bytes that finds m itself; otherwise, per 4 MiB piece, a
// pass for the blocks' maxima, an int32 MAX allreduce of count / 256 values
// and a ring whose n-2 middle steps carry words (8 bytes per element).
// Elsewhere (naive, mpi, nccl on host buffers): the maxima's allreduce and
// one float64 allreduce of count words, the same bits.
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
// may be one of the summands (in place). Buffers in host memory (GPU
// buffers: reproducible_sum_device.h); the communicator any host backend.
// Collective: every rank calls with the same count and type.
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
