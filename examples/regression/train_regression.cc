// Regression with a model of your own: a perceptron written here, trained
// with DataParallel and a mean-squared-error loss on float targets read
// from .npy files. What a user writes for their own data.
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

// d inputs -> 64 hidden (ReLU) -> k outputs.
class Perceptron : public nn::Module {
 public:
  Perceptron(int64_t d, int64_t k) : hidden_(d, 64), out_(64, k) {}
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

data::DatasetPtr Load(const std::string& dir, const std::string& split) {
  data::Array inputs = data::ReadNpy(dir + "/" + split + "_inputs.npy");
  data::Array targets = data::ReadNpy(dir + "/" + split + "_targets.npy");
  return data::ArrayDataset(dir + "/" + split + "_*.npy", std::move(inputs),
                            std::move(targets));
}

int Main(int argc, char** argv) {
  CLI::App app(
      "Fits a perceptron of its own to float targets read from .npy files, "
      "with DataParallel, AdamW and a mean-squared-error loss.",
      "train_regression");
  ringlet::cli::UseConventions(app);
  std::string data_dir, make_data, devices_text = "cpu:2";
  int epochs = 20;
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
  RINGLET_PARSE_FLAGS(app, argc, argv);
  if (!make_data.empty()) {
    MakeData(make_data);
    return 0;
  }
  if (data_dir.empty()) {
    throw std::invalid_argument(
        "--data_dir is needed (or --make_data=DIR to write a data set first)");
  }
  const data::DatasetPtr train = Load(data_dir, "train");
  const data::DatasetPtr test = Load(data_dir, "test");
  if (train->input().shape.size() != 1 || train->target().shape.size() != 1 ||
      !(train->input() == test->input()) ||
      !(train->target() == test->target())) {
    throw data::DataError(data_dir +
                          ": inputs [n, d] and targets [n, k], the "
                          "same d and k in both splits; got " +
                          train->input().Describe() + " -> " +
                          train->target().Describe());
  }
  const int64_t d = train->input().shape[0], k = train->target().shape[0];
  const std::vector<nn::Device> devices = nn::ResolveDevices(
      devices_text,
      static_cast<int>(ringlet::gpu::ProbeCudaDevices().usable.size()));
  parallel::DataParallelOptions options;
  options.loss = parallel::MeanSquaredErrorLoss();
  options.optimizer.name = "adamw";
  options.optimizer.lr = 3e-3f;
  parallel::DataParallel dp(
      [d, k] {
        auto model = std::make_unique<Perceptron>(d, k);
        nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, /*seed=*/0);
        return model;
      },
      devices, options);
  data::LoaderOptions train_order, test_order;
  train_order.batch_size = test_order.batch_size = 128;
  // Cut as DataParallel runs them: one shard per device.
  train_order.layout = dp.TrainLayout();
  test_order.layout = dp.EvalLayout();
  test_order.shuffle = false;
  data::BatchLoader train_batches(train, train_order);
  data::BatchLoader test_batches(test, test_order);
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
                loss / train->size(), test_loss / test->size());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("train_regression",
                               [&] { return Main(argc, argv); });
}
