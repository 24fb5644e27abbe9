#include "trainers/common/loop/training_loop.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>

#include "data/batch_loader.h"
#include "data/data_error.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ringlet::trainers {
namespace {

// Image i has every pixel equal to i % 256 and label i % 10, so the fake
// trainer can tell which images it was given.
data::DatasetPtr MakeSplit(int64_t n) {
  auto split = std::make_shared<data::Split>();
  split->name = "fake";
  for (int64_t i = 0; i < n; ++i) {
    split->pixels.insert(split->pixels.end(), data::kImagePixels,
                         static_cast<uint8_t>(i % 256));
    split->labels.push_back(static_cast<int32_t>(i % 10));
  }
  return data::SplitDataset(std::move(split));
}

// A job the loop drives as it drives the trainers: a real engine
// (parallel/replica_engine.h) on `devices` CPU devices, with a body, a
// reducer and an optimizer of the test's own. The model "predicts" label 0,
// so accuracy is the share of 0s. Its state, one number, follows the
// batches in order (w = w / 2 + the batch's mean label / 1000; the labels
// summed exactly, so the same on any number of devices) and sets the loss
// (2 per image plus w per shard), so a resumed run matches an uninterrupted
// one only if it sees the same batches in the same order from the same
// state. The loop takes it as the engine (the conversion below).
class FakeTrainer {
 public:
  explicit FakeTrainer(int devices);
  operator parallel::ReplicaEngine&() { return *engine_; }
  parallel::ReplicaEngine& engine() { return *engine_; }
  float weight() { return engine_->State(0).tensors.at(0)->data()[0]; }
  int64_t finished() const { return engine_->steps_finished(); }
  // "q3" when step 3 was queued, "f3" once the loop finished it, in order
  // (a finish is seen at the next queue, or here).
  std::vector<std::string> Log() {
    LogFinishedSteps();
    return log_;
  }

  std::vector<double> lrs;  // Every rate set, in order.
  double loss_per_image = 2.0;
  int steps = 0;  // Queued (device 0's count).
  std::set<int32_t> seen_labels;
  double pixel_sum = 0;      // Of every training image's first pixel.
  int diverge_at_step = -1;  // Device 1's loss becomes NaN.
  int drift_at_step = -1;    // Device 1's w moves off the others'.
  int comparisons = 0;       // Reads of device 0's state (replica checks).
  int stop_at_step = -1;
  volatile std::sig_atomic_t* stop = nullptr;
  int out_of_memory_at_step = -1;
  nn::MemoryShortage shortage;
  std::mutex mu;             // Replicas run on threads of their own.
  int device_steps[8] = {};  // Each device's, counted on its own thread.

 private:
  class Body;
  class Reducer;
  class Optimizer;
  void LogFinishedSteps() {
    while (logged_finished_ < engine_->steps_finished()) {
      log_.push_back("f" + std::to_string(++logged_finished_));
    }
  }

  std::vector<std::string> log_;
  int64_t logged_finished_ = 0;
  std::map<const nn::Tensor*, int> device_of_;  // Each replica's w.
  std::unique_ptr<parallel::ReplicaEngine> engine_;
};

class FakeTrainer::Body : public parallel::ReplicaBody {
 public:
  Body(FakeTrainer* t, int device) : t_(t), device_(device), w_({1}), g_({1}) {
    std::lock_guard<std::mutex> lock(t->mu);
    t->device_of_[&w_] = device;
  }
  nn::Tensor Forward(const nn::Tensor& x, bool training) override {
    if (training && device_ == 0 &&
        t_->device_steps[0] == t_->out_of_memory_at_step) {
      throw nn::OutOfMemory(t_->shortage);
    }
    x_ = x;
    training_ = training;
    // Ten zero logits: every prediction is class 0 (the first maximum),
    // as the loss counts correct ones.
    return nn::Tensor({x.dim(0), 10});
  }
  nn::PendingLoss Loss(const nn::Tensor& output,
                       const data::Shard& s) override {
    EXPECT_EQ(s.inputs.shape, (std::vector<int64_t>{1, 28, 28}));
    nn::LossResult r;
    r.dlogits = nn::Tensor(output.shape());
    std::vector<int32_t> storage;
    const int32_t* labels = data::ClassIds(s, "test", &storage);
    for (int64_t i = 0; i < s.count; ++i) r.correct += labels[i] == 0;
    r.loss = t_->loss_per_image * s.count + w_.data()[0];
    if (training_) {
      std::lock_guard<std::mutex> lock(t_->mu);
      for (int64_t i = 0; i < s.count; ++i) {
        t_->seen_labels.insert(labels[i]);
        t_->pixel_sum += x_.data()[i * data::kImagePixels];
        label_sum_ += labels[i];
      }
      if (device_ == 1 && t_->device_steps[1] == t_->diverge_at_step) {
        r.loss = NAN;
      }
    }
    return nn::PendingLoss::Ready(std::move(r));
  }
  void Backward(const nn::Tensor&) override {
    g_.data()[0] += static_cast<float>(label_sum_);
    label_sum_ = 0;
  }
  void ZeroGrad() override { g_.data()[0] = 0; }
  parallel::NamedValues Parameters() override { return {{"w"}, {&w_}}; }
  std::vector<nn::Tensor*> Gradients() override { return {&g_}; }
  bool GradientsAreSums() const override { return true; }

 private:
  FakeTrainer* t_;
  int device_;
  nn::Tensor w_, g_, x_;
  bool training_ = false;
  int64_t label_sum_ = 0;
};

// Sums the gradient over the devices; device 0 counts and logs the steps.
class FakeTrainer::Reducer : public parallel::GradientReducer {
 public:
  Reducer(FakeTrainer* t, const parallel::ReducerContext& c)
      : t_(t), device_(c.device), comm_(*c.comm) {}
  void BeginStep(const parallel::StepPlan&) override {
    ++t_->device_steps[device_];
    if (device_ != 0) return;
    t_->LogFinishedSteps();
    ++t_->steps;
    t_->log_.push_back("q" + std::to_string(t_->steps));
    if (t_->steps == t_->stop_at_step) *t_->stop = SIGTERM;
  }
  double Reduce(const std::vector<nn::Tensor*>& grads) override {
    comm_.AllReduce(grads[0]->data(), grads[0]->data(), 1,
                    collectives::DataType::kFloat32,
                    collectives::ReduceOp::kSum);
    return 0;
  }

 private:
  FakeTrainer* t_;
  int device_;
  collectives::Communicator& comm_;
};

class FakeTrainer::Optimizer : public nn::Optimizer {
 public:
  Optimizer(FakeTrainer* t, int device, nn::Tensor* w)
      : t_(t), device_(device), w_(w) {}
  void Step(const std::vector<const nn::Tensor*>& grads,
            const nn::NonFiniteCounts*) override {
    float& w = w_->data()[0];
    w = w * 0.5f + grads[0]->data()[0] / 1000.0f;
    if (device_ == 1 && t_->device_steps[1] == t_->drift_at_step) w += 1.0f;
  }
  void set_lr(float lr) override {
    if (device_ == 0) t_->lrs.push_back(lr);
  }
  std::vector<std::pair<std::string, nn::Tensor*>> State() override {
    // The loop reads the state for checkpoints and replica checks alone.
    if (device_ == 0) ++t_->comparisons;
    return {};
  }

 private:
  FakeTrainer* t_;
  int device_;
  nn::Tensor* w_;
};

FakeTrainer::FakeTrainer(int devices) {
  std::vector<nn::Device> cpus;
  for (int d = 0; d < devices; ++d) cpus.push_back(nn::Device::Cpu(d));
  parallel::ReplicaEngineOptions options;
  options.who = "fake";
  options.make_optimizer = [this](std::vector<nn::Tensor*> values,
                                  std::vector<std::string>) {
    // Each replica's thread makes its own; its w tells which.
    std::lock_guard<std::mutex> lock(mu);
    return std::make_unique<Optimizer>(this, device_of_.at(values.at(0)),
                                       values.at(0));
  };
  options.make_reducer = [this](const parallel::ReducerContext& c) {
    return std::make_unique<Reducer>(this, c);
  };
  engine_ = std::make_unique<parallel::ReplicaEngine>(
      [this](int d) { return std::make_unique<Body>(this, d); }, cpus, options);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int CountLines(const std::string& path) {
  const std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

// The metrics lines without the timings, which differ between runs.
std::string MetricsNumbers(const std::vector<EpochMetrics>& epochs) {
  std::string out;
  for (const EpochMetrics& m : epochs) {
    char buf[200];
    std::snprintf(buf, sizeof(buf), "%d %.17g %.17g %.17g\n", m.epoch, m.loss,
                  m.train_acc, m.test_acc);
    out += buf;
  }
  return out;
}

TEST(TrainingLoopTest, VisitsEveryImageSplitAcrossDevicesAndReports) {
  const data::DatasetPtr train = MakeSplit(100), test = MakeSplit(30);
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
    EXPECT_NEAR(m.loss, 2.0, 0.01);  // Plus the fake's w per batch.
    EXPECT_DOUBLE_EQ(m.train_acc, 0.1);
    EXPECT_DOUBLE_EQ(m.test_acc, 0.1);
    EXPECT_GT(m.images_per_sec, 0);
  }
  EXPECT_NE(out.str().find("epoch 2/2: loss 2.0"), std::string::npos)
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

TEST(TrainingLoopTest, AClassifiersConfusionMatrixEndsTheMetrics) {
  const data::DatasetPtr train = MakeSplit(40), test = MakeSplit(30);
  FakeTrainer trainer(2);
  LoopOptions options;
  options.epochs = 2;
  options.batch_size = 8;
  options.classes = 10;
  options.metrics_out = ::testing::TempDir() + "/confusion.jsonl";
  options.plot_out = ::testing::TempDir() + "/confusion_plot.svg";
  std::ostringstream out, progress;
  TrainEpochs(trainer, train, test, options, out, progress);
  std::ifstream metrics(options.metrics_out);
  std::vector<std::string> lines;
  for (std::string line; std::getline(metrics, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 3u);  // Two epochs, then the latest matrix.
  EXPECT_EQ(FromJsonLine(lines[1]).epoch, 2);
  const nlohmann::json c = nlohmann::json::parse(lines[2]).at("confusion");
  EXPECT_EQ(c.at("epoch"), 2);
  // Every image predicted 0; the 30 test images hold 3 of each class.
  for (int t = 0; t < 10; ++t) {
    EXPECT_EQ(c.at("matrix")[t][0], 3) << t;
    EXPECT_EQ(c.at("matrix")[t][1], 0) << t;
  }
  EXPECT_EQ(c.at("per_class_accuracy")[0], 1.0);
  EXPECT_NE(out.str().find("lowest per-class test acc: 1 0.00, 2 0.00"),
            std::string::npos)
      << out.str();
  EXPECT_NE(ReadFile(::testing::TempDir() + "/confusion_plot_confusion.svg")
                .find("</svg>"),
            std::string::npos);
}

TEST(TrainingLoopTest, TheScheduleSetsEveryStepsRateAndOutputsFollow) {
  const data::DatasetPtr train = MakeSplit(100), test = MakeSplit(30);
  FakeTrainer trainer(2);
  LoopOptions options;
  options.epochs = 2;
  options.batch_size = 16;  // 7 steps an epoch.
  options.schedule.kind = "step";
  options.schedule.base_lr = 0.5;
  options.schedule.warmup_epochs = 0.5;  // 3.5 -> 4 warmup steps.
  options.csv_out = ::testing::TempDir() + "/metrics.csv";
  options.metrics_out = ::testing::TempDir() + "/run.jsonl";
  options.run_line = "{\"run\":{\"program\":\"fake\"}}";
  std::ostringstream out, progress;
  const std::vector<EpochMetrics> epochs =
      TrainEpochs(trainer, train, test, options, out, progress);
  ASSERT_EQ(trainer.lrs.size(), 14u);
  EXPECT_DOUBLE_EQ(trainer.lrs[0], 0.5 / 4);
  EXPECT_DOUBLE_EQ(trainer.lrs[3], 0.5);
  EXPECT_DOUBLE_EQ(trainer.lrs[6], 0.5);
  EXPECT_FLOAT_EQ(trainer.lrs[7], 0.05);  // Epoch 2 of 2: past half.
  // Evaluation is timed and shown.
  EXPECT_GT(epochs[0].eval_seconds, 0);
  EXPECT_NE(progress.str().find("eval 1/2 ["), std::string::npos);
  EXPECT_NE(progress.str().find(" loss "), std::string::npos);
  EXPECT_EQ(CountLines(options.csv_out), 3);
  std::ifstream jsonl(options.metrics_out);
  std::string first;
  std::getline(jsonl, first);
  EXPECT_EQ(first, options.run_line);
  EXPECT_EQ(CountLines(options.metrics_out), 3);
}

// --lr=1e10 once trained on NaN to the end and exited 0.
TEST(TrainingLoopTest, DivergenceStopsAtOnceNamingEpochStepAndDevice) {
  const data::DatasetPtr train = MakeSplit(100), test = MakeSplit(30);
  FakeTrainer trainer(2);
  trainer.diverge_at_step = 10;  // 7 steps an epoch: epoch 2, step 3.
  LoopOptions options;
  options.epochs = 5;
  options.batch_size = 16;
  options.metrics_out = ::testing::TempDir() + "/diverged.jsonl";
  options.plot_out = ::testing::TempDir() + "/diverged.svg";
  std::ostringstream out, progress;
  try {
    TrainEpochs(trainer, train, test, options, out, progress);
    FAIL() << "expected TrainingDiverged";
  } catch (const TrainingDiverged& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "training diverged at epoch 2, step 3: the loss became nan "
                  "on cpu:1; try a smaller --lr",
                  0),
              0u)
        << e.what();
  }
  // Step 11 was queued before step 10's statistics were read (a GPU
  // computes it meanwhile); the loop stops before queuing step 12.
  EXPECT_EQ(trainer.steps, 11);
  EXPECT_EQ(trainer.finished(), 10);
  EXPECT_EQ(CountLines(options.metrics_out), 1);  // Epoch 1 kept.
  EXPECT_NE(ReadFile(options.plot_out).find("</svg>"), std::string::npos);
}

// One step in flight: step t + 1 is queued before step t is finished, and
// an epoch ends with every step finished (its metrics need them all).
TEST(TrainingLoopTest, TheNextStepIsQueuedBeforeTheLastOneIsFinished) {
  FakeTrainer trainer(2);
  LoopOptions options;
  options.epochs = 2;
  options.batch_size = 16;  // 3 steps an epoch.
  options.replica_check_every = 0;
  std::ostringstream out, progress;
  const std::vector<EpochMetrics> epochs =
      TrainEpochs(trainer, MakeSplit(40), MakeSplit(8), options, out, progress);
  EXPECT_EQ(trainer.Log(),
            (std::vector<std::string>{"q1", "q2", "f1", "q3", "f2", "f3", "q4",
                                      "q5", "f4", "q6", "f5", "f6"}));
  ASSERT_EQ(epochs.size(), 2u);
  // Every image of each epoch counted (40 a epoch; the fake "predicts" 0).
  EXPECT_DOUBLE_EQ(epochs[0].train_acc, 4.0 / 40);
  EXPECT_GT(epochs[0].loss, 2.0);  // loss_per_image plus w per batch.

  // --overlap_steps=false: each step finished before the next is queued,
  // the same numbers.
  FakeTrainer waiting(2);
  options.overlap_steps = false;
  const std::vector<EpochMetrics> same =
      TrainEpochs(waiting, MakeSplit(40), MakeSplit(8), options, out, progress);
  EXPECT_EQ(waiting.Log(),
            (std::vector<std::string>{"q1", "f1", "q2", "f2", "q3", "f3", "q4",
                                      "f4", "q5", "f5", "q6", "f6"}));
  EXPECT_EQ(MetricsNumbers(same), MetricsNumbers(epochs));
}

TEST(TrainingLoopTest, AnInfiniteLossStopsNamingTheDevice) {
  FakeTrainer trainer(1);
  trainer.loss_per_image = std::numeric_limits<double>::infinity();
  LoopOptions options;
  options.epochs = 1;
  options.batch_size = 16;
  std::ostringstream out, progress;
  try {
    TrainEpochs(trainer, MakeSplit(40), MakeSplit(8), options, out, progress);
    FAIL() << "expected TrainingDiverged";
  } catch (const TrainingDiverged& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "epoch 1, step 1: the loss became inf on cpu:0"),
              std::string::npos)
        << e.what();
  }
}

TEST(TrainingLoopTest, ReplicasAreComparedEveryNStepsAndADifferenceStops) {
  const data::DatasetPtr train = MakeSplit(100), test = MakeSplit(30);
  FakeTrainer quiet(3);
  LoopOptions options;
  options.epochs = 2;
  options.batch_size = 16;  // 14 steps in all.
  options.replica_check_every = 3;
  std::ostringstream out, progress;
  TrainEpochs(quiet, train, test, options, out, progress);
  EXPECT_EQ(quiet.comparisons, 4);  // Steps 3, 6, 9, 12.

  FakeTrainer drifting(3);
  drifting.drift_at_step = 8;  // Seen at step 9: epoch 2, step 2.
  try {
    TrainEpochs(drifting, train, test, options, out, progress);
    FAIL() << "expected ReplicasDiffer";
  } catch (const ReplicasDiffer& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "after epoch 2, step 2: replica of rank 1 differs from "
                  "rank 0's in w",
                  0),
              0u)
        << e.what();
  }
  FakeTrainer unchecked(3);
  options.replica_check_every = 0;
  TrainEpochs(unchecked, train, test, options, out, progress);
  EXPECT_EQ(unchecked.comparisons, 0);
}

struct RunResult {
  std::vector<EpochMetrics> epochs;
  float weight = 0;
};

// Trains `epochs` epochs of a fresh FakeTrainer on `devices` devices,
// resuming from `checkpoint` when not empty, writing one to `save`.
RunResult TrainFake(int devices, int epochs, const std::string& resume,
                    const std::string& save, int stop_at_step = -1,
                    const std::function<void(LoopOptions*)>& more = nullptr,
                    std::string* printed = nullptr) {
  FakeTrainer trainer(devices);
  volatile std::sig_atomic_t stop = 0;
  trainer.stop = &stop;
  trainer.stop_at_step = stop_at_step;
  LoopOptions options;
  options.epochs = epochs;
  options.batch_size = 16;
  options.seed = 3;
  options.settings = {{"program", "fake", true}};
  options.checkpoint_path = save;
  options.stop = &stop;
  if (!resume.empty()) {
    options.resume = std::make_shared<const Checkpoint>(ReadCheckpoint(resume));
    options.resume_path = resume;
  }
  if (more) more(&options);
  std::ostringstream out, progress;
  RunResult result;
  try {
    result.epochs = TrainEpochs(trainer, MakeSplit(100), MakeSplit(30), options,
                                out, progress);
  } catch (...) {
    if (printed != nullptr) *printed = out.str();
    throw;
  }
  if (printed != nullptr) *printed = out.str();
  result.weight = trainer.weight();
  return result;
}

TEST(TrainingLoopTest, TwoPlusTwoEpochsEqualFourBitForBit) {
  const std::string ckpt = ::testing::TempDir() + "/two.ckpt";
  const RunResult straight = TrainFake(2, 4, "", "");
  const RunResult first = TrainFake(2, 2, "", ckpt);
  ASSERT_EQ(first.epochs.size(), 2u);
  const RunResult resumed = TrainFake(2, 4, ckpt, ckpt);
  EXPECT_EQ(resumed.weight, straight.weight);
  ASSERT_EQ(resumed.epochs.size(), 4u);  // The first two from the checkpoint.
  EXPECT_EQ(MetricsNumbers(resumed.epochs), MetricsNumbers(straight.epochs));
  // On another number of devices the same batches make the same state here
  // (the fake's step does not depend on the split).
  const RunResult on_three = TrainFake(3, 4, ckpt, "");
  EXPECT_EQ(on_three.weight, straight.weight);
}

// The fake's accuracy never changes: epoch 1 stays the best, so
// --early_stop=2 ends the run after epoch 3, and a resumed run trains
// nothing.
TEST(TrainingLoopTest, TheBestEpochIsKeptAndTheRunStopsEarly) {
  const std::string dir = ::testing::TempDir();
  const std::string ckpt = dir + "/early.ckpt", best = dir + "/early.best";
  std::vector<int> kept;
  std::string printed;
  const auto selection = [&](LoopOptions* o) {
    o->validation = MakeSplit(20);
    o->early_stop = 2;
    o->best_checkpoint_path = best;
    o->on_best = [&](const EpochMetrics& m) { kept.push_back(m.epoch); };
  };
  const RunResult run = TrainFake(2, 6, "", ckpt, -1, selection, &printed);
  ASSERT_EQ(run.epochs.size(), 3u);
  EXPECT_EQ(kept, std::vector<int>{1});
  EXPECT_NE(printed.find("early stop after epoch 3: validation acc has not "
                         "improved on epoch 1's 0.100 for 2 epochs"),
            std::string::npos)
      << printed;
  EXPECT_EQ(ReadCheckpoint(best).position.epoch, 2);
  EXPECT_EQ(ReadCheckpoint(ckpt).position.epoch, 4);
  std::string again;
  const RunResult resumed = TrainFake(2, 6, ckpt, "", -1, selection, &again);
  EXPECT_EQ(resumed.epochs.size(), 3u);
  EXPECT_NE(again.find("nothing to train: early stop after epoch 3"),
            std::string::npos)
      << again;
  EXPECT_EQ(kept, std::vector<int>{1});
}

TEST(TrainingLoopTest, SignalMidEpochCheckpointsAndResumesBitForBit) {
  const std::string ckpt = ::testing::TempDir() + "/signal.ckpt";
  const RunResult straight = TrainFake(2, 3, "", "");
  try {
    TrainFake(2, 3, "", ckpt, /*stop_at_step=*/9);  // Epoch 2, step 2.
    FAIL() << "expected TrainingInterrupted";
  } catch (const TrainingInterrupted& e) {
    EXPECT_EQ(e.signal(), SIGTERM);
    EXPECT_NE(std::string(e.what()).find(
                  "stopped by SIGTERM after epoch 2, step 2; checkpoint "
                  "written to " +
                  ckpt),
              std::string::npos)
        << e.what();
  }
  const Checkpoint saved = ReadCheckpoint(ckpt);
  EXPECT_EQ(saved.position.epoch, 2);
  EXPECT_EQ(saved.position.steps, 2);
  EXPECT_EQ(saved.history.size(), 1u);
  const RunResult resumed = TrainFake(2, 3, ckpt, "");
  EXPECT_EQ(resumed.weight, straight.weight);
  EXPECT_EQ(MetricsNumbers(resumed.epochs), MetricsNumbers(straight.epochs));
}

// TrainFake's options: `epochs` epochs in batches of 16, checkpointed to
// `checkpoint`.
LoopOptions CheckpointedOptions(int epochs, const std::string& checkpoint) {
  LoopOptions options;
  options.epochs = epochs;
  options.batch_size = 16;
  options.seed = 3;
  options.settings = {{"program", "fake", true}};
  options.checkpoint_path = checkpoint;
  return options;
}

// The training images of MakeSplit(n), whose reads fail from the
// `fail_from`-th on (a file cut short while it is read in place) while
// `failing` holds.
class BreakingSplit : public data::Dataset {
 public:
  BreakingSplit(int64_t n, int64_t fail_from, const bool* failing)
      : split_(MakeSplit(n)), fail_from_(fail_from), failing_(failing) {}
  int64_t size() const override { return split_->size(); }
  const data::SampleSpec& input() const override { return split_->input(); }
  const data::SampleSpec& target() const override { return split_->target(); }
  void Read(int64_t i, void* input, void* target) const override {
    if (*failing_ && reads_++ >= fail_from_) {
      throw data::DataError("train.npy: the file is shorter than it was");
    }
    split_->Read(i, input, target);
  }

 private:
  const data::DatasetPtr split_;
  const int64_t fail_from_;
  const bool* failing_;
  mutable std::atomic<int64_t> reads_{0};
};

// Before: the loader's thread ended the process (std::terminate) and the
// steps since the last epoch were lost.
TEST(TrainingLoopTest, AReadErrorMidRunCheckpointsTheLastStepAndResumes) {
  const std::string ckpt = ::testing::TempDir() + "/read_error.ckpt";
  const RunResult straight = TrainFake(2, 3, "", "");
  bool failing = true;
  // 7 batches of 16 an epoch: read 150 is in epoch 2, batch 4.
  auto breaking = std::make_shared<BreakingSplit>(100, 150, &failing);
  FakeTrainer trainer(2);
  const LoopOptions options = CheckpointedOptions(3, ckpt);
  std::ostringstream out, progress;
  try {
    TrainEpochs(trainer, breaking, MakeSplit(30), options, out, progress);
    FAIL() << "expected the read error";
  } catch (const data::DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "train.npy: the file is shorter than it was; checkpoint written "
              "to " +
                  ckpt +
                  " at epoch 2, step 3: restore the data, then "
                  "continue with the same flags and --resume");
  }
  const Checkpoint saved = ReadCheckpoint(ckpt);
  EXPECT_EQ(saved.position.epoch, 2);
  EXPECT_EQ(saved.position.steps, 3);
  EXPECT_EQ(trainer.finished(), trainer.steps);
  failing = false;  // The data restored.
  const RunResult resumed = TrainFake(2, 3, ckpt, "");
  EXPECT_EQ(resumed.weight, straight.weight);
  EXPECT_EQ(MetricsNumbers(resumed.epochs), MetricsNumbers(straight.epochs));
}

// A test set that fails to read at the epoch's evaluation: the epoch's
// training is checkpointed whole, and the resumed run evaluates and goes
// on as if nothing happened.
TEST(TrainingLoopTest, AReadErrorInTheEvaluationCheckpointsTheEpoch) {
  const std::string ckpt = ::testing::TempDir() + "/eval_error.ckpt";
  const RunResult straight = TrainFake(2, 2, "", "");
  bool failing = true;
  FakeTrainer trainer(2);
  const LoopOptions options = CheckpointedOptions(2, ckpt);
  std::ostringstream out, progress;
  EXPECT_THROW(TrainEpochs(trainer, MakeSplit(100),
                           std::make_shared<BreakingSplit>(30, 0, &failing),
                           options, out, progress),
               data::DataError);
  const Checkpoint saved = ReadCheckpoint(ckpt);
  EXPECT_EQ(saved.position.epoch, 1);
  EXPECT_EQ(saved.position.steps, 7);  // 100 images in batches of 16.
  failing = false;
  const RunResult resumed = TrainFake(2, 2, ckpt, "");
  EXPECT_EQ(resumed.weight, straight.weight);
  EXPECT_EQ(MetricsNumbers(resumed.epochs), MetricsNumbers(straight.epochs));
}

// A closed stdout (`| head -1`) or a full disk: the run stops after the
// step as on a signal, checkpoint written, instead of dying of SIGPIPE or
// training on with every line lost.
TEST(TrainingLoopTest, OutputThatCannotBeWrittenStopsTheRunLikeASignal) {
  const std::string ckpt = ::testing::TempDir() + "/lost_output.ckpt";
  FakeTrainer trainer(2);
  LoopOptions options = CheckpointedOptions(2, ckpt);
  options.output_failure = [] {
    return std::string("standard output could not be written (Broken pipe)");
  };
  std::ostringstream out, progress;
  out.setstate(std::ios::badbit);
  try {
    TrainEpochs(trainer, MakeSplit(100), MakeSplit(30), options, out, progress);
    FAIL() << "expected TrainingInterrupted";
  } catch (const TrainingInterrupted& e) {
    EXPECT_EQ(e.signal(), SIGPIPE);
    EXPECT_EQ(std::string(e.what()),
              "standard output could not be written (Broken pipe); stopped "
              "after epoch 1, step 1; checkpoint written to " +
                  ckpt + "; continue with the same flags and --resume");
  }
  EXPECT_EQ(ReadCheckpoint(ckpt).position.steps, 1);
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The metrics file's lines without the run line and the times, which
// differ between runs.
std::vector<std::string> RecordsOf(const std::string& path) {
  std::vector<std::string> records;
  std::istringstream lines(ReadText(path));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("{\"run\"", 0) == 0) continue;
    const size_t seconds = line.find("\"seconds\"");
    records.push_back(line.substr(0, seconds));
  }
  return records;
}

TEST(TrainingLoopTest, AResumedRunKeepsTheEvaluationsWrittenBeforeTheStop) {
  const std::string dir = ::testing::TempDir();
  const std::string ckpt = dir + "/evals.ckpt";
  auto with_metrics = [](const std::string& path) {
    return [path](LoopOptions* o) {
      o->eval_every = 3;
      o->metrics_out = path;
    };
  };
  TrainFake(2, 3, "", "", -1, with_metrics(dir + "/straight.jsonl"));
  try {
    TrainFake(2, 3, "", ckpt, /*stop_at_step=*/9,
              with_metrics(dir + "/resumed.jsonl"));
    FAIL() << "expected TrainingInterrupted";
  } catch (const TrainingInterrupted&) {
  }
  EXPECT_EQ(ReadCheckpoint(ckpt).evals.size(), 3u);  // Steps 3, 6 and 9.
  TrainFake(2, 3, ckpt, "", -1, with_metrics(dir + "/resumed.jsonl"));
  const std::vector<std::string> straight = RecordsOf(dir + "/straight.jsonl");
  EXPECT_EQ(RecordsOf(dir + "/resumed.jsonl"), straight);
  // 7 steps an epoch, an evaluation every 3: 7 of them, and 3 epochs.
  EXPECT_EQ(straight.size(), 10u);
}

TEST(TrainingLoopTest, AFinishedCheckpointSaysSoAndWritesTheOutputs) {
  const std::string dir = ::testing::TempDir();
  const std::string ckpt = dir + "/done.ckpt";
  TrainFake(2, 2, "", ckpt);
  std::string printed;
  const RunResult again = TrainFake(
      2, 2, ckpt, "", -1,
      [&](LoopOptions* o) {
        o->metrics_out = dir + "/done.jsonl";
        o->csv_out = dir + "/done.csv";
        o->plot_out = dir + "/done.svg";
      },
      &printed);
  EXPECT_NE(printed.find("nothing to train: the checkpoint's run has finished "
                         "2 epochs and --epochs is 2; raise --epochs"),
            std::string::npos)
      << printed;
  EXPECT_EQ(again.epochs.size(), 2u);
  EXPECT_EQ(RecordsOf(dir + "/done.jsonl").size(), 2u);
  EXPECT_NE(ReadText(dir + "/done.csv").find("\n2,"), std::string::npos);
  EXPECT_NE(ReadText(dir + "/done.svg").find("<svg"), std::string::npos);
}

nn::MemoryShortage GpuShortage() {
  nn::MemoryShortage s;
  s.where = "cuda:0";
  s.held = int64_t{70} << 30;
  s.requested = int64_t{10} << 30;
  s.free = int64_t{2} << 30;
  s.total = int64_t{80} << 30;
  return s;
}

TEST(OutOfMemoryAdvice, ScalesTheShardByTheMemoryThereWas) {
  // (70 + 2) / (70 + 10) of 8 per device: 7 per device, 14 in all.
  EXPECT_EQ(OutOfMemoryAdvice(GpuShortage(), 16, 2),
            "a batch of 16 (8 per device) did not fit, nor would one above 14 "
            "(scaling what the step held when memory ran out): use a smaller "
            "--batch_size, or more devices");
  nn::MemoryShortage unknown = GpuShortage();
  unknown.free = -1;
  EXPECT_EQ(OutOfMemoryAdvice(unknown, 16, 2),
            "a batch of 16 (8 per device) did not fit: use a smaller "
            "--batch_size, or more devices");
  // A shard of 1 that does not fit: no batch would.
  EXPECT_EQ(OutOfMemoryAdvice(GpuShortage(), 1, 1),
            "a batch of 1 (1 per device) did not fit: use a smaller "
            "--batch_size, or more devices");
}

// Memory running out in epoch 2 ends the run with one error saying where,
// how much and what to do; epoch 1's checkpoint and metrics stay.
TEST(TrainingLoopTest, OutOfMemoryEndsTheRunSayingWhatWouldFit) {
  const data::DatasetPtr train = MakeSplit(100), test = MakeSplit(30);
  FakeTrainer trainer(2);
  trainer.out_of_memory_at_step = 10;  // Epoch 2.
  trainer.shortage = GpuShortage();
  LoopOptions options;
  options.epochs = 3;
  options.batch_size = 16;
  options.checkpoint_path = ::testing::TempDir() + "/oom.ckpt";
  options.metrics_out = ::testing::TempDir() + "/oom.jsonl";
  std::ostringstream out, progress;
  try {
    TrainEpochs(trainer, train, test, options, out, progress);
    FAIL() << "expected TrainingOutOfMemory";
  } catch (const TrainingOutOfMemory& e) {
    EXPECT_EQ(std::string(e.what()),
              "cuda:0 is out of memory: asked for 10.00 GiB with 2.00 GiB "
              "free of 80.00 GiB; this process held 70.00 GiB there; a batch "
              "of 16 (8 per device) did not fit, nor would one above 14 "
              "(scaling what the step held when memory ran out): use a "
              "smaller --batch_size, or more devices");
  }
  const Checkpoint saved = ReadCheckpoint(options.checkpoint_path);
  EXPECT_EQ(saved.position.epoch, 2);
  EXPECT_EQ(saved.history.size(), 1u);
  EXPECT_EQ(CountLines(options.metrics_out), 1);
}

TEST(TrainingLoopTest, ACheckpointOfAnotherRunIsRefused) {
  const std::string ckpt = ::testing::TempDir() + "/other.ckpt";
  TrainFake(2, 1, "", ckpt);
  FakeTrainer trainer(2);
  LoopOptions options;
  options.epochs = 2;
  options.settings = {{"program", "another", true}};
  options.resume = std::make_shared<const Checkpoint>(ReadCheckpoint(ckpt));
  options.resume_path = ckpt;
  std::ostringstream out, progress;
  EXPECT_THROW(TrainEpochs(trainer, MakeSplit(100), MakeSplit(30), options, out,
                           progress),
               CheckpointError);
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
