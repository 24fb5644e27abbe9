// Regression with a model of your own: a perceptron written here, trained
// with DataParallel and a mean-squared-error loss on float targets read
// from .npy files. What a user writes for their own data: inputs are
// standardized by the training set's means and deviations, targets
// centred and scaled by one factor, so any table trains with the same rate
// and the errors print in the targets' own units.
//
//   bazel run //examples/regression:train_regression -- --make_data=/tmp/r
//   bazel run //examples/regression:train_regression -- --data_dir=/tmp/r
//
// --data_dir holds train_inputs.npy [n, d] and train_targets.npy [n, k]
// (float32), and test_inputs.npy, test_targets.npy: with numpy,
// np.save("train_inputs.npy", x.astype("float32")).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "data/batch_loader.h"
#include "data/data_error.h"
#include "data/dataset.h"
#include "data/npy_file.h"
#include "gpu/device_probe.h"
#include "nn/device.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "parallel/data_parallel.h"

namespace {

namespace data = ringlet::data;
namespace nn = ringlet::nn;
namespace parallel = ringlet::parallel;

// d inputs -> `hidden` units (ReLU) -> k outputs.
class Perceptron : public nn::Module {
 public:
  Perceptron(int64_t d, int64_t hidden, int64_t k)
      : hidden_(d, hidden), out_(hidden, k) {}
  nn::Tensor Forward(const nn::Tensor& x) override {
    return out_.Forward(relu_.Forward(hidden_.Forward(x)));
  }
  nn::Tensor Backward(const nn::Tensor& dy) override {
    return hidden_.Backward(relu_.Backward(out_.Backward(dy)));
  }
  std::string kind() const override { return "perceptron"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<nn::Parameter*>* out) override {
    hidden_.CollectParameters(prefix + "hidden", out);
    out_.CollectParameters(prefix + "out", out);
  }
  std::vector<nn::Module*> Children() override {
    return {&hidden_, &relu_, &out_};
  }

 private:
  nn::Linear hidden_;
  nn::ReLU relu_;
  nn::Linear out_;
};

data::Array Floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  data::Array a;
  a.type = data::ElementType::kFloat32;
  a.dims = std::move(dims);
  a.bytes.resize(v.size() * sizeof(float));
  std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

// A data set to start from: 8 inputs in [-1, 1], 2 targets, a smooth
// function of them plus a little noise.
void MakeData(const std::string& dir) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  std::normal_distribution<float> noise(0, 0.01f);
  for (const auto& [split, n] : std::vector<std::pair<std::string, int>>{
           {"train", 4096}, {"test", 512}}) {
    std::vector<float> x(n * 8), y(n * 2);
    for (int i = 0; i < n; ++i) {
      float* xi = &x[i * 8];
      for (int j = 0; j < 8; ++j) xi[j] = u(rng);
      y[i * 2] = std::sin(2 * xi[0]) + xi[1] * xi[2] + noise(rng);
      y[i * 2 + 1] = xi[3] - 0.5f * xi[4] * xi[4] + noise(rng);
    }
    for (const auto& [name, array] :
         {std::pair{"inputs", Floats({n, 8}, x)},
          std::pair{"targets", Floats({n, 2}, y)}}) {
      const std::string path = dir + "/" + split + "_" + name + ".npy";
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) throw data::DataError(path + ": cannot write");
      const std::string bytes = data::NpyBytes(array);
      const bool ok =
          std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
      if (std::fclose(f) != 0 || !ok)
        throw data::DataError(path + ": cannot write");
    }
  }
  std::printf("wrote %s/{train,test}_{inputs,targets}.npy\n", dir.c_str());
}

struct Split {
  data::Array inputs, targets;
};

Split Load(const std::string& dir, const std::string& split) {
  Split s{data::ReadNpy(dir + "/" + split + "_inputs.npy"),
          data::ReadNpy(dir + "/" + split + "_targets.npy")};
  for (const data::Array* a : {&s.inputs, &s.targets}) {
    if (a->type != data::ElementType::kFloat32 || a->dims.size() != 2 ||
        a->dims[0] != s.inputs.dims[0]) {
      throw data::DataError(
          dir + ": " + split +
          " inputs [n, d] and targets [n, k], float32, the same n; got " +
          s.inputs.Describe() + " and " + s.targets.Describe() +
          " (np.save(path, x.astype('float32')); a column y[:, None])");
    }
  }
  return s;
}

float* FloatData(data::Array& a) {
  return reinterpret_cast<float*>(a.bytes.data());
}

// What the training set says about a table's columns: each input's mean
// and deviation, each target's mean, and one scale for every target (the
// root of their mean variance), so a squared error scaled back is exact.
struct Scaling {
  std::vector<double> input_mean, input_std, target_mean;
  double target_scale = 1;
};

Scaling ScalingOf(data::Array& x, data::Array& y) {
  const int64_t n = x.dims[0], d = x.dims[1], k = y.dims[1];
  Scaling s{std::vector<double>(d), std::vector<double>(d, 1),
            std::vector<double>(k)};
  double variance = 0;
  for (int side = 0; side < 2; ++side) {
    data::Array& a = side == 0 ? x : y;
    const int64_t cols = a.dims[1];
    for (int64_t j = 0; j < cols; ++j) {
      double sum = 0, squares = 0;
      for (int64_t i = 0; i < n; ++i) sum += FloatData(a)[i * cols + j];
      const double mean = n > 0 ? sum / n : 0;
      for (int64_t i = 0; i < n; ++i) {
        squares += std::pow(FloatData(a)[i * cols + j] - mean, 2);
      }
      const double var = n > 0 ? squares / n : 0;
      if (side == 0) {
        s.input_mean[j] = mean;
        s.input_std[j] = var > 0 ? std::sqrt(var) : 1;  // A constant column.
      } else {
        s.target_mean[j] = mean;
        variance += var / k;
      }
    }
  }
  s.target_scale = variance > 0 ? std::sqrt(variance) : 1;
  return s;
}

void Apply(const Scaling& s, Split& split) {
  const int64_t n = split.inputs.dims[0], d = split.inputs.dims[1],
                k = split.targets.dims[1];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) {
      float& v = FloatData(split.inputs)[i * d + j];
      v = static_cast<float>((v - s.input_mean[j]) / s.input_std[j]);
    }
    for (int64_t j = 0; j < k; ++j) {
      float& v = FloatData(split.targets)[i * k + j];
      v = static_cast<float>((v - s.target_mean[j]) / s.target_scale);
    }
  }
}

// The test error of predicting the training mean: what to beat.
double MeanPredictionMse(const Scaling& s, Split& test) {
  const int64_t n = test.targets.dims[0], k = test.targets.dims[1];
  double sum = 0;
  for (int64_t i = 0; i < n * k; ++i) {
    sum += std::pow(FloatData(test.targets)[i] - s.target_mean[i % k], 2);
  }
  return n > 0 ? sum / n : 0;
}

int Main(int argc, char** argv) {
  CLI::App app(
      "Fits a perceptron of its own to float targets read from .npy files, "
      "with DataParallel, AdamW and a mean-squared-error loss.",
      "train_regression");
  ringlet::cli::UseConventions(app);
  std::string data_dir, make_data, devices_text = "cpu:2";
  int epochs = 100;
  int64_t batch_size = 32;
  float lr = 3e-3f, weight_decay = 0.5f;
  int64_t hidden = 16;
  app.add_option("--data_dir", data_dir,
                 "folder of train_inputs.npy, train_targets.npy, "
                 "test_inputs.npy, test_targets.npy (float32)");
  app.add_option("--make_data", make_data,
                 "write a synthetic data set of that form into this folder "
                 "and stop");
  app.add_option("--devices", devices_text,
                 "cpu:K (K CPU devices), cpu:I,J or cuda:I,J,...")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "passes over the training set")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_option("--batch_size", batch_size, "samples a step, over all devices")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--lr", lr, "AdamW's learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--weight_decay", weight_decay, "AdamW's decoupled decay")
      ->check(CLI::Range(0.0f, 0.999f))
      ->capture_default_str();
  app.add_option("--hidden", hidden, "the perceptron's hidden units")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  RINGLET_PARSE_FLAGS(app, argc, argv);
  if (!make_data.empty()) {
    MakeData(make_data);
    return 0;
  }
  if (data_dir.empty()) {
    throw std::invalid_argument(
        "--data_dir is needed (or --make_data=DIR to write a data set first)");
  }
  Split train_split = Load(data_dir, "train"),
        test_split = Load(data_dir, "test");
  if (train_split.inputs.dims[1] != test_split.inputs.dims[1] ||
      train_split.targets.dims[1] != test_split.targets.dims[1]) {
    throw data::DataError(data_dir + ": the splits differ: train " +
                          train_split.inputs.Describe() + " -> " +
                          train_split.targets.Describe() + ", test " +
                          test_split.inputs.Describe() + " -> " +
                          test_split.targets.Describe());
  }
  const Scaling scaling = ScalingOf(train_split.inputs, train_split.targets);
  const double mean_mse = MeanPredictionMse(scaling, test_split);
  Apply(scaling, train_split);
  Apply(scaling, test_split);
  // Squared errors of the scaled targets, in the targets' units.
  const double units = scaling.target_scale * scaling.target_scale;
  const data::DatasetPtr train = data::ArrayDataset(
      data_dir + "/train_*.npy", std::move(train_split.inputs),
      std::move(train_split.targets));
  const data::DatasetPtr test =
      data::ArrayDataset(data_dir + "/test_*.npy", std::move(test_split.inputs),
                         std::move(test_split.targets));
  const int64_t d = train->input().shape[0], k = train->target().shape[0];
  const std::vector<nn::Device> devices = nn::ResolveDevices(
      devices_text,
      static_cast<int>(ringlet::gpu::ProbeCudaDevices().usable.size()));
  parallel::DataParallelOptions options;
  options.loss = parallel::MeanSquaredErrorLoss();
  options.optimizer.name = "adamw";
  options.optimizer.lr = lr;
  options.optimizer.weight_decay = weight_decay;
  parallel::DataParallel dp(
      [d, hidden, k] {
        auto model = std::make_unique<Perceptron>(d, hidden, k);
        nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, /*seed=*/0);
        return model;
      },
      devices, options);
  data::LoaderOptions train_order, test_order;
  train_order.batch_size = test_order.batch_size = batch_size;
  // Cut as DataParallel runs them: one shard per device.
  train_order.layout = dp.TrainLayout();
  test_order.layout = dp.EvalLayout();
  test_order.shuffle = false;
  data::BatchLoader train_batches(train, train_order);
  data::BatchLoader test_batches(test, test_order);
  std::printf(
      "%lld training and %lld test rows, %lld inputs -> %lld targets; "
      "predicting the training mean: test mse %.5f\n",
      static_cast<long long>(train->size()),
      static_cast<long long>(test->size()), static_cast<long long>(d),
      static_cast<long long>(k), mean_mse);
  data::Batch batch;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double loss = 0;
    train_batches.StartEpoch(epoch);
    while (train_batches.Next(&batch)) {
      loss += dp.TrainStep(batch.Local()).loss_sum;
    }
    double test_loss = 0;
    test_batches.StartEpoch(0);
    while (test_batches.Next(&batch)) {
      test_loss += dp.Evaluate(batch.Local()).loss_sum;
    }
    std::printf("epoch %d: train mse %.5f, test mse %.5f\n", epoch + 1,
                units * loss / train->size(), units * test_loss / test->size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("train_regression",
                               [&] { return Main(argc, argv); });
}
