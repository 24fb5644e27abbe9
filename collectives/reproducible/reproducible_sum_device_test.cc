// The reproducible sum of GPU buffers against its CPU twin: the host sum's
// bits (one rank holding every summand) on 1, 2 and 4 ranks of the CUDA
// ring on ONE GPU, with NCCL on as many GPUs as there are; each case
// prints its hash (comparable across builds and GPUs). Skips, saying why,
// where there is no GPU.
#include "collectives/reproducible/reproducible_sum_device.h"

#include <cuda_runtime.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "collectives/backends/cuda_ring.h"
#include "collectives/backends/nccl.h"
#include "collectives/collectives.h"
#include "collectives/reproducible/reproducible_sum.h"
#include "collectives/testing/rank_threads.h"
#include "gpu/device_probe.h"

namespace ringlet::collectives {
namespace {

using testing::Group;
using testing::RunRanks;
using Bytes = std::vector<unsigned char>;

// Summand s: magnitudes 2^-20 .. 2^20 of both signs, a block of huge
// values, zeros, and one inf and one NaN; rank- and index-dependent.
std::vector<Bytes> Summands(int n, size_t count, DataType type) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::uniform_int_distribution<int> exponent(-20, 20), sign(0, 1);
  std::vector<Bytes> out;
  for (int s = 0; s < n; ++s) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) {
      v[i] = std::ldexp(mantissa(rng), exponent(rng)) * (sign(rng) ? -1 : 1);
      if (i % 97 == static_cast<size_t>(s)) v[i] = 0;
      if (i / 256 == 3) v[i] *= 1e30f;
    }
    if (count > 600 && s == 1) v[600] = std::numeric_limits<float>::infinity();
    if (count > 601 && s == 2) v[601] = std::nanf("");
    Bytes bytes(count * SizeOf(type));
    for (size_t i = 0; i < count; ++i) {
      if (type == DataType::kFloat32) {
        std::memcpy(bytes.data() + 4 * i, &v[i], 4);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &v[i], 4);
        const uint16_t narrow = static_cast<uint16_t>(bits >> 16);
        std::memcpy(bytes.data() + 2 * i, &narrow, 2);
      }
    }
    out.push_back(bytes);
  }
  return out;
}

uint64_t Hash(const Bytes& bytes) {  // FNV-1a.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ull;
  return h;
}

class DeviceBytes {
 public:
  DeviceBytes(int device, const Bytes& host) : bytes_(host.size()) {
    cudaSetDevice(device);
    EXPECT_EQ(cudaMalloc(&data_, bytes_ > 0 ? bytes_ : 1), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data_, host.data(), bytes_, cudaMemcpyHostToDevice),
              cudaSuccess);
  }
  ~DeviceBytes() { cudaFree(data_); }
  void* data() const { return data_; }
  Bytes Download() const {
    Bytes out(bytes_);
    EXPECT_EQ(cudaMemcpy(out.data(), data_, bytes_, cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  }

 private:
  void* data_ = nullptr;
  size_t bytes_;
};

constexpr int kSummands = 8;

// The host's bits: one rank holding every summand.
Bytes HostSum(const std::vector<Bytes>& summands, size_t count, DataType type) {
  Group one = CreateGroup("ring", 1);
  std::vector<const void*> all;
  for (const Bytes& s : summands) all.push_back(s.data());
  Bytes out(count * SizeOf(type));
  ReproducibleAllReduce(*one[0], all, out.data(), count, type);
  return out;
}

// Rank r of `group` holds summands [r S / n, (r + 1) S / n) on its GPU.
std::vector<Bytes> DeviceSum(Group& group, const std::vector<int>& gpus,
                             const std::vector<Bytes>& summands, size_t count,
                             DataType type) {
  const int n = static_cast<int>(group.size());
  std::vector<Bytes> results(n);
  const std::vector<std::string> errors = RunRanks(group, [&](Communicator& c) {
    const int r = c.rank();
    std::vector<std::unique_ptr<DeviceBytes>> mine;
    std::vector<const void*> pointers;
    for (int s = r * kSummands / n; s < (r + 1) * kSummands / n; ++s) {
      mine.push_back(std::make_unique<DeviceBytes>(gpus[r], summands[s]));
      pointers.push_back(mine.back()->data());
    }
    DeviceBytes out(gpus[r], Bytes(count * SizeOf(type), 0xee));
    ReproducibleAllReduceOnDevice(c, pointers, out.data(), count, type,
                                  gpus[r]);
    results[r] = out.Download();
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  return results;
}

class ReproducibleOnDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    if (gpu::CountCudaDevices(&reason) == 0) GTEST_SKIP() << reason;
  }
};

TEST_F(ReproducibleOnDeviceTest, CudaRingOnOneGpuGivesTheHostsBits) {
  for (const DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
    for (const size_t count : {size_t{1}, size_t{257}, size_t{4099},
                               size_t{70001}, (size_t{4} << 20) + 5}) {
      const std::vector<Bytes> summands = Summands(kSummands, count, type);
      const Bytes expected = HostSum(summands, count, type);
      for (const int ranks : {1, 2, 4}) {
        const std::vector<int> gpus(ranks, 0);
        Group group = CreateCudaRingGroup(gpus);
        const std::vector<Bytes> got =
            DeviceSum(group, gpus, summands, count, type);
        for (int r = 0; r < ranks; ++r) {
          EXPECT_TRUE(got[r] == expected)
              << Name(type) << "[" << count << "] on " << ranks
              << " ranks of cuda:0, rank " << r;
        }
        std::printf(
            "reproducible on device: %s[%zu] cuda_ring x%d: %016llx "
            "(host %016llx)\n",
            Name(type), count, ranks,
            static_cast<unsigned long long>(Hash(got[0])),
            static_cast<unsigned long long>(Hash(expected)));
      }
    }
  }
}

TEST_F(ReproducibleOnDeviceTest, NcclOnEveryGpuGivesTheHostsBits) {
  const int gpus = std::min(gpu::CountCudaDevices(), kSummands);
  std::vector<int> list;
  for (int g = 0; g < gpus; ++g) list.push_back(g);
  for (const DataType type : {DataType::kFloat32, DataType::kBFloat16}) {
    const size_t count = 70001;
    const std::vector<Bytes> summands = Summands(kSummands, count, type);
    const Bytes expected = HostSum(summands, count, type);
    Group group = CreateNcclGroup(list);
    const std::vector<Bytes> got =
        DeviceSum(group, list, summands, count, type);
    for (int r = 0; r < gpus; ++r) {
      EXPECT_TRUE(got[r] == expected) << Name(type) << " nccl rank " << r;
    }
    std::printf("reproducible on device: %s[%zu] nccl x%d: %016llx\n",
                Name(type), count, gpus,
                static_cast<unsigned long long>(Hash(got[0])));
  }
}

TEST_F(ReproducibleOnDeviceTest, HostBuffersAreRefusedWithAWayOut) {
  Group group = CreateCudaRingGroup({0});
  std::vector<float> host(16, 1.0f);
  DeviceBytes out(0, Bytes(16 * 4));
  try {
    ReproducibleAllReduceOnDevice(*group[0], {host.data()}, out.data(), 16,
                                  DataType::kFloat32, 0);
    ADD_FAILURE() << "a host summand was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("not in that GPU's memory"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("ReproducibleAllReduce"));
  }
}

TEST(ReproducibleOnDevice, CompiledInWhereCudaIs) {
  EXPECT_TRUE(ReproducibleOnDeviceCompiledIn());
}

}  // namespace
}  // namespace ringlet::collectives
