// The GPU backends (the CUDA ring and NCCL) against exact expected values,
// on device buffers. These tests need at least two GPUs and skip, saying
// so, where there are fewer; the no-GPU test runs everywhere CUDA is built.
#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "collectives/cuda_ring.h"
#include "collectives/nccl.h"
#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives {
namespace {

using testing::Buffer;
using testing::Expected;
using testing::Group;
using ::testing::HasSubstr;
using testing::RunRanks;
using testing::TestValue;

TEST(CudaBackends, WithoutEnoughGpusTheErrorSaysSo) {
  const int gpus = CudaDeviceCount();
  try {
    CreateCudaRingGroup(gpus + 1);
    ADD_FAILURE() << "no error asking for " << gpus + 1 << " GPUs";
  } catch (const CollectiveError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("this machine has " + std::to_string(gpus)));
  }
  EXPECT_THROW(CreateNcclGroup(gpus + 1), CollectiveError);
  EXPECT_TRUE(NcclCompiledIn());
}

// Runs the allreduce contract on device buffers for a GPU group.
void CheckAllReduceOnDevice(const std::function<Group(int)>& make) {
  const int gpus = CudaDeviceCount();
  if (gpus < 2) {
    GTEST_SKIP() << "needs 2 GPUs; the CUDA runtime reports " << gpus;
  }
  for (int n = 2; n <= gpus; ++n) {
    Group group = make(n);
    const auto errors = RunRanks(group, [&](Communicator& comm) {
      const int r = comm.rank();
      cudaSetDevice(r);
      for (size_t count :
           {size_t{1}, size_t{7}, size_t{1021}, (size_t{16} << 20) / 4 + 3}) {
        for (DataType type :
             {DataType::kFloat32, DataType::kFloat64, DataType::kInt32}) {
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax,
                              ReduceOp::kMin}) {
            Buffer host(type, count);
            for (size_t i = 0; i < count; ++i) host.Set(i, TestValue(r, i));
            void* device = nullptr;
            ASSERT_EQ(cudaMalloc(&device, host.bytes()), cudaSuccess);
            cudaMemcpy(device, host.data(), host.bytes(),
                       cudaMemcpyHostToDevice);
            comm.AllReduce(device, device, count, type, op);
            cudaMemcpy(host.data(), device, host.bytes(),
                       cudaMemcpyDeviceToHost);
            cudaFree(device);
            size_t wrong = 0;
            for (size_t i = 0; i < count; ++i) {
              wrong += host.Get(i) != Expected(op, type, n, i);
            }
            EXPECT_EQ(wrong, 0u) << "rank " << r << " " << Name(type) << "["
                                 << count << "] " << Name(op);
          }
        }
      }
    });
    for (const std::string& e : errors) EXPECT_EQ(e, "") << n << " GPUs";
  }
}

TEST(CudaRing, AllReduceOnDeviceBuffers) {
  CheckAllReduceOnDevice([](int n) { return CreateCudaRingGroup(n); });
}

TEST(Nccl, AllReduceOnDeviceBuffers) {
  CheckAllReduceOnDevice([](int n) { return CreateNcclGroup(n); });
}

}  // namespace
}  // namespace ringlet::collectives
