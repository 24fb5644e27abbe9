#include "parallel/testing/batches.h"

#include <random>

#include "nn/layers/init.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::parallel::testing {

Batch RandomBatch(int64_t n, int64_t side, uint64_t seed) {
  Batch b{nn::testing::RandomTensor({n, 1, side, side}, seed, 0.0f, 1.0f), {}};
  std::mt19937 gen(seed);
  for (int64_t i = 0; i < n; ++i) b.labels.push_back(gen() % 10);
  return b;
}

std::vector<data::Shard> Shards(const Batch& b, int devices) {
  const nn::Shape& shape = b.images.shape();
  const data::Shard whole{
      b.size(),
      data::SamplesOf(b.images.data(),
                      nn::Shape(shape.begin() + 1, shape.end())),
      data::SamplesOf(b.labels.data(), {})};
  return data::ShardBatch(whole, devices);
}

std::vector<nn::Device> Cpus(int k) {
  std::vector<nn::Device> out;
  for (int i = 0; i < k; ++i) out.push_back(nn::Device::Cpu(i));
  return out;
}

std::unique_ptr<nn::Sequential> SmallNet() {
  auto net = std::make_unique<nn::Sequential>();
  net->Add(std::make_unique<nn::Conv2d>(1, 4, 3, 1, 1));
  net->Add(std::make_unique<nn::BatchNorm2d>(4));
  net->Add(std::make_unique<nn::ReLU>());
  net->Add(std::make_unique<nn::Residual>(4, 8, true, 2));
  net->Add(std::make_unique<nn::GlobalAvgPool>());
  net->Add(std::make_unique<nn::Flatten>());
  net->Add(std::make_unique<nn::Linear>(8, 10));
  return net;
}

DataParallel::ModelFactory Seeded(
    std::function<std::unique_ptr<nn::Sequential>()> make, uint64_t seed) {
  return [make, seed] {
    auto net = make();
    nn::InitParameters(*net, nn::InitScheme::kKaimingNormal, seed);
    return net;
  };
}

}  // namespace ringlet::parallel::testing
