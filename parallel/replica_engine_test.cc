// The engine's plug points, each with a piece of the caller's own: a
// reducer that counts what it sends, a body of plain functions (no
// Module), the reproducible reducer over that body, and layers that learn
// their replica through Module::SetReplicaContext.
#include "parallel/replica_engine.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "parallel/bucket_reducer.h"
#include "parallel/data_parallel.h"
#include "parallel/module_body.h"
#include "parallel/testing/batches.h"

namespace ringlet::parallel {
namespace {

using testing::Batch;
using testing::Cpus;
using testing::RandomBatch;
using testing::Seeded;
using testing::Shards;
using testing::SmallNet;

// A reducer of the caller's: each gradient summed by its own allreduce,
// counting the bytes it hands to the communicator.
class CountingReducer : public GradientReducer {
 public:
  CountingReducer(const ReducerContext& c, std::atomic<int64_t>* bytes)
      : comm_(*c.comm), bytes_(bytes) {}
  double Reduce(const std::vector<nn::Tensor*>& grads) override {
    for (nn::Tensor* g : grads) {
      comm_.AllReduce(g->data(), g->data(), g->numel(),
                      collectives::DataType::kFloat32,
                      collectives::ReduceOp::kSum);
      *bytes_ += g->numel() * static_cast<int64_t>(sizeof(float));
    }
    return 0;
  }
  int num_buckets() const override { return -1; }

 private:
  collectives::Communicator& comm_;
  std::atomic<int64_t>* bytes_;  // Every replica's thread adds.
};

// A linear classifier written as functions, as the chapter writes LeNet:
// logits = x W^T for 8x8 images and 10 classes; gradients are sums.
class LinearBody : public ReplicaBody {
 public:
  LinearBody()
      : w_(nn::Tensor::Uninitialized({10, 64})), g_(nn::Shape{10, 64}) {
    for (int64_t i = 0; i < w_.numel(); ++i) {
      w_.data()[i] = 0.01f * static_cast<float>((i * 37) % 17 - 8);
    }
  }
  nn::Tensor Forward(const nn::Tensor& x, bool training) override {
    (void)training;
    x_ = x;
    const int64_t n = x.dim(0);
    nn::Tensor logits(nn::Shape{n, 10});
    for (int64_t s = 0; s < n; ++s) {
      for (int64_t k = 0; k < 10; ++k) {
        float sum = 0;
        for (int64_t f = 0; f < 64; ++f) {
          sum += x.data()[s * 64 + f] * w_.data()[k * 64 + f];
        }
        logits.data()[s * 10 + k] = sum;
      }
    }
    return logits;
  }
  nn::PendingLoss Loss(const nn::Tensor& logits,
                       const data::Shard& shard) override {
    std::vector<int32_t> ids;
    return nn::StartSoftmaxCrossEntropy(
        logits, data::ClassIds(shard, "linear", &ids), nn::Reduction::kSum);
  }
  void Backward(const nn::Tensor& dlogits) override {
    const int64_t n = x_.dim(0);
    for (int64_t k = 0; k < 10; ++k) {
      for (int64_t f = 0; f < 64; ++f) {
        float sum = 0;
        for (int64_t s = 0; s < n; ++s) {
          sum += dlogits.data()[s * 10 + k] * x_.data()[s * 64 + f];
        }
        g_.data()[k * 64 + f] += sum;
      }
    }
  }
  void ZeroGrad() override {
    std::memset(g_.data(), 0, g_.numel() * sizeof(float));
  }
  NamedValues Parameters() override { return {{"w"}, {&w_}}; }
  std::vector<nn::Tensor*> Gradients() override { return {&g_}; }
  bool GradientsAreSums() const override { return true; }

 private:
  nn::Tensor w_, g_, x_;
};

ReplicaEngineOptions LinearOptions(ReducerFactory reducer, int micro_shards) {
  ReplicaEngineOptions options;
  nn::OptimizerOptions sgd;
  sgd.lr = 0.5f;
  sgd.momentum = 0.9f;
  options.make_optimizer = OptimizerOf(sgd);
  options.make_reducer = std::move(reducer);
  options.micro_shards = micro_shards;
  options.who = "linear";
  return options;
}

std::vector<float> TrainLinear(int devices, const ReplicaEngineOptions& o,
                               double* loss) {
  ReplicaEngine engine([](int) { return std::make_unique<LinearBody>(); },
                       Cpus(devices), o);
  *loss = 0;
  for (int step = 0; step < 3; ++step) {
    const Batch b = RandomBatch(17, 8, 40 + step);
    const int shards = engine.shards_per_batch();
    *loss += engine.QueueStep({Shards(b, shards)}).Finish().loss_sum;
  }
  EXPECT_EQ(engine.CompareReplicas(), "");
  const NamedTensors state = engine.State(0);
  return std::vector<float>(state.tensors[0]->data(),
                            state.tensors[0]->data() + 640);
}

TEST(ReplicaEngineTest, AReducerOfTheCallersSumsEveryGradientAndCountsIt) {
  std::atomic<int64_t> bytes{0};
  DataParallelOptions counting;
  counting.make_reducer = [&bytes](const ReducerContext& c) {
    return std::make_unique<CountingReducer>(c, &bytes);
  };
  DataParallel mine(Seeded(SmallNet, 3), Cpus(2), counting);
  DataParallel bucketed(Seeded(SmallNet, 3), Cpus(2), DataParallelOptions());
  for (int step = 0; step < 2; ++step) {
    const Batch b = RandomBatch(12, 8, 7 + step);
    const TrainStepStats a = mine.TrainStep(Shards(b, 2));
    const TrainStepStats r = bucketed.TrainStep(Shards(b, 2));
    EXPECT_DOUBLE_EQ(a.loss_sum, r.loss_sum) << "step " << step;
  }
  int64_t floats = 0;
  for (nn::Parameter* p : mine.replica(0).Parameters())
    floats += p->value.numel();
  // Two replicas, two steps, every parameter's gradient once each.
  EXPECT_EQ(bytes, 2 * 2 * floats * 4);
  EXPECT_EQ(mine.num_buckets(), -1);
  const NamedTensors x = mine.State(0), y = bucketed.State(0);
  ASSERT_EQ(x.tensors.size(), y.tensors.size());
  for (size_t t = 0; t < x.tensors.size(); ++t) {
    for (int64_t i = 0; i < x.tensors[t]->numel(); ++i) {
      ASSERT_NEAR(x.tensors[t]->data()[i], y.tensors[t]->data()[i], 1e-6)
          << x.names[t] << "[" << i << "]";
    }
  }
}

TEST(ReplicaEngineTest, ABodyOfFunctionsTakesTheOneDeviceStepOnThree) {
  std::atomic<int64_t> bytes{0};
  const ReducerFactory counting = [&bytes](const ReducerContext& c) {
    return std::make_unique<CountingReducer>(c, &bytes);
  };
  double one_loss = 0, three_loss = 0;
  const std::vector<float> one =
      TrainLinear(1, LinearOptions(counting, 0), &one_loss);
  const std::vector<float> three =
      TrainLinear(3, LinearOptions(counting, 0), &three_loss);
  EXPECT_NEAR(three_loss, one_loss, 1e-4);
  for (size_t i = 0; i < one.size(); ++i) {
    ASSERT_NEAR(three[i], one[i], 1e-5) << i;
  }
  EXPECT_GT(std::abs(one[0] - 0.01f * ((0 * 37) % 17 - 8)), 1e-4)
      << "the steps changed nothing";
}

TEST(ReplicaEngineTest, TheReproducibleReducerGivesABodyOfFunctionsOneBits) {
  double loss1 = 0;
  const std::vector<float> one =
      TrainLinear(1, LinearOptions(nullptr, 5), &loss1);
  for (int devices = 2; devices <= 4; ++devices) {
    double loss = 0;
    const std::vector<float> k =
        TrainLinear(devices, LinearOptions(nullptr, 5), &loss);
    EXPECT_EQ(std::memcmp(k.data(), one.data(), one.size() * sizeof(float)), 0)
        << devices << " devices";
    EXPECT_EQ(std::memcmp(&loss, &loss1, sizeof(double)), 0) << devices;
  }
}

TEST(ReplicaEngineTest, ABucketedReducerNeedsAModule) {
  try {
    double loss = 0;
    TrainLinear(2, LinearOptions(BucketedReducer(1 << 20), 0), &loss);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs a Module"), std::string::npos)
        << e.what();
  }
}

TEST(ReplicaEngineTest, NoReducerIsAClearError) {
  try {
    double loss = 0;
    TrainLinear(2, LinearOptions(nullptr, 0), &loss);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "linear: no gradient reducer");
  }
}

// Records the context the engine gives it; passes its input through.
class ContextProbe : public nn::Module {
 public:
  nn::Tensor Forward(const nn::Tensor& x) override { return x; }
  nn::Tensor Backward(const nn::Tensor& dy) override { return dy; }
  std::string kind() const override { return "probe"; }
  void SetReplicaContext(const nn::ReplicaContext& c) override { context = c; }
  nn::ReplicaContext context;
};

TEST(ReplicaEngineTest, EveryLayerLearnsItsReplicaAndCanSumAcrossThem) {
  for (const bool sync : {false, true}) {
    DataParallelOptions options;
    options.sync_bn = sync;
    DataParallel dp(
        [] {
          auto net = std::make_unique<nn::Sequential>();
          net->Add(std::make_unique<ContextProbe>());
          net->Add(SmallNet());
          return net;
        },
        Cpus(3), options);
    std::vector<double> values(3);
    std::vector<ContextProbe*> probes(3);
    for (int d = 0; d < 3; ++d) {
      probes[d] = dynamic_cast<ContextProbe*>(
          static_cast<nn::Sequential&>(dp.replica(d)).Children().front());
      ASSERT_NE(probes[d], nullptr);
      EXPECT_EQ(probes[d]->context.index, d);
      EXPECT_EQ(probes[d]->context.count, 3);
      EXPECT_EQ(probes[d]->context.sum != nullptr, sync);
    }
    if (!sync) continue;
    // The sum is collective: every replica calls it, on its own thread.
    std::vector<std::thread> threads;
    for (int d = 0; d < 3; ++d) {
      threads.emplace_back([&, d] {
        values[d] = d + 1.0;
        probes[d]->context.sum(&values[d], 1);
      });
    }
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(values, (std::vector<double>{6, 6, 6}));
  }
}

// Outputs: each local shard's logits on the host, as one model gives them.
TEST(ReplicaEngineTest, OutputsAreEachLocalShardsLogits) {
  const Batch batch = RandomBatch(7, 8, 5);
  DataParallel dp(Seeded(SmallNet, 6), Cpus(3), DataParallelOptions{});
  const std::vector<nn::Tensor> outputs = dp.engine().Outputs(
      data::LocalOf(Shards(batch, 3), dp.EvalLayout(), "test"));
  ASSERT_EQ(outputs.size(), 3u);
  auto model = Seeded(SmallNet, 6)();
  model->SetTraining(false);
  const nn::Tensor want = model->Forward(batch.images);
  int64_t row = 0;
  for (const nn::Tensor& t : outputs) {
    ASSERT_EQ(t.rank(), 2);
    for (int64_t i = 0; i < t.numel(); ++i) {
      EXPECT_NEAR(t.data()[i], want.data()[row * 10 + i], 1e-5) << row;
    }
    row += t.dim(0);
  }
  EXPECT_EQ(row, 7);
}

}  // namespace
}  // namespace ringlet::parallel
