#include "trainers/common/outputs/parameter_file.h"

#include <cmath>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "trainers/common/outputs/safetensors.h"

namespace ringlet::trainers {
namespace {

// An engine on one CPU device whose state is two model tensors, w and b,
// and one optimizer buffer, b.momentum, all held here. The loaders take it
// as the engine (the conversion below).
class StateOnlyTrainer {
 public:
  StateOnlyTrainer() : w_({2, 3}), b_({3}), v_({3}) {
    for (int i = 0; i < 6; ++i) w_.data()[i] = i + 1;
    for (int i = 0; i < 3; ++i) b_.data()[i] = -i;
    for (int i = 0; i < 3; ++i) v_.data()[i] = 0.5f;
    parallel::ReplicaEngineOptions options;
    options.who = "state only";
    options.make_optimizer = [this](std::vector<nn::Tensor*>,
                                    std::vector<std::string>) {
      return std::make_unique<Momentum>(&v_);
    };
    options.make_reducer = [](const parallel::ReducerContext&) {
      return std::make_unique<NoReducer>();
    };
    engine_ = std::make_unique<parallel::ReplicaEngine>(
        [this](int) { return std::make_unique<Body>(this); },
        std::vector<nn::Device>{nn::Device::Cpu()}, options);
  }
  operator parallel::ReplicaEngine&() { return *engine_; }
  parallel::NamedTensors State() { return engine_->State(0); }

  nn::Tensor w_, b_, v_;

 private:
  class Body : public parallel::ReplicaBody {
   public:
    explicit Body(StateOnlyTrainer* t) : t_(t) {}
    nn::Tensor Forward(const nn::Tensor& x, bool) override { return x; }
    nn::PendingLoss Loss(const nn::Tensor&, const data::Shard&) override {
      return nn::PendingLoss::Ready({});
    }
    void Backward(const nn::Tensor&) override {}
    void ZeroGrad() override {}
    parallel::NamedValues Parameters() override {
      return {{"w", "b"}, {&t_->w_, &t_->b_}};
    }
    std::vector<nn::Tensor*> Gradients() override { return {}; }

   private:
    StateOnlyTrainer* t_;
  };
  class Momentum : public nn::Optimizer {
   public:
    explicit Momentum(nn::Tensor* v) : v_(v) {}
    void Step(const std::vector<const nn::Tensor*>&,
              const nn::NonFiniteCounts*) override {}
    void set_lr(float) override {}
    std::vector<std::pair<std::string, nn::Tensor*>> State() override {
      return {{"b.momentum", v_}};
    }

   private:
    nn::Tensor* v_;
  };
  class NoReducer : public parallel::GradientReducer {
   public:
    double Reduce(const std::vector<nn::Tensor*>&) override { return 0; }
  };

  std::unique_ptr<parallel::ReplicaEngine> engine_;
};

std::string Temp(const std::string& name) {
  return ::testing::TempDir() + "/" + name;
}

TEST(ParameterFile, RoundTripsTheModelAndKeepsOptimizerState) {
  StateOnlyTrainer saved;
  WriteParameterFile(Temp("p.params"), "toy", saved.State());
  const Checkpoint file = ReadCheckpoint(Temp("p.params"));
  ASSERT_EQ(file.tensors.size(), 2u);  // No momentum.
  EXPECT_EQ(file.tensors[0].name, "w");
  EXPECT_EQ(file.tensors[0].shape, (std::vector<int64_t>{2, 3}));

  StateOnlyTrainer loaded;
  for (int i = 0; i < 6; ++i) loaded.w_.data()[i] = 0;
  for (int i = 0; i < 3; ++i) loaded.v_.data()[i] = 7;
  LoadParameterFile(loaded, Temp("p.params"), "toy");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(loaded.w_.data()[i], i + 1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loaded.b_.data()[i], -i);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(loaded.v_.data()[i], 7);
}

void ExpectLoadError(const std::string& path, const std::string& model,
                     const std::string& want) {
  StateOnlyTrainer t;
  try {
    LoadParameterFile(t, path, model);
    FAIL() << "expected " << want;
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

TEST(ParameterFile, RefusesWhatDoesNotFit) {
  StateOnlyTrainer t;
  WriteParameterFile(Temp("toy.params"), "toy", t.State());
  ExpectLoadError(Temp("toy.params"), "lenet", "holds a toy");
  ExpectLoadError(Temp("missing.params"), "toy", "--params_in: no file at");

  nn::Tensor other({3, 2});
  WriteParameterFile(Temp("shape.params"), "toy",
                     {{"w", "b"}, {&other, &t.b_}});
  ExpectLoadError(Temp("shape.params"), "toy", "w has shape [3, 2]");
  WriteParameterFile(Temp("short.params"), "toy", {{"w"}, {&t.w_}});
  ExpectLoadError(Temp("short.params"), "toy", "has no tensor b");

  std::ofstream(Temp("raw.params")) << "not a parameter file";
  ExpectLoadError(Temp("raw.params"), "toy",
                  "--params_in: " + Temp("raw.params") +
                      " is neither a .safetensors file nor a ringlet "
                      "checkpoint; give a file written by --params_out");
  // Before: "checkpoint x.npy is not a ringlet checkpoint".
  std::ofstream(Temp("x.npy")) << "\x93NUMPY\x01\x00";
  ExpectLoadError(Temp("x.npy"), "toy", "(it is a NumPy .npy file)");
}

TEST(ParameterFile, RefusesValuesNoModelHoldsNamingTheFirstBadTensor) {
  StateOnlyTrainer t;
  t.b_.data()[2] = std::nanf("");
  WriteParameterFile(Temp("nan.params"), "toy", t.State());
  ExpectLoadError(Temp("nan.params"), "toy",
                  "--params_in: " + Temp("nan.params") +
                      ": tensor b holds nan at element 2 of 3; a model's "
                      "values must be finite");
  t.b_.data()[2] = 0;
  t.w_.data()[0] = -INFINITY;
  WriteParameterFile(Temp("inf.safetensors"), "toy", t.State());
  ExpectLoadError(Temp("inf.safetensors"), "toy", "tensor w holds -inf");
  // Nothing was loaded from the bad file.
  StateOnlyTrainer kept;
  try {
    LoadParameterFile(kept, Temp("nan.params"), "toy");
  } catch (const CheckpointError&) {
  }
  EXPECT_EQ(kept.b_.data()[2], -2);
}

TEST(ParameterFile, ARunningVarianceBelowZeroIsRefused) {
  CheckpointTensor var{"bn.running_var", {2}, {1.0f, -0.5f}};
  try {
    CheckTensorValues(var, "--params_in: x");
    FAIL() << "a negative variance was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "tensor bn.running_var holds -0.5 at element 1 of 2; a "
                  "variance cannot be negative"),
              std::string::npos)
        << e.what();
  }
  CheckTensorValues({"bn.running_mean", {1}, {-0.5f}}, "x");  // Means may.
}

TEST(ParameterFile, AFolderOrATensorOfAnotherTypeSaysSo) {
  ExpectLoadError(
      ::testing::TempDir(), "toy",
      "--params_in: " + ::testing::TempDir() + " is a folder, not a file");
  Safetensors file;
  file.i64_shapes.push_back({"w", {2, 3}});
  file.i64_values.push_back({1, 2, 3, 4, 5, 6});
  file.f32.push_back({"b", {3}, {0, 0, 0}});
  std::ofstream(Temp("i64.safetensors"), std::ios::binary)
      << EncodeSafetensors(file);
  ExpectLoadError(Temp("i64.safetensors"), "toy",
                  "tensor w is int64 (I64), where this model holds float32");
}

TEST(ParameterFile, TellsOptimizerStateApart) {
  EXPECT_TRUE(IsOptimizerState("conv.weight.momentum"));
  EXPECT_FALSE(IsOptimizerState("momentum"));
  EXPECT_FALSE(IsOptimizerState("bn.running_mean"));
}

}  // namespace
}  // namespace ringlet::trainers
