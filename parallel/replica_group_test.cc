#include "parallel/replica_group.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::parallel {
namespace {

TEST(ShardInputs, TakesItsShapeFromTheShard) {
  std::vector<float> inputs = {1, 2, 3, 4, 5, 6};
  std::vector<int32_t> targets = {0, 1};
  const data::Shard shard{2, data::SamplesOf(inputs.data(), {1, 3}),
                          data::SamplesOf(targets.data(), {})};
  const nn::Tensor x = ShardInputs(shard, nn::Device::Cpu());
  EXPECT_EQ(x.shape(), (nn::Shape{2, 1, 3}));
  EXPECT_EQ(std::vector<float>(x.data(), x.data() + 6), inputs);
  data::Shard shapeless = shard;
  shapeless.inputs.shape.clear();
  EXPECT_THROW(ShardInputs(shapeless, nn::Device::Cpu()), nn::ShapeError);
}

// Inputs reach a model as float32; others are refused, naming the type.
TEST(ShardInputs, InputsOtherThanFloat32AreRefused) {
  std::vector<uint8_t> pixels(6);
  std::vector<int32_t> targets(2);
  const data::Shard shard{2, data::SamplesOf(pixels.data(), {1, 3}),
                          data::SamplesOf(targets.data(), {})};
  try {
    ShardInputs(shard, nn::Device::Cpu());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("float32 samples; these are uint8"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringlet::parallel
