#include "collectives/testing/process_contract.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/host_group_factory.h"
#include "collectives/reproducible/reproducible_sum.h"

namespace ringlet::collectives::testing {

std::string ProcessSetupName(
    const ::testing::TestParamInfo<ProcessSetup>& info) {
  return info.param.name;
}

void ProcessContractTest::ExpectNoErrors(
    const std::vector<std::string>& errors) {
  for (size_t i = 0; i < errors.size(); ++i) {
    EXPECT_EQ(errors[i], "") << "rank " << i << " here";
  }
}

namespace {

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64,
                               DataType::kInt32, DataType::kBFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                             ReduceOp::kMin};
// Below, at and above one segment; primes so chunks are uneven; 1 MiB of
// float32 takes the pipelined paths with many messages.
constexpr size_t kCounts[] = {0, 1, 7, 61, 4099, 262147};

TEST_P(ProcessContractTest, AllReduceEveryOpTypeAndCount) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    for (size_t count : kCounts) {
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
                << "rank " << r << " allreduce " << Name(type) << "[" << count
                << "] " << Name(op) << (in_place ? " in place" : "");
          }
        }
      }
    }
  }));
}

// Three allreduces started back to back, then waited for in order: each
// gives its reduction (mpi: MPI_Iallreduce in flight meanwhile).
TEST_P(ProcessContractTest, AllReduceAsyncStartedBackToBackGivesEachResult) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    const size_t counts[] = {1, 4099, 262147};
    const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kSum};
    std::vector<Buffer> data;
    std::vector<std::unique_ptr<Work>> works;
    for (int c = 0; c < 3; ++c) {
      data.emplace_back(DataType::kFloat32, counts[c]);
      for (size_t i = 0; i < counts[c]; ++i) data[c].Set(i, TestValue(r, i));
    }
    for (int c = 0; c < 3; ++c) {
      works.push_back(comm.AllReduceAsync(data[c].data(), data[c].data(),
                                          counts[c], DataType::kFloat32,
                                          ops[c]));
    }
    for (int c = 0; c < 3; ++c) {
      works[c]->Wait();
      EXPECT_TRUE(works[c]->Done());
      EXPECT_EQ(works[c]->error(), nullptr);
      size_t wrong = 0;
      for (size_t i = 0; i < counts[c]; ++i) {
        wrong += data[c].Get(i) != Expected(ops[c], DataType::kFloat32, n, i);
      }
      EXPECT_EQ(wrong, 0u) << "rank " << r << " call " << c;
    }
  }));
}

// Every collective's asynchronous form, started back to back and waited
// for in order, gives what its blocking form gives (mpi: MPI_Ibcast,
// MPI_Ireduce_scatter_block and MPI_Iallgather in flight meanwhile; ring
// and naive: queued on the communicator's thread).
TEST_P(ProcessContractTest, EveryCollectiveStartedBackToBackGivesItsResult) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    constexpr size_t kBlock = 4099;
    const int root = n - 1;
    Buffer broadcast(DataType::kFloat32, kBlock);
    for (size_t i = 0; i < kBlock; ++i) {
      broadcast.Set(i, r == root ? TestValue(root, i) : -1);
    }
    Buffer scatter_in(DataType::kFloat32, kBlock * n);
    for (size_t i = 0; i < kBlock * n; ++i) scatter_in.Set(i, TestValue(r, i));
    Buffer scatter_out(DataType::kFloat32, kBlock);
    Buffer gather_in(DataType::kFloat32, kBlock);
    for (size_t i = 0; i < kBlock; ++i) gather_in.Set(i, TestValue(r, i));
    Buffer gather_out(DataType::kFloat32, kBlock * n);
    std::vector<std::unique_ptr<Work>> works;
    works.push_back(comm.BroadcastAsync(broadcast.data(), broadcast.data(),
                                        kBlock, DataType::kFloat32, root));
    works.push_back(
        comm.ReduceScatterAsync(scatter_in.data(), scatter_out.data(), kBlock,
                                DataType::kFloat32, ReduceOp::kSum));
    works.push_back(comm.AllGatherAsync(gather_in.data(), gather_out.data(),
                                        kBlock, DataType::kFloat32));
    works.push_back(comm.BarrierAsync());
    for (auto& work : works) {
      work->Wait();
      EXPECT_TRUE(work->Done());
      EXPECT_EQ(work->error(), nullptr);
    }
    size_t wrong = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      wrong += broadcast.Get(i) != TestValue(root, i);
      double sum = 0;
      for (int p = 0; p < n; ++p) sum += TestValue(p, r * kBlock + i);
      wrong += scatter_out.Get(i) != sum;
      for (int p = 0; p < n; ++p) {
        wrong += gather_out.Get(p * kBlock + i) != TestValue(p, i);
      }
    }
    EXPECT_EQ(wrong, 0u) << "rank " << r;
  }));
}

// The reproducible sum across processes: the job's ranks share the
// summands (global rank g holds those with s % size == g), and every rank
// gets the bits one rank holding them all gets (a group of one, here).
// One summand per rank sends values first (two ranks: grids found in the
// ring, no maxima pass); twelve send words.
TEST_P(ProcessContractTest, ReproducibleSumGivesTheBitsOfOneRankHoldingAll) {
  constexpr size_t kCount = 4099;
  for (const int summand_count : {job_->size(), 12}) {
    std::vector<std::vector<float>> summands(summand_count,
                                             std::vector<float>(kCount));
    std::vector<const void*> all;
    for (int s = 0; s < summand_count; ++s) {
      for (size_t i = 0; i < kCount; ++i) {
        summands[s][i] =
            std::ldexp(static_cast<float>(TestValue(s, i)) + 0.1f * s,
                       static_cast<int>((s * 7 + i) % 41) - 20);
      }
      all.push_back(summands[s].data());
    }
    Group one = CreateHostGroup(1, {std::make_shared<RingAlgorithm>()}, {});
    std::vector<float> expected(kCount);
    ReproducibleAllReduce(*one[0], all, expected.data(), kCount,
                          DataType::kFloat32);
    ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
      std::vector<const void*> mine;
      for (int s = comm.rank(); s < summand_count; s += comm.size()) {
        mine.push_back(summands[s].data());
      }
      std::vector<float> got(kCount);
      ReproducibleAllReduce(comm, mine, got.data(), kCount, DataType::kFloat32);
      EXPECT_EQ(
          std::memcmp(got.data(), expected.data(), kCount * sizeof(float)), 0)
          << "rank " << comm.rank() << " of " << comm.size() << ", "
          << summand_count << " summands";
    }));
  }
}

TEST_P(ProcessContractTest, BroadcastFromEveryRoot) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    for (DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
      for (int root = 0; root < n; ++root) {
        for (size_t count : kCounts) {
          Buffer send(type, count), recv(type, count);
          for (size_t i = 0; i < count; ++i) send.Set(i, TestValue(r, i));
          comm.Broadcast(send.data(), recv.data(), count, type, root);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            wrong += recv.Get(i) != TestValue(root, i);
          }
          EXPECT_EQ(wrong, 0u) << "rank " << r << " broadcast " << Name(type)
                               << "[" << count << "] from root " << root;
        }
      }
    }
  }));
}

// float64 exactly; bfloat16 through our MPI_Ops, within the rounding bound.
TEST_P(ProcessContractTest, ReduceScatterGivesEachRankItsBlock) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    for (DataType type : {DataType::kFloat64, DataType::kBFloat16}) {
      for (size_t count : kCounts) {
        for (ReduceOp op : kOps) {
          Buffer send(type, count * n);
          Buffer recv(type, count);
          for (size_t i = 0; i < count * n; ++i) send.Set(i, TestValue(r, i));
          comm.ReduceScatter(send.data(), recv.data(), count, type, op);
          size_t wrong = 0;
          for (size_t i = 0; i < count; ++i) {
            wrong += !(
                std::fabs(recv.Get(i) - Expected(op, type, n, i, r * count)) <=
                Tolerance(op, type, n, i, r * count));
          }
          EXPECT_EQ(wrong, 0u)
              << "rank " << r << " reduce-scatter " << Name(type) << "["
              << count << "] " << Name(op);
        }
      }
    }
  }));
}

TEST_P(ProcessContractTest, AllGatherPutsEveryBlockInPlace) {
  const int n = job_->size();
  ExpectNoErrors(RunRanks(job_->group(), [&](Communicator& comm) {
    const int r = comm.rank();
    for (DataType type : {DataType::kInt32, DataType::kBFloat16}) {
      for (size_t count : kCounts) {
        Buffer send(type, count), recv(type, count * n);
        for (size_t i = 0; i < count; ++i) send.Set(i, TestValue(r, i));
        comm.AllGather(send.data(), recv.data(), count, type);
        size_t wrong = 0;
        for (int from = 0; from < n; ++from) {
          for (size_t i = 0; i < count; ++i) {
            wrong += recv.Get(from * count + i) != TestValue(from, i);
          }
        }
        EXPECT_EQ(wrong, 0u) << "rank " << r << " allgather " << Name(type)
                             << "[" << count << "]";
        comm.Barrier();
      }
    }
  }));
}

// The last rank of the job asks for one element more than the others: every
// rank must fail within the timeout, and some rank must say which calls
// differed, naming the sizes.
TEST_P(ProcessContractTest, MismatchedCallFailsEveryRankNamingTheCalls) {
  const int last = job_->size() - 1;
  CallOptions options;
  options.timeout = std::chrono::seconds(5);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<std::string> errors =
      RunRanks(job_->group(), [&](Communicator& comm) {
        const size_t count = comm.rank() == last ? 8 : 7;
        Buffer data(DataType::kFloat32, count);
        comm.AllReduce(data.data(), data.data(), count, DataType::kFloat32,
                       ReduceOp::kSum, options);
      });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_LT(seconds, 30.0);
  double naming_both = 0;
  for (size_t i = 0; i < errors.size(); ++i) {
    EXPECT_NE(errors[i], "") << "local rank " << i << " did not fail";
    const bool names_sizes =
        errors[i].find("float32[7]") != std::string::npos &&
        errors[i].find("float32[8]") != std::string::npos;
    naming_both += names_sizes ? 1 : 0;
  }
  naming_both = job_->SumOverJob(naming_both);
  EXPECT_GE(naming_both, 1)
      << "no rank named both calls; errors here: " << errors[0];
}

}  // namespace
}  // namespace ringlet::collectives::testing
