// Test helpers: run one function per rank, each on its own thread, as the
// ranks of an in-process group are used; and rank-dependent test data.
#ifndef RINGLET_COLLECTIVES_TESTING_RANK_THREADS_H_
#define RINGLET_COLLECTIVES_TESTING_RANK_THREADS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"

namespace ringlet::collectives::testing {

using Group = std::vector<std::unique_ptr<Communicator>>;

// Runs body(comm) for every communicator of `group` on its own thread and
// joins them. Exceptions are collected; the message of each is returned by
// rank ("" where none was thrown).
std::vector<std::string> RunRanks(
    Group& group, const std::function<void(Communicator&)>& body);

// A typed buffer of `count` elements, read and written as doubles.
class Buffer {
 public:
  Buffer(DataType type, size_t count);
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  size_t count() const { return count_; }
  size_t bytes() const { return bytes_.size(); }
  double Get(size_t i) const;
  void Set(size_t i, double value);

 private:
  DataType type_;
  size_t count_;
  std::vector<unsigned char> bytes_;
};

// An integer in [-100, 150] that depends on rank and index, so a misplaced
// chunk or element is caught; exact in every data type, and so are sums of
// up to 8 of them except in bfloat16 (8 significant bits; see Tolerance).
double TestValue(int rank, size_t index);

// The reduction of TestValue over `size` ranks at `index`, as a
// correctly-combined reference (avg: the sum divided by size, integer
// division for int32).
double Expected(ReduceOp op, DataType type, int size, size_t index,
                size_t index_offset = 0);

// How far a backend's result may be from Expected: 0 but for bfloat16 sums
// and averages, where each of the size - 1 combining steps rounds once
// (relative error at most 2^-8 of a partial sum, itself at most the sum of
// the magnitudes), and an average's division once more.
double Tolerance(ReduceOp op, DataType type, int size, size_t index,
                 size_t index_offset = 0);

}  // namespace ringlet::collectives::testing

#endif  // RINGLET_COLLECTIVES_TESTING_RANK_THREADS_H_
