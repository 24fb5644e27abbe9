// The contract every host backend keeps, run over each of them: every
// collective and reduction, every data type, 1 to 8 ranks, counts from 0 to
// past 16 MiB, in place and out of place, with data that depends on rank and
// index so a misplaced chunk fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "collectives/testing/host_backends.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using testing::Buffer;
using testing::Expected;
using testing::Group;
using testing::RunRanks;
using testing::TestValue;
using testing::Tolerance;

using Backend = testing::HostBackend;
using testing::HostBackends;

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64,
                               DataType::kInt32, DataType::kBFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                             ReduceOp::kMin};

// 0, 1, fewer than the ranks, primes, and a few thousand.
std::vector<size_t> Counts(int n) {
  std::vector<size_t> counts = {0, 1, 2, 7, 13, 61, 1021, 4099};
  if (n > 2) counts.push_back(n - 1);
  return counts;
}

class ContractTest : public ::testing::TestWithParam<Backend> {};

std::string Where(int rank, const char* what, size_t count, DataType type,
                  ReduceOp op, bool in_place) {
  return "rank " + std::to_string(rank) + " " + what + " " + Name(type) + "[" +
         std::to_string(count) + "] " + Name(op) +
         (in_place ? " in place" : " out of place");
}

TEST_P(ContractTest, AllReduceEveryOpTypeCountAndRankCount) {
  for (int n = 1; n <= 8; ++n) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : Counts(n)) {
        for (DataType type : kTypes) {
          for (ReduceOp op : kOps) {
            for (bool in_place : {false, true}) {
              Buffer send(type, count), recv(type, count);
              for (size_t i = 0; i < count; ++i) send.Set(i, TestValue(r, i));
              Buffer& out = in_place ? send : recv;
              comm.AllReduce(send.data(), out.data(), count, type, op);
              size_t wrong = 0;
              for (size_t i = 0; i < count; ++i) {
                wrong += !(std::fabs(out.Get(i) - Expected(op, type, n, i)) <=
                           Tolerance(op, type, n, i));
              }
              EXPECT_EQ(wrong, 0u)
                  << Where(r, "allreduce", count, type, op, in_place) << " of "
                  << n << " ranks";
            }
          }
        }
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

TEST_P(ContractTest, ReduceScatterGivesEachRankItsBlock) {
  for (int n = 1; n <= 8; ++n) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : Counts(n)) {
        for (DataType type : kTypes) {
          for (ReduceOp op : kOps) {
            Buffer send(type, count * n), recv(type, count);
            for (size_t i = 0; i < count * n; ++i) send.Set(i, TestValue(r, i));
            comm.ReduceScatter(send.data(), recv.data(), count, type, op);
            size_t wrong = 0;
            for (size_t i = 0; i < count; ++i) {
              wrong += !(std::fabs(recv.Get(i) -
                                   Expected(op, type, n, i, r * count)) <=
                         Tolerance(op, type, n, i, r * count));
            }
            EXPECT_EQ(wrong, 0u)
                << Where(r, "reducescatter", count, type, op, false);
          }
        }
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

TEST_P(ContractTest, AllGatherPlacesEveryRanksBlock) {
  for (int n = 1; n <= 8; ++n) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : Counts(n)) {
        for (DataType type : kTypes) {
          for (bool in_place : {false, true}) {
            Buffer send(type, count), recv(type, count * n);
            for (size_t i = 0; i < count; ++i) {
              send.Set(i, TestValue(r, i));
              if (in_place) recv.Set(r * count + i, TestValue(r, i));
            }
            const void* src = in_place ? static_cast<char*>(recv.data()) +
                                             r * count * SizeOf(type)
                                       : send.data();
            comm.AllGather(src, recv.data(), count, type);
            size_t wrong = 0;
            for (int q = 0; q < n; ++q) {
              for (size_t i = 0; i < count; ++i) {
                wrong += recv.Get(q * count + i) != TestValue(q, i);
              }
            }
            EXPECT_EQ(wrong, 0u)
                << Where(r, "allgather", count, type, ReduceOp::kSum, in_place);
          }
        }
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

TEST_P(ContractTest, BroadcastFromEveryRoot) {
  for (int n = 1; n <= 8; ++n) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      for (size_t count : Counts(n)) {
        for (DataType type : kTypes) {
          for (int root = 0; root < n; ++root) {
            for (bool in_place : {false, true}) {
              Buffer send(type, count), recv(type, count);
              for (size_t i = 0; i < count; ++i) {
                send.Set(i, TestValue(r, i));
                recv.Set(i, -1);
              }
              Buffer& out = in_place ? send : recv;
              comm.Broadcast(send.data(), out.data(), count, type, root);
              size_t wrong = 0;
              for (size_t i = 0; i < count; ++i) {
                wrong += out.Get(i) != TestValue(root, i);
              }
              EXPECT_EQ(wrong, 0u) << Where(r, "broadcast", count, type,
                                            ReduceOp::kSum, in_place)
                                   << " root " << root;
            }
          }
        }
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

TEST_P(ContractTest, BarrierHoldsEveryRankUntilAllArrive) {
  for (int n : {1, 2, 3, 5, 8}) {
    Group group = GetParam().make(n);
    std::atomic<int> arrived{0};
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      for (int round = 1; round <= 3; ++round) {
        // The last rank arrives late; nobody may leave before it.
        if (comm.rank() == n - 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        arrived.fetch_add(1);
        comm.Barrier();
        EXPECT_GE(arrived.load(), round * n) << "rank " << comm.rank();
        comm.Barrier();  // Nobody starts the next round before all checked.
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

// Beyond 16 MiB per rank, where streaming stores and many segments apply.
TEST_P(ContractTest, LargeAllReduceInAndOutOfPlace) {
  const size_t count = (size_t{16} << 20) / 4 + 3;  // 16 MiB and 12 bytes.
  for (int n : {2, 3, 4, 8}) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      for (bool in_place : {false, true}) {
        Buffer send(DataType::kFloat32, count), recv(DataType::kFloat32, count);
        for (size_t i = 0; i < count; ++i) send.Set(i, TestValue(r, i));
        Buffer& out = in_place ? send : recv;
        comm.AllReduce(send.data(), out.data(), count, DataType::kFloat32,
                       ReduceOp::kSum);
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
          wrong +=
              out.Get(i) != Expected(ReduceOp::kSum, DataType::kFloat32, n, i);
        }
        EXPECT_EQ(wrong, 0u) << Where(r, "allreduce", count, DataType::kFloat32,
                                      ReduceOp::kSum, in_place);
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

// Replicas must stay in sync: with values whose sums round, every rank must
// still get the same bits, and the same inputs the same bits every time.
TEST_P(ContractTest, ResultsAreBitwiseIdenticalAcrossRanksAndRuns) {
  for (int n : {2, 3, 5, 8}) {
    for (DataType type : {DataType::kFloat32, DataType::kFloat64}) {
      const size_t count = 10007;
      std::vector<std::vector<unsigned char>> first(n), second(n);
      for (auto* results : {&first, &second}) {
        Group group = GetParam().make(n);
        const auto errors = RunRanks(group, [&](Communicator& comm) {
          std::mt19937 rng(1234 + comm.rank());
          std::uniform_real_distribution<double> dist(-1.0, 1.0);
          Buffer buf(type, count);
          for (size_t i = 0; i < count; ++i) buf.Set(i, dist(rng) * 1e3);
          comm.AllReduce(buf.data(), buf.data(), count, type, ReduceOp::kAvg);
          const auto* p = static_cast<const unsigned char*>(buf.data());
          (*results)[comm.rank()].assign(p, p + buf.bytes());
        });
        for (const std::string& e : errors) ASSERT_EQ(e, "");
      }
      for (int r = 1; r < n; ++r) {
        EXPECT_TRUE(first[r] == first[0])
            << "rank " << r << " differs from rank 0, " << n << " ranks, "
            << Name(type);
      }
      EXPECT_TRUE(first[0] == second[0]) << "run-to-run difference";
    }
  }
}

// bfloat16 sums of gradient-like values (normal, mixed signs) against the
// float32 sum of the same bfloat16 inputs: each of the n - 1 combining
// steps rounds once, so the error stays within about (n - 1) * 2^-8 of the
// sum of magnitudes; and it is not zero (the sums really are rounded).
TEST_P(ContractTest, Bf16SumsStayWithinTheRoundingBound) {
  constexpr size_t kCount = 4099;
  for (int n = 2; n <= 8; ++n) {
    Group group = GetParam().make(n);
    std::vector<Buffer> data;
    for (int r = 0; r < n; ++r) {
      data.emplace_back(DataType::kBFloat16, kCount);
      std::mt19937 rng(100 + r);
      std::normal_distribution<float> normal(0.0f, 1e-3f);
      for (size_t i = 0; i < kCount; ++i) data[r].Set(i, normal(rng));
    }
    std::vector<double> fp32_sum(kCount, 0), magnitudes(kCount, 0);
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < kCount; ++i) {
        fp32_sum[i] = static_cast<float>(fp32_sum[i] + data[r].Get(i));
        magnitudes[i] += std::fabs(data[r].Get(i));
      }
    }
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      Buffer& mine = data[comm.rank()];
      comm.AllReduce(mine.data(), mine.data(), kCount, DataType::kBFloat16,
                     ReduceOp::kSum);
    });
    for (const std::string& e : errors) ASSERT_EQ(e, "") << n << " ranks";
    const double unit = std::ldexp(1.0, -8);
    double worst = 0, total_error = 0;
    for (size_t i = 0; i < kCount; ++i) {
      // float32's own rounding of the reference is far below bfloat16's.
      const double error = std::fabs(data[0].Get(i) - fp32_sum[i]);
      const double relative = error / magnitudes[i];
      // Later steps round sums already off by earlier roundings (the
      // n * unit), and the float32 reference is itself rounded (2^-24).
      EXPECT_LE(relative,
                (n - 1) * unit * (1 + n * unit) + n * std::ldexp(1.0, -24))
          << n << " ranks, element " << i << ": " << data[0].Get(i)
          << " against " << fp32_sum[i];
      worst = std::max(worst, relative);
      total_error += error;
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(data[r].Get(i), data[0].Get(i)) << "rank " << r;
      }
    }
    EXPECT_GT(total_error, 0) << n << " ranks: no element was rounded";
    std::printf(
        "%s bfloat16 sum of %d ranks: largest error %.3g of the "
        "magnitudes' sum (bound %.3g)\n",
        GetParam().name.c_str(), n, worst, (n - 1) * unit);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ContractTest,
                         ::testing::ValuesIn(HostBackends()),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param.name;
                         });

// Calls started back to back and waited for at the end, as the bucket
// reducer does: each gives its reduction; a finished Work stays finished.
TEST_P(ContractTest, AllReduceAsyncGivesEachResultWhenWaited) {
  for (int n = 1; n <= 4; ++n) {
    Group group = GetParam().make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      const size_t counts[] = {7, 4099, 0};
      const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kSum};
      std::vector<Buffer> data;
      std::vector<std::unique_ptr<Work>> works;
      for (int c = 0; c < 3; ++c) {
        data.emplace_back(DataType::kFloat32, counts[c]);
        for (size_t i = 0; i < counts[c]; ++i) data[c].Set(i, TestValue(r, i));
        works.push_back(comm.AllReduceAsync(data[c].data(), data[c].data(),
                                            counts[c], DataType::kFloat32,
                                            ops[c]));
      }
      for (int c = 0; c < 3; ++c) {
        works[c]->Wait();
        works[c]->Wait();
        EXPECT_TRUE(works[c]->Done());
        EXPECT_EQ(works[c]->error(), nullptr);
        EXPECT_EQ(works[c]->event(), nullptr);
        size_t wrong = 0;
        for (size_t i = 0; i < counts[c]; ++i) {
          wrong += data[c].Get(i) != Expected(ops[c], DataType::kFloat32, n, i);
        }
        EXPECT_EQ(wrong, 0u) << "rank " << r << " call " << c;
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " ranks";
  }
}

// A call that fails (rank 1 asks for one element more) is a Work that is
// done, holds the CollectiveError and rethrows it from every Wait, on every
// rank.
TEST_P(ContractTest, AFailedAsyncCallIsRethrownByWait) {
  Group group = GetParam().make(2);
  CallOptions options;
  options.timeout = std::chrono::seconds(5);
  std::atomic<int> rethrown{0};
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    const size_t count = comm.rank() == 1 ? 8 : 7;
    std::vector<float> data(count, 1.0f);
    std::unique_ptr<Work> work =
        comm.AllReduceAsync(data.data(), data.data(), count, DataType::kFloat32,
                            ReduceOp::kSum, nullptr, options);
    for (int attempt = 0; attempt < 2; ++attempt) {
      try {
        work->Wait();
      } catch (const CollectiveError&) {
        ++rethrown;
      }
    }
    EXPECT_TRUE(work->Done());
    EXPECT_NE(work->error(), nullptr);
  });
  for (const std::string& e : errors) EXPECT_EQ(e, "");
  EXPECT_EQ(rethrown.load(), 4);
}

// Ring and naive queue asynchronous calls on a thread of the
// communicator's own: the call returns before its peer has even started
// (a synchronous call would wait for it, and time out here), the `before`
// hook runs first, on that thread, and a blocking call made after it runs
// after it.
TEST(HostBackends, AsyncCallsReturnAtOnceAndRunInOrder) {
  for (const Backend& backend : HostBackends()) {
    Group group = backend.make(2);
    CallOptions options;
    options.timeout = std::chrono::seconds(5);
    std::atomic<bool> rank0_returned{false}, before_ran{false};
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      std::vector<float> data(1000, static_cast<float>(comm.rank() + 1));
      std::vector<float> root(4, comm.rank() == 0 ? 7.0f : 0.0f);
      if (comm.rank() == 1) {
        // Starts only once rank 0's call has returned.
        while (!rank0_returned.load()) std::this_thread::yield();
      }
      CallOptions call = options;
      call.before = [&] { before_ran = true; };
      std::unique_ptr<Work> sum = comm.AllReduceAsync(
          data.data(), data.data(), data.size(), DataType::kFloat32,
          ReduceOp::kSum, nullptr, call);
      if (comm.rank() == 0) rank0_returned = true;
      std::unique_ptr<Work> broadcast =
          comm.BroadcastAsync(root.data(), root.data(), root.size(),
                              DataType::kFloat32, 0, options);
      comm.Barrier(options);  // Blocking: after both.
      EXPECT_TRUE(sum->Done());
      EXPECT_TRUE(broadcast->Done());
      sum->Wait();
      broadcast->Wait();
      EXPECT_EQ(data[999], 3.0f);
      EXPECT_EQ(root[3], 7.0f);
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << backend.name;
    EXPECT_TRUE(before_ran.load()) << backend.name;
  }
}

// Host backends read buffers at once: a device event to wait for is
// refused, saying what to do instead, and nothing is sent.
TEST(HostBackends, RefuseAnEventToWaitFor) {
  for (const Backend& backend : HostBackends()) {
    Group group = backend.make(1);
    Communicator& comm = *group[0];
    EXPECT_FALSE(comm.OrdersOnDevice()) << backend.name;
    float value = 1;
    // Never dereferenced: the refusal comes first.
    const auto* event = reinterpret_cast<const gpu::Event*>(&value);
    try {
      comm.AllReduceAsync(&value, &value, 1, DataType::kFloat32, ReduceOp::kSum,
                          event);
      ADD_FAILURE() << backend.name << ": expected a CollectiveError";
    } catch (const CollectiveError& e) {
      EXPECT_NE(std::string(e.what()).find("without one"), std::string::npos)
          << e.what();
    }
    EXPECT_EQ(comm.stats().messages_sent, 0u) << backend.name;
  }
}

}  // namespace
}  // namespace ringlet::collectives
