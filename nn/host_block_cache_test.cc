#include "nn/host_block_cache.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "nn/tensor.h"

namespace ringlet::nn {
namespace {

bool Aligned64(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 64 == 0;
}

TEST(HostBlockCache, AFreedLargeBlockIsReusedForTheSameSize) {
  ReleaseHostBlockCache();
  const size_t bytes = 3 * kHostBlockCacheMinBytes + 100;
  const HostBlock first = AllocateHostBlock(bytes);
  EXPECT_GE(first.capacity, bytes);
  const HostBlockCacheStats before = GetHostBlockCacheStats();
  FreeHostBlock(first);
  EXPECT_EQ(GetHostBlockCacheStats().cached_bytes,
            static_cast<int64_t>(first.capacity));
  const HostBlock second = AllocateHostBlock(bytes);
  EXPECT_EQ(second.data, first.data);
  EXPECT_EQ(GetHostBlockCacheStats().hits, before.hits + 1);
  EXPECT_EQ(GetHostBlockCacheStats().cached_bytes, 0);
  FreeHostBlock(second);
  // A larger request does not take it; a smaller one that wastes less than
  // half does, and keeps the whole capacity.
  const HostBlock larger = AllocateHostBlock(bytes + kHostBlockCacheMinBytes);
  EXPECT_NE(larger.data, first.data);
  const HostBlock smaller = AllocateHostBlock(bytes - kHostBlockCacheMinBytes);
  EXPECT_EQ(smaller.data, first.data);
  EXPECT_EQ(smaller.capacity, first.capacity);
  FreeHostBlock(smaller);
  const HostBlock much_smaller = AllocateHostBlock(kHostBlockCacheMinBytes);
  EXPECT_NE(much_smaller.data, first.data);
  FreeHostBlock(much_smaller);
  FreeHostBlock(larger);
  ReleaseHostBlockCache();
  EXPECT_EQ(GetHostBlockCacheStats().cached_bytes, 0);
}

TEST(HostBlockCache, SmallAndLargeBlocksAre64ByteAligned) {
  for (size_t bytes : {size_t{4}, size_t{100}, size_t{4096},
                       kHostBlockCacheMinBytes, 5 * kHostBlockCacheMinBytes}) {
    const HostBlock block = AllocateHostBlock(bytes);
    EXPECT_TRUE(Aligned64(block.data)) << bytes;
    FreeHostBlock(block);
  }
}

// A reused block held another tensor's values; a new tensor still starts
// at zero.
TEST(HostBlockCache, TensorsOnReusedBlocksStartAtZero) {
  const Shape shape = {1, 64, 64, 128};  // 2 MiB
  const float* first_data;
  {
    Tensor t(shape);
    t.Fill(7.0f);
    first_data = t.data();
  }
  const Tensor again(shape);
  EXPECT_EQ(again.data(), first_data);
  for (int64_t i = 0; i < again.numel(); i += 997) {
    ASSERT_EQ(again.data()[i], 0.0f) << i;
  }
}

}  // namespace
}  // namespace ringlet::nn
