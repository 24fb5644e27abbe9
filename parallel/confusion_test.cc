// The confusion matrix counted on three CPU devices equals the one counted
// by hand from one model's outputs on the whole batch; its diagonal is the
// engine's count of correct predictions; bad shapes and sizes are refused.
#include "parallel/confusion.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

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

TEST(Confusion, CountedOnThreeDevicesAsByHandOnOne) {
  const Batch batch = RandomBatch(50, 8, 1);
  DataParallelOptions options;
  DataParallel dp(Seeded(SmallNet, 2), Cpus(3), options);
  const CountMetric counts = ConfusionCounts(10);
  ASSERT_EQ(counts.size, 100);
  const EvalStats stats = dp.Evaluate(Shards(batch, 3), nullptr, counts);
  const ConfusionMatrix m = ConfusionOf(10, stats.counts);

  auto model = Seeded(SmallNet, 2)();
  model->SetTraining(false);
  const nn::Tensor logits = model->Forward(batch.images);
  std::vector<int64_t> want(100, 0);
  for (int64_t i = 0; i < batch.size(); ++i) {
    const float* row = logits.data() + i * 10;
    int best = 0;
    for (int j = 1; j < 10; ++j) best = row[j] > row[best] ? j : best;
    ++want[batch.labels[i] * 10 + best];
  }
  EXPECT_EQ(m.counts, want);
  EXPECT_EQ(m.total(), 50);
  EXPECT_EQ(m.correct(), stats.correct);
  EXPECT_EQ(stats.samples, 50);
}

TEST(Confusion, PerClassAccuracyIsEachRowsShare) {
  // Class 0: 3 of 4 right; class 1: 1 of 2; class 2: no samples.
  const ConfusionMatrix m = ConfusionOf(3, {3, 1, 0, 1, 1, 0, 0, 0, 0});
  EXPECT_EQ(m.at(0, 1), 1);
  EXPECT_EQ(m.PerClassAccuracy(), (std::vector<double>{0.75, 0.5, -1.0}));
  EXPECT_EQ(m.correct(), 4);
}

TEST(Confusion, RefusesWhatItCannotCount) {
  EXPECT_THROW(ConfusionCounts(0), std::invalid_argument);
  EXPECT_THROW(ConfusionCounts(kMaxConfusionClasses + 1),
               std::invalid_argument);
  EXPECT_THROW(ConfusionOf(3, std::vector<double>(8)), std::invalid_argument);
  // SmallNet has 10 outputs: a matrix of 4 classes does not fit them.
  const Batch batch = RandomBatch(6, 8, 3);
  DataParallel dp(Seeded(SmallNet, 4), Cpus(2), DataParallelOptions{});
  try {
    dp.Evaluate(Shards(batch, 2), nullptr, ConfusionCounts(4));
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expected [3, 4]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ringlet::parallel
