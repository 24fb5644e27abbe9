#include "collectives/reproducible/reproducible_sum.h"

#include <algorithm>

#include "collectives/reproducible/call_checks.h"
#include "collectives/reproducible/grid_sum.h"

namespace ringlet::collectives {
namespace {

static_assert(kReproducibleBlock == grid::kBlock);
static_assert(kMaxReproducibleSummands == int64_t{1} << grid::kHeadroomBits);

// Bytes per piece of a call whose blocks' maxima are found apart: the
// maxima pass and the sum then read the piece while it is in cache.
constexpr size_t kPieceBytes = size_t{4} << 20;
static_assert(kPieceBytes % (2 * kReproducibleBlock) == 0);

const void* At(const void* base, size_t i, DataType type) {
  return static_cast<const char*>(base) + i * SizeOf(type);
}
void* At(void* base, size_t i, DataType type) {
  return static_cast<char*>(base) + i * SizeOf(type);
}

// Elements [0, count) of the summands into recv (a piece of the call), on
// grids from their blocks' maxima over the job.
void SumPiece(Communicator& comm, const std::vector<const void*>& summands,
              void* recv, size_t count, DataType type, bool values_first,
              const CallOptions& options) {
  const size_t blocks = (count + kReproducibleBlock - 1) / kReproducibleBlock;
  // Kept per thread between calls: fresh buffers of these sizes would cost
  // their page faults on every call.
  thread_local std::vector<int32_t> maxima;
  thread_local std::vector<grid::Grid> grids;
  maxima.assign(blocks, 0);
  for (const void* summand : summands) {
    grid::AddBlockMaxima(type, summand, count, maxima.data());
  }
  // Non-negative int32 bits order as the magnitudes do.
  comm.AllReduce(maxima.data(), maxima.data(), blocks, DataType::kInt32,
                 ReduceOp::kMax, options);
  grids.resize(blocks);
  for (size_t b = 0; b < blocks; ++b) grids[b] = grid::GridFor(maxima[b]);
  const grid::GridSum sum(type, summands, recv, grids.data(), values_first);
  if (comm.AllReduceWire(sum, count, options)) return;
  // Backends without it (naive, mpi, nccl...): the words made whole, one
  // float64 allreduce, the same bits.
  thread_local std::vector<double> words;
  if (words.size() < count) {
    words = std::vector<double>();
    words.resize(count);
  }
  sum.Encode(0, count, words.data());
  comm.AllReduce(words.data(), words.data(), count, DataType::kFloat64,
                 ReduceOp::kSum, options);
  sum.Finish(0, count, words.data());
}

}  // namespace

void ReproducibleAllReduce(Communicator& comm,
                           const std::vector<const void*>& summands, void* recv,
                           size_t count, DataType type,
                           const CallOptions& options) {
  CheckReproducibleCall(summands, recv, count, type);
  if (count == 0) return;
  // The job's most and least summands on one rank.
  int32_t held[2] = {static_cast<int32_t>(summands.size()),
                     -static_cast<int32_t>(summands.size())};
  comm.AllReduce(held, held, 2, DataType::kInt32, ReduceOp::kMax, options);
  CheckSummandsFit(held[0], comm.size());
  // One summand on every rank: first sends carry it as it is. With two
  // ranks the first combination then sees every summand and finds the
  // grids itself: no pass over the buffer before the ring.
  const bool values_first = held[0] == 1 && held[1] == -1;
  if (values_first && comm.size() == 2) {
    const grid::GridSum sum(type, summands, recv, nullptr, true);
    if (comm.AllReduceWire(sum, count, options)) return;
  }
  const size_t piece = kPieceBytes / SizeOf(type);
  std::vector<const void*> at(summands.size());
  for (size_t begin = 0; begin < count; begin += piece) {
    for (size_t s = 0; s < summands.size(); ++s) {
      at[s] = At(summands[s], begin, type);
    }
    SumPiece(comm, at, At(recv, begin, type), std::min(piece, count - begin),
             type, values_first, options);
  }
}

}  // namespace ringlet::collectives
