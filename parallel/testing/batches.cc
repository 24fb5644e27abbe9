#include "parallel/testing/batches.h"

#include <random>

#include "nn/layers/init.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn::testing {

Batch RandomBatch(int64_t n, int64_t side, uint64_t seed) {
  Batch b{RandomTensor({n, 1, side, side}, seed, 0.0f, 1.0f), {}};
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(gen() % 10);
  return b;
}

std::vector<Shard> Shards(const Batch& b, int devices) {
  const Shape& shape = b.images.shape();
  const Shard whole{
      b.size(),
      SamplesOf(b.images.data(), Shape(shape.begin() + 1, shape.end())),
      SamplesOf(b.labels.data(), {})};
  return ShardBatch(whole, devices);
}

std::vector<Device> Cpus(int k) {
  std::vector<Device> out;
  for (int i = 0; i < k; ++i) out.push_back(Device::Cpu(i));
  return out;
}

std::unique_ptr<Sequential> SmallNet() {
  auto net = std::make_unique<Sequential>();
  net->Add(std::make_unique<Conv2d>(1, 4, 3, 1, 1));
  net->Add(std::make_unique<BatchNorm2d>(4));
  net->Add(std::make_unique<ReLU>());
  net->Add(std::make_unique<Residual>(4, 8, true, 2));
  net->Add(std::make_unique<GlobalAvgPool>());
  net->Add(std::make_unique<Flatten>());
  net->Add(std::make_unique<Linear>(8, 10));
  return net;
}

DataParallel::ModelFactory Seeded(
    std::function<std::unique_ptr<Sequential>()> make, uint64_t seed) {
  return [make, seed] {
    auto net = make();
    InitParameters(*net, InitScheme::kKaimingNormal, seed);
    return net;
  };
}

}  // namespace ringlet::nn::testing
