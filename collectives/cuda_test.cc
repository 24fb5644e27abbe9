// The GPU backends (the CUDA ring and NCCL) against exact expected values,
// on device buffers. The CUDA ring runs 1-4 ranks on ONE GPU (each rank its
// own stream), so a machine with a single GPU tests every collective; NCCL
// and the multi-GPU cases need as many GPUs and skip, saying so, where
// there are fewer. The refusals run everywhere CUDA is built.
#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/nccl.h"
#include "collectives/collectives.h"
#include "collectives/testing/rank_threads.h"
#include "gpu/device_probe.h"
#include "gpu/stream.h"

namespace ringlet::collectives {
namespace {

using testing::Buffer;
using testing::Expected;
using testing::Group;
using ::testing::HasSubstr;
using testing::RunRanks;
using testing::TestValue;
using testing::Tolerance;

int Gpus() { return gpu::CountCudaDevices(); }

TEST(CudaBackends, AGpuThatDoesNotExistIsNamed) {
  const int gpus = Gpus();
  try {
    CreateCudaRingGroup({0, gpus});
    ADD_FAILURE() << "no error asking for cuda:" << gpus;
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cuda:" + std::to_string(gpus)));
    EXPECT_THAT(e.what(),
                HasSubstr("this machine has " + std::to_string(gpus)));
  }
  EXPECT_THROW(CreateNcclGroup(gpus + 1), CollectiveError);
  EXPECT_TRUE(NcclCompiledIn());
  EXPECT_TRUE(CudaRingCompiledIn());
}

TEST(CudaBackends, NcclRefusesTwoRanksOnOneGpuNamingThem) {
  for (const auto& make : std::vector<std::function<Group()>>{
           [] {
             return CreateNcclGroup(std::vector<int>{1, 0, 1});
           },
           [] {
             return CreateGroup("nccl", {RankDevice::Gpu(1), RankDevice::Gpu(0),
                                         RankDevice::Gpu(1)});
           }}) {
    try {
      make();
      ADD_FAILURE() << "nccl accepted two ranks on cuda:1";
    } catch (const CollectiveError& e) {
      EXPECT_THAT(e.what(), HasSubstr("ranks 0 and 2"));
      EXPECT_THAT(e.what(), HasSubstr("both on cuda:1"));
      EXPECT_THAT(e.what(), HasSubstr("--backend=ring"));
    }
  }
}

TEST(CudaBackends, CreateGroupRefusesBadDeviceLists) {
  EXPECT_THROW(CreateGroup("ring", std::vector<RankDevice>{}),
               std::invalid_argument);
  EXPECT_THROW(CreateGroup("ring", {RankDevice::Host(), RankDevice::Gpu(0)}),
               std::invalid_argument);
  EXPECT_THROW(CreateGroup("ring", {RankDevice::Gpu(-1)}),
               std::invalid_argument);
  EXPECT_THROW(CreateGroup("gloo", {RankDevice::Gpu(0)}),
               std::invalid_argument);
  EXPECT_THROW(CreateCudaRingGroup({0}, "tree"), std::invalid_argument);
  // Host ranks still make a host group.
  EXPECT_EQ(CreateGroup("ring", {RankDevice::Host(), RankDevice::Host()})
                .at(1)
                ->size(),
            2);
}

// Device memory for one rank's test buffer, freed on scope exit.
class DeviceBuffer {
 public:
  DeviceBuffer(int device, size_t bytes) : bytes_(bytes) {
    cudaSetDevice(device);
    EXPECT_EQ(cudaMalloc(&data_, bytes > 0 ? bytes : 1), cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(data_); }
  void* data() { return data_; }
  void Upload(const Buffer& host) {
    EXPECT_EQ(
        cudaMemcpy(data_, host.data(), host.bytes(), cudaMemcpyHostToDevice),
        cudaSuccess);
  }
  void Download(Buffer* host) {
    EXPECT_EQ(
        cudaMemcpy(host->data(), data_, host->bytes(), cudaMemcpyDeviceToHost),
        cudaSuccess);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

constexpr size_t kCounts[] = {0, 1, 7, 1021, (size_t{16} << 20) / 4 + 3};
constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64,
                               DataType::kInt32, DataType::kBFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                             ReduceOp::kMin};

// Every collective on device buffers for a group whose rank r runs on
// gpus[r]: allreduce (in place and not) for every type and op, broadcast
// from every root, reduce-scatter and all-gather.
void CheckContractOnDevice(Group& group, const std::vector<int>& gpus) {
  const int n = static_cast<int>(gpus.size());
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    const int r = comm.rank();
    const int device = gpus[r];
    for (size_t count : kCounts) {
      for (DataType type : kTypes) {
        for (ReduceOp op : kOps) {
          for (bool in_place : {true, false}) {
            Buffer host(type, count);
            for (size_t i = 0; i < count; ++i) host.Set(i, TestValue(r, i));
            DeviceBuffer send(device, host.bytes());
            DeviceBuffer recv(device, host.bytes());
            send.Upload(host);
            void* out = in_place ? send.data() : recv.data();
            comm.AllReduce(send.data(), out, count, type, op);
            (in_place ? send : recv).Download(&host);
            size_t wrong = 0;
            for (size_t i = 0; i < count; ++i) {
              wrong += !(std::fabs(host.Get(i) - Expected(op, type, n, i)) <=
                         Tolerance(op, type, n, i));
            }
            ASSERT_EQ(wrong, 0u)
                << "rank " << r << " allreduce " << Name(type) << "[" << count
                << "] " << Name(op) << (in_place ? " in place" : "");
          }
        }
      }
      // Broadcast from every root; others' buffers start with their own
      // values, so a rank that kept its data fails.
      for (int root = 0; root < n; ++root) {
        Buffer host(DataType::kFloat32, count);
        for (size_t i = 0; i < count; ++i) host.Set(i, TestValue(r, i));
        DeviceBuffer buffer(device, host.bytes());
        buffer.Upload(host);
        comm.Broadcast(buffer.data(), buffer.data(), count, DataType::kFloat32,
                       root);
        buffer.Download(&host);
        size_t wrong = 0;
        for (size_t i = 0; i < count; ++i) {
          wrong += host.Get(i) != TestValue(root, i);
        }
        ASSERT_EQ(wrong, 0u) << "rank " << r << " broadcast from " << root
                             << " [" << count << "]";
      }
      // Reduce-scatter of n * count, then all-gather of the pieces: rank r
      // holds the sum of piece r, then everyone holds every sum.
      Buffer whole(DataType::kFloat32, count * n);
      for (size_t i = 0; i < whole.count(); ++i) whole.Set(i, TestValue(r, i));
      DeviceBuffer send(device, whole.bytes());
      DeviceBuffer piece(device, count * sizeof(float));
      send.Upload(whole);
      comm.ReduceScatter(send.data(), piece.data(), count, DataType::kFloat32,
                         ReduceOp::kSum);
      Buffer mine(DataType::kFloat32, count);
      piece.Download(&mine);
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) {
        wrong += mine.Get(i) !=
                 Expected(ReduceOp::kSum, DataType::kFloat32, n, r * count + i);
      }
      ASSERT_EQ(wrong, 0u) << "rank " << r << " reduce-scatter [" << count
                           << "]";
      comm.AllGather(piece.data(), send.data(), count, DataType::kFloat32);
      send.Download(&whole);
      for (size_t i = 0; i < whole.count(); ++i) {
        wrong +=
            whole.Get(i) != Expected(ReduceOp::kSum, DataType::kFloat32, n, i);
      }
      ASSERT_EQ(wrong, 0u) << "rank " << r << " all-gather [" << count << "]";
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

class OnOneGpu : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string reason;
    if (gpu::CountCudaDevices(&reason) == 0) {
      GTEST_SKIP() << "needs a GPU: " << reason;
    }
  }
};

// 1 to 4 ranks, all on cuda:0: the ring's and naive's every step and every
// event ordering run, with copies inside one GPU.
TEST_P(OnOneGpu, EveryCollectiveWithSeveralRanksOnOneGpu) {
  for (int n = 1; n <= 4; ++n) {
    const std::vector<int> gpus(n, 0);
    Group group = CreateCudaRingGroup(gpus, GetParam());
    CheckContractOnDevice(group, gpus);
  }
}

// One rank calls with another count: every rank gets an error naming the
// op and both sizes, by the timeout, instead of a hang.
TEST_P(OnOneGpu, MismatchedCallsFailOnEveryRankWithinTheTimeout) {
  CommOptions options;
  options.timeout = std::chrono::seconds(5);
  const std::vector<int> gpus(3, 0);
  Group group = CreateCudaRingGroup(gpus, GetParam(), options);
  const auto start = std::chrono::steady_clock::now();
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    const size_t count = comm.rank() == 1 ? 1000 : 1024;
    DeviceBuffer buffer(0, 1024 * sizeof(float));
    comm.AllReduce(buffer.data(), buffer.data(), count, DataType::kFloat32,
                   ReduceOp::kSum);
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
  for (int r = 0; r < 3; ++r) {
    EXPECT_THAT(errors[r], HasSubstr("allreduce")) << "rank " << r;
  }
  const std::string all = errors[0] + errors[1] + errors[2];
  EXPECT_THAT(all, HasSubstr("1000"));
  EXPECT_THAT(all, HasSubstr("1024"));
}

INSTANTIATE_TEST_SUITE_P(CudaRing, OnOneGpu,
                         ::testing::Values("ring", "naive"));

// One rank per GPU for every GPU there is (ring, naive and NCCL).
class OnSeveralGpus : public ::testing::TestWithParam<std::string> {};

TEST_P(OnSeveralGpus, EveryCollectiveWithOneRankPerGpu) {
  const int gpus = Gpus();
  if (gpus < 2) {
    GTEST_SKIP() << "needs 2 GPUs; the CUDA runtime reports " << gpus;
  }
  for (int n = 2; n <= gpus; ++n) {
    std::vector<RankDevice> devices;
    std::vector<int> list;
    for (int g = 0; g < n; ++g) {
      devices.push_back(RankDevice::Gpu(g));
      list.push_back(g);
    }
    Group group = CreateGroup(GetParam(), devices);
    CheckContractOnDevice(group, list);
  }
}

INSTANTIATE_TEST_SUITE_P(GpuBackends, OnSeveralGpus,
                         ::testing::Values("ring", "naive", "nccl"));

// NCCL's device-ordered allreduce on every GPU there is (one is enough):
// the data is written on the caller's stream, each call waits for the
// caller's event, the caller's stream waits for each Work's event, and the
// host waits once per Work. Three calls started back to back; Done() turns
// true once the device has run each.
TEST(NcclAsync, AllReduceOrderedByEventsGivesTheSums) {
  const int gpus = Gpus();
  if (gpus < 1) GTEST_SKIP() << "needs a GPU; the CUDA runtime reports 0";
  std::vector<int> list;
  for (int g = 0; g < gpus; ++g) list.push_back(g);
  Group group = CreateNcclGroup(list);
  const auto errors = RunRanks(group, [&](Communicator& comm) {
    const int r = comm.rank();
    ASSERT_TRUE(comm.OrdersOnDevice());
    gpu::Stream caller(list[r]);
    constexpr size_t kCount = 1000;
    constexpr int kCalls = 3;
    std::vector<std::vector<float>> host(kCalls, std::vector<float>(kCount));
    std::vector<std::unique_ptr<DeviceBuffer>> device;
    std::vector<std::unique_ptr<gpu::Event>> ready;
    std::vector<std::unique_ptr<Work>> works;
    for (int c = 0; c < kCalls; ++c) {
      for (size_t i = 0; i < kCount; ++i) host[c][i] = float(r + c * i);
      device.push_back(
          std::make_unique<DeviceBuffer>(list[r], kCount * sizeof(float)));
      ready.push_back(std::make_unique<gpu::Event>(list[r]));
    }
    for (int c = 0; c < kCalls; ++c) {
      cudaMemcpyAsync(device[c]->data(), host[c].data(), kCount * sizeof(float),
                      cudaMemcpyHostToDevice, caller.get());
      ready[c]->Record(caller.get());
      works.push_back(comm.AllReduceAsync(device[c]->data(), device[c]->data(),
                                          kCount, DataType::kFloat32,
                                          ReduceOp::kSum, ready[c].get()));
      ASSERT_NE(works[c]->event(), nullptr);
    }
    for (int c = 0; c < kCalls; ++c) {
      works[c]->Wait();
      EXPECT_TRUE(works[c]->Done());
      EXPECT_EQ(works[c]->error(), nullptr);
      gpu::StreamWaitsFor(caller.get(), *works[c]->event());
      std::vector<float> got(kCount);
      cudaMemcpyAsync(got.data(), device[c]->data(), kCount * sizeof(float),
                      cudaMemcpyDeviceToHost, caller.get());
      caller.Synchronize();
      const int n = comm.size();
      for (size_t i = 0; i < kCount; i += 97) {
        // Sum over ranks q of q + c * i.
        EXPECT_EQ(got[i], float(n * (n - 1) / 2 + n * c * i))
            << "call " << c << ", element " << i;
      }
    }
  });
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
  }
}

// A one-replica trainer on one GPU uses a one-rank NCCL group: when a step
// failed (out of memory), the replica aborted its communicator twice and
// the destructor a third time, each an ncclCommAbort that freed it again
// (host heap corruption). Each abort after the first is a no-op now, the
// destructor leaves an aborted communicator alone, and calls after it
// throw the first reason.
TEST(NcclAbort, TwiceFromTwoThreadsThenDestroyIsSafe) {
  if (Gpus() < 1) GTEST_SKIP() << "needs a GPU; the CUDA runtime reports 0";
  for (int round = 0; round < 20; ++round) {
    Group group = CreateNcclGroup(std::vector<int>{0});
    DeviceBuffer buffer(0, 64 * sizeof(float));
    group[0]->AllReduce(buffer.data(), buffer.data(), 64, DataType::kFloat32,
                        ReduceOp::kSum);
    std::thread other([&] { group[0]->Abort("from the reducer"); });
    group[0]->Abort("from the compute thread");
    other.join();
    group[0]->Abort("once more");
    try {
      group[0]->AllReduce(buffer.data(), buffer.data(), 64, DataType::kFloat32,
                          ReduceOp::kSum);
      ADD_FAILURE() << "no error after Abort";
    } catch (const CollectiveError& e) {
      EXPECT_THAT(e.what(), HasSubstr("was aborted"));
      EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("once more")));
    }
  }
}

}  // namespace
}  // namespace ringlet::collectives
