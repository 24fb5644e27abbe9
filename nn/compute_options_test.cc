// Compute options are per thread and scoped: the defaults without a scope,
// the innermost scope's within, restored after; other threads unaffected;
// device workers take their maker's options, or the ones given per device.
#include "nn/compute_options.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"
#include "parallel/device_workers.h"

namespace ringlet::nn {
namespace {

TEST(ComputeOptions, DefaultsAreTheBooks) {
  const ComputeOptions& o = CurrentComputeOptions();
  EXPECT_EQ(o.autocast, DType::kFloat32);
  EXPECT_EQ(o.gpu_layout, MemoryFormat::kContiguous);
  EXPECT_EQ(o.gpu_precision, GpuPrecision::kFp32);
  EXPECT_EQ(o.conv_algorithms, ConvAlgorithms::kMeasure);
  EXPECT_EQ(o.op_threads, 1);
}

TEST(ComputeOptions, ScopesNestAndRestore) {
  {
    const auto bf16 =
        ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
    EXPECT_EQ(autocast(), DType::kBFloat16);
    {
      const auto threads = ScopedCompute(&ComputeOptions::op_threads, 3);
      // The inner scope changes one field and keeps the outer's others.
      EXPECT_EQ(OpThreads(), 3);
      EXPECT_EQ(autocast(), DType::kBFloat16);
    }
    EXPECT_EQ(OpThreads(), 1);
    EXPECT_EQ(gpu_activation_format(), MemoryFormat::kContiguous);
  }
  EXPECT_EQ(autocast(), DType::kFloat32);
  EXPECT_THROW(ScopedCompute(&ComputeOptions::op_threads, 0),
               std::invalid_argument);
  EXPECT_EQ(OpThreads(), 1);
}

TEST(ComputeOptions, AnotherThreadKeepsItsOwn) {
  const auto bf16 = ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
  DType seen = DType::kBFloat16;
  std::thread other([&] { seen = autocast(); });
  other.join();
  EXPECT_EQ(seen, DType::kFloat32);
  EXPECT_EQ(autocast(), DType::kBFloat16);
}

TEST(ComputeOptions, DeviceWorkersTakeTheirMakersOptionsOrTheirOwn) {
  std::vector<DType> seen(2);
  std::vector<int> threads(2);
  {
    const auto bf16 =
        ScopedCompute(&ComputeOptions::autocast, DType::kBFloat16);
    parallel::DeviceWorkers workers(2, /*threads_per_device=*/2);
    workers.Run([&](int d) {
      seen[d] = autocast();
      threads[d] = OpThreads();
    });
  }
  EXPECT_EQ(seen, (std::vector<DType>{DType::kBFloat16, DType::kBFloat16}));
  EXPECT_EQ(threads, (std::vector<int>{2, 2}));
  ComputeOptions fp32, bf16;
  bf16.autocast = DType::kBFloat16;
  parallel::DeviceWorkers per_device(2, 1, {fp32, bf16});
  per_device.Run([&](int d) { seen[d] = autocast(); });
  EXPECT_EQ(seen, (std::vector<DType>{DType::kFloat32, DType::kBFloat16}));
  EXPECT_THROW(parallel::DeviceWorkers(2, 1, {fp32}), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::nn
