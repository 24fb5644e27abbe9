// Communicator::AllReduceWire with a reduction of the caller's own (int32
// values summed exactly in int64 words, every call recorded): which
// backends run it, that every rank's contribution arrives once and in
// place, that ranges respect the grain, and that a rank calling something
// else fails every rank quickly.
#include "collectives/api/wire_reduction.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include "collectives/collectives.h"
#include "collectives/testing/host_backends.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using testing::Group;
using ::testing::HasSubstr;
using testing::RunRanks;

// out[i] = the sum of every rank's values[i], through int64 words; int32
// values travel as themselves when `values_first`. Records every range.
class Int64Sum final : public WireReduction {
 public:
  Int64Sum(const int32_t* values, int32_t* out, size_t grain, bool values_first)
      : values_(values), out_(out), grain_(grain), first_(values_first) {}

  DataType type() const override { return DataType::kInt32; }
  size_t wire_bytes() const override { return sizeof(int64_t); }
  size_t grain() const override { return grain_; }
  const void* values() const override { return first_ ? values_ : nullptr; }
  void* out() const override { return out_; }

  void Encode(size_t offset, size_t count, void* words) const override {
    Note(offset, count);
    int64_t* w = static_cast<int64_t*>(words);
    for (size_t i = 0; i < count; ++i) w[i] = values_[offset + i];
  }
  void Combine(size_t offset, size_t count, const void* message,
               bool message_is_values, void* words,
               bool finish) const override {
    Note(offset, count);
    for (size_t i = 0; i < count; ++i) {
      const int64_t theirs = message_is_values
                                 ? static_cast<const int32_t*>(message)[i]
                                 : static_cast<const int64_t*>(message)[i];
      const int64_t sum = theirs + values_[offset + i];
      if (finish) {
        out_[offset + i] = static_cast<int32_t>(sum);
      } else {
        static_cast<int64_t*>(words)[i] = sum;
      }
    }
  }
  void Finish(size_t offset, size_t count, const void* words) const override {
    Note(offset, count);
    for (size_t i = 0; i < count; ++i) {
      out_[offset + i] =
          static_cast<int32_t>(static_cast<const int64_t*>(words)[i]);
    }
  }

  // Ranges handed to the methods that did not start at a multiple of the
  // grain, or ended neither at one nor at the end (empty ones aside).
  size_t misaligned(size_t total) const {
    size_t bad = 0;
    for (const auto& [offset, count] : ranges_) {
      const size_t end = offset + count;
      bad += count > 0 &&
             (offset % grain_ != 0 || (end % grain_ != 0 && end != total));
    }
    return bad;
  }

 private:
  void Note(size_t offset, size_t count) const {
    ranges_.emplace_back(offset, count);
  }

  const int32_t* values_;
  int32_t* out_;
  const size_t grain_;
  const bool first_;
  mutable std::vector<std::pair<size_t, size_t>> ranges_;
};

int32_t Value(int rank, size_t i) {
  return static_cast<int32_t>((rank + 1) * 1000003 + i * 7919) % 100000;
}

class WireReductionTest
    : public ::testing::TestWithParam<testing::HostBackend> {};

TEST_P(WireReductionTest, EveryRanksValuesArriveOnceForAnySizeAndGrain) {
  const bool ring = GetParam().name.rfind("Ring", 0) == 0;
  for (int n = 1; n <= 8; ++n) {
    Group group = GetParam().make(n);
    for (const size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{61},
                               size_t{4099}, size_t{70001}}) {
      for (const size_t grain : {size_t{1}, size_t{256}}) {
        for (const bool values_first : {false, true}) {
          std::vector<std::vector<int32_t>> out(
              n, std::vector<int32_t>(count, -1));
          std::vector<int> ran(n, -1);
          std::vector<size_t> misaligned(n);
          const std::vector<std::string> errors =
              RunRanks(group, [&](Communicator& c) {
                const int r = c.rank();
                std::vector<int32_t> values(count);
                for (size_t i = 0; i < count; ++i) values[i] = Value(r, i);
                const Int64Sum sum(values.data(), out[r].data(), grain,
                                   values_first);
                ran[r] = c.AllReduceWire(sum, count);
                misaligned[r] = sum.misaligned(count);
              });
          const std::string where =
              GetParam().name + " n=" + std::to_string(n) + " count " +
              std::to_string(count) + " grain " + std::to_string(grain);
          ASSERT_EQ(errors, std::vector<std::string>(n, "")) << where;
          for (int r = 0; r < n; ++r) {
            // The ring runs it; the naive algorithm declines, untouched.
            ASSERT_EQ(ran[r], ring ? 1 : 0) << where;
            EXPECT_EQ(misaligned[r], 0u) << where;
            if (!ring) continue;
            size_t wrong = 0;
            for (size_t i = 0; i < count; ++i) {
              int64_t expected = 0;
              for (int q = 0; q < n; ++q) expected += Value(q, i);
              wrong += out[r][i] != static_cast<int32_t>(expected);
            }
            EXPECT_EQ(wrong, 0u) << where << " rank " << r;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HostAlgorithms, WireReductionTest,
                         ::testing::ValuesIn(testing::HostBackends()),
                         [](const auto& info) { return info.param.name; });

TEST(WireReduction, ARankCallingAPlainAllReduceFailsEveryRankQuickly) {
  Group group = CreateGroup("ring", 3, CommOptions{std::chrono::seconds(10)});
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> errors = RunRanks(group, [](Communicator& c) {
    std::vector<int32_t> values(1000, c.rank()), out(1000);
    if (c.rank() == 1) {
      c.AllReduce(values.data(), out.data(), 1000, DataType::kInt32,
                  ReduceOp::kSum);
    } else {
      const Int64Sum sum(values.data(), out.data(), 1, true);
      c.AllReduceWire(sum, 1000);
    }
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3));
  for (const std::string& e : errors) {
    EXPECT_THAT(e, HasSubstr("wire allreduce #0 int32[1000] sum"));
    EXPECT_THAT(e, HasSubstr("does not match"));
  }
}

}  // namespace
}  // namespace ringlet::collectives
