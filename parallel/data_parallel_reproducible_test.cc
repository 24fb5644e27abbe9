// DataParallel with micro_shards: the same parameters, buffers and loss,
// bit for bit, on 1, 2, 3 and 4 CPU devices, with SGD (momentum, weight
// decay) and AdamW, clipping, accumulation, the bf16 wire, and uneven or
// empty micro-shards.
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "parallel/data_parallel.h"
#include "parallel/testing/batches.h"

namespace ringlet::parallel {
namespace {

using testing::Batch;
using testing::Cpus;
using testing::RandomBatch;
using testing::Seeded;
using testing::Shards;
using testing::SmallNet;

struct Run {
  std::vector<float> state;  // Parameters, buffers, optimizer state.
  std::vector<double> losses;
};

Run Train(int devices, const DataParallelOptions& options, bool accumulate) {
  DataParallel dp(Seeded(SmallNet, 5), Cpus(devices), options);
  const int m = options.micro_shards;
  Run run;
  for (int step = 0; step < 3; ++step) {
    // 19 samples: micro-shards of 5, 5, 5 and 4; the last step's batch of
    // 3 leaves one micro-shard empty.
    const Batch b = RandomBatch(step == 2 ? 3 : 19, 8, 100 + step);
    std::vector<std::vector<data::Shard>> micro = {Shards(b, m)};
    const Batch extra = RandomBatch(7, 8, 200 + step);
    if (accumulate) micro.push_back(Shards(extra, m));
    run.losses.push_back(dp.QueueStep(micro).Finish().loss_sum);
  }
  EXPECT_EQ(dp.CompareReplicas(), "");
  const NamedTensors state = dp.State(0);
  for (const nn::Tensor* t : state.tensors) {
    run.state.insert(run.state.end(), t->data(), t->data() + t->numel());
  }
  return run;
}

void ExpectSameBitsOnOneToFourDevices(const DataParallelOptions& options,
                                      bool accumulate,
                                      const std::string& what) {
  const Run one = Train(1, options, accumulate);
  for (int devices = 2; devices <= 4; ++devices) {
    const Run k = Train(devices, options, accumulate);
    ASSERT_EQ(k.state.size(), one.state.size());
    EXPECT_EQ(std::memcmp(k.state.data(), one.state.data(),
                          one.state.size() * sizeof(float)),
              0)
        << what << " on " << devices << " devices";
    EXPECT_EQ(std::memcmp(k.losses.data(), one.losses.data(),
                          one.losses.size() * sizeof(double)),
              0)
        << what << " on " << devices << " devices: the loss";
  }
}

DataParallelOptions Reproducible(const char* optimizer) {
  DataParallelOptions options;
  options.micro_shards = 4;
  options.optimizer.name = optimizer;
  options.optimizer.lr = std::string(optimizer) == "sgd" ? 0.3f : 0.01f;
  options.optimizer.momentum = std::string(optimizer) == "sgd" ? 0.9f : 0.0f;
  options.optimizer.weight_decay = 1e-3f;
  return options;
}

TEST(DataParallelReproducibleTest, SgdSameBitsOnOneToFourDevices) {
  ExpectSameBitsOnOneToFourDevices(Reproducible("sgd"), false, "sgd");
}

TEST(DataParallelReproducibleTest, AdamWClippedAccumulatedSameBits) {
  DataParallelOptions options = Reproducible("adamw");
  options.clip_grad_norm = 0.5;
  ExpectSameBitsOnOneToFourDevices(options, true, "adamw, clipped, 2 batches");
}

TEST(DataParallelReproducibleTest, Bf16WireSameBits) {
  DataParallelOptions options = Reproducible("sgd");
  options.grad_dtype = collectives::DataType::kBFloat16;
  ExpectSameBitsOnOneToFourDevices(options, false, "bf16 wire");
}

// Without micro-shards the devices' shards differ and so do the bits (what
// the option is for); with them, training still learns: the loss falls.
TEST(DataParallelReproducibleTest, PlainStepsDifferAcrossDevicesAndBothLearn) {
  DataParallelOptions plain = Reproducible("sgd");
  plain.micro_shards = 0;
  DataParallel one(Seeded(SmallNet, 5), Cpus(1), plain);
  DataParallel three(Seeded(SmallNet, 5), Cpus(3), plain);
  DataParallel micro(Seeded(SmallNet, 5), Cpus(3), Reproducible("sgd"));
  const Batch b = RandomBatch(24, 8, 9);
  double first = 0, last = 0;
  for (int step = 0; step < 20; ++step) {
    one.TrainStep(Shards(b, 1));
    three.TrainStep(Shards(b, 3));
    const double loss = micro.TrainStep(Shards(b, 4)).loss_sum;
    if (step == 0) first = loss;
    last = loss;
  }
  const nn::Tensor* a = one.State(0).tensors[0];
  const nn::Tensor* c = three.State(0).tensors[0];
  EXPECT_NE(std::memcmp(a->data(), c->data(), a->numel() * sizeof(float)), 0);
  EXPECT_LT(last, 0.5 * first);
}

TEST(DataParallelReproducibleTest, RefusesWhatCannotKeepThePromise) {
  DataParallelOptions options = Reproducible("sgd");
  options.sync_bn = true;
  EXPECT_THROW(DataParallel(Seeded(SmallNet, 5), Cpus(2), options),
               std::invalid_argument);
  options.sync_bn = false;
  options.micro_shards = 2;
  try {
    DataParallel dp(Seeded(SmallNet, 5), Cpus(3), options);
    FAIL() << "3 devices with 2 micro-shards ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--micro_shards=3"), std::string::npos)
        << e.what();
  }
  options.micro_shards = 4;
  DataParallel dp(Seeded(SmallNet, 5), Cpus(2), options);
  const Batch b = RandomBatch(8, 8, 1);
  // A batch cut per device, not into the micro-shards.
  EXPECT_THROW(dp.TrainStep(Shards(b, 2)), std::invalid_argument);
}

}  // namespace
}  // namespace ringlet::parallel
