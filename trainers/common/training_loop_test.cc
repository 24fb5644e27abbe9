#include "trainers/common/training_loop.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

// Image i has every pixel equal to i % 256 and label i % 10, so the fake
// trainer can tell which images it was given.
data::Split MakeSplit(int64_t n) {
  data::Split split;
  split.name = "fake";
  for (int64_t i = 0; i < n; ++i) {
    split.pixels.insert(split.pixels.end(), data::kImagePixels,
                        static_cast<uint8_t>(i % 256));
    split.labels.push_back(static_cast<int32_t>(i % 10));
  }
  return split;
}

// Records the shards; "predicts" label 0, so accuracy is the share of 0s.
class FakeTrainer : public ParallelTrainer {
 public:
  explicit FakeTrainer(int devices) : devices_(devices) {}
  int num_devices() const override { return devices_; }
  nn::TrainStepStats TrainStep(
      const std::vector<nn::ReplicaInput>& shards) override {
    nn::TrainStepStats stats;
    EXPECT_EQ(static_cast<int>(shards.size()), devices_);
    int64_t smallest = 1 << 30, largest = 0;
    for (const nn::ReplicaInput& s : shards) {
      smallest = std::min(smallest, s.count);
      largest = std::max(largest, s.count);
      for (int64_t i = 0; i < s.count; ++i) {
        seen_labels.insert(s.labels[i]);
        pixel_sum += s.images[i * data::kImagePixels];
        stats.correct += s.labels[i] == 0;
      }
      stats.samples += s.count;
    }
    EXPECT_LE(largest - smallest, 1);      // split_batch's balance.
    stats.loss_sum = 2.0 * stats.samples;  // A mean loss of 2.
    stats.comm_seconds = 0;
    ++steps;
    return stats;
  }
  int64_t CountCorrect(const std::vector<nn::ReplicaInput>& shards) override {
    int64_t correct = 0;
    for (const nn::ReplicaInput& s : shards) {
      for (int64_t i = 0; i < s.count; ++i) correct += s.labels[i] == 0;
    }
    return correct;
  }

  int steps = 0;
  double pixel_sum = 0;
  std::set<int32_t> seen_labels;

 private:
  int devices_;
};

TEST(TrainingLoopTest, VisitsEveryImageSplitAcrossDevicesAndReports) {
  const data::Split train = MakeSplit(100), test = MakeSplit(30);
  FakeTrainer trainer(3);
  LoopOptions options;
  options.epochs = 2;
  options.batch_size = 16;  // 6 full batches and one of 4 per epoch.
  options.metrics_out = ::testing::TempDir() + "/metrics.jsonl";
  options.plot_out = ::testing::TempDir() + "/plot.svg";
  options.plot_title = "fake";
  std::ostringstream out, progress;
  const std::vector<EpochMetrics> epochs =
      TrainEpochs(trainer, train, test, options, out, progress);
  ASSERT_EQ(epochs.size(), 2u);
  EXPECT_EQ(trainer.steps, 14);
  EXPECT_EQ(trainer.seen_labels.size(), 10u);
  // Each epoch sees images 0..99 once: pixel sum 2 * sum(i) / 255.
  EXPECT_NEAR(trainer.pixel_sum, 2 * 4950 / 255.0, 1e-3);
  for (const EpochMetrics& m : epochs) {
    EXPECT_DOUBLE_EQ(m.loss, 2.0);
    EXPECT_DOUBLE_EQ(m.train_acc, 0.1);
    EXPECT_DOUBLE_EQ(m.test_acc, 0.1);
    EXPECT_GT(m.images_per_sec, 0);
  }
  EXPECT_NE(out.str().find("epoch 2/2: loss 2.000, train acc 0.100"),
            std::string::npos)
      << out.str();
  EXPECT_NE(progress.str().find("epoch 1/2 ["), std::string::npos);

  std::ifstream metrics(options.metrics_out);
  std::string line;
  int lines = 0;
  while (std::getline(metrics, line)) {
    EXPECT_EQ(FromJsonLine(line).epoch, ++lines);
  }
  EXPECT_EQ(lines, 2);
  std::ifstream plot(options.plot_out);
  std::stringstream svg;
  svg << plot.rdbuf();
  EXPECT_NE(svg.str().find("<polyline"), std::string::npos);
}

TEST(TrainingLoopTest, EvaluationCountsEveryTestImage) {
  FakeTrainer trainer(4);
  EXPECT_DOUBLE_EQ(EvaluateAccuracy(trainer, MakeSplit(25), 7), 3.0 / 25);
}

TEST(TrainingLoopTest, ClosingLineAsInTheChapter) {
  std::vector<EpochMetrics> epochs(2);
  epochs[0].seconds = 10;
  epochs[1].seconds = 16.8;
  epochs[1].test_acc = 0.912;
  EXPECT_EQ(ClosingLine(epochs, "[cuda:0, cuda:1]"),
            "test acc: 0.91, 13.4 sec/epoch on [cuda:0, cuda:1]");
}

}  // namespace
}  // namespace ringlet::trainers
