// A model of your own, trained with ringlet's DataParallel: a two-layer
// perceptron on Fashion-MNIST over two CPU devices (or the devices named,
// as the trainers' --devices: "cuda:0,1", "cuda:0,0" for two replicas on
// one GPU), with the loss and the optimizer chosen here.
//   bazel run //examples/mlp:train_mlp [-- --devices=cpu:2 --epochs=2]
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "data/batch_loader.h"
#include "gpu/device_probe.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "parallel/data_parallel.h"

namespace data = ringlet::data;
namespace nn = ringlet::nn;
namespace parallel = ringlet::parallel;

// Any nn::Module: nn's layers, composed here.
class Mlp : public nn::Module {
 public:
  nn::Tensor Forward(const nn::Tensor& x) override {
    return out_.Forward(relu_.Forward(hidden_.Forward(flatten_.Forward(x))));
  }
  nn::Tensor Backward(const nn::Tensor& dy) override {
    return flatten_.Backward(
        hidden_.Backward(relu_.Backward(out_.Backward(dy))));
  }
  std::string kind() const override { return "mlp"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<nn::Parameter*>* out) override {
    hidden_.CollectParameters(prefix + "hidden", out);
    out_.CollectParameters(prefix + "out", out);
  }
  std::vector<nn::Module*> Children() override {
    return {&flatten_, &hidden_, &relu_, &out_};
  }

 private:
  nn::Flatten flatten_;
  nn::Linear hidden_{data::kImagePixels, 256};
  nn::ReLU relu_;
  nn::Linear out_{256, data::kNumClasses};
};

int Main(int argc, char** argv) {
  CLI::App app(
      "Trains a two-layer perceptron of its own (an nn::Module written in "
      "this file) on Fashion-MNIST with DataParallel and AdamW.",
      "train_mlp");
  ringlet::cli::UseConventions(app);
  std::string data_dir, devices_text = "cpu:2";
  int epochs = 2;
  app.add_option("--data_dir", data_dir,
                 "Fashion-MNIST folder (default: $FASHION_MNIST_DIR, else " +
                     std::string(data::kDefaultFashionMnistDir) + ")");
  app.add_option("--devices", devices_text,
                 "cpu:K (K CPU devices), cpu:I,J or cuda:I,J,... (a GPU may "
                 "repeat)")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "passes over the training set")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  RINGLET_PARSE_FLAGS(app, argc, argv);
  const std::vector<nn::Device> devices = nn::ResolveDevices(
      devices_text,
      static_cast<int>(ringlet::gpu::ProbeCudaDevices().usable.size()));
  const data::FashionMnist mnist =
      data::LoadFashionMnist(data::ResolveFashionMnistDir(data_dir));
  parallel::DataParallelOptions options;
  options.loss =
      parallel::SoftmaxCrossEntropyLoss();  // Or any parallel::LossFunction.
  options.optimizer.name = "adamw";  // Or options.make_optimizer: your own.
  options.optimizer.lr = 1e-3f;
  parallel::DataParallel dp(
      [] {
        auto model = std::make_unique<Mlp>();
        nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, /*seed=*/0);
        return model;
      },
      devices, options);
  // The loaders cut each batch into one shard per device, as DataParallel
  // runs them; the data says what a sample is (here an image of {1, 28,
  // 28} floats and one class id).
  data::LoaderOptions train_order, test_order;
  train_order.layout = dp.TrainLayout();
  test_order.layout = dp.EvalLayout();
  test_order.shuffle = false;
  data::BatchLoader train(mnist.train, train_order);
  data::BatchLoader test(mnist.test, test_order);
  data::Batch batch;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    double loss = 0, comm = 0, exposed = 0;
    const auto start = std::chrono::steady_clock::now();
    train.StartEpoch(epoch);
    while (train.Next(&batch)) {
      const parallel::TrainStepStats step = dp.TrainStep(batch.Local());
      loss += step.loss_sum;
      comm += step.comm_seconds;
      exposed += step.exposed_comm_seconds;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    int64_t correct = 0;
    test.StartEpoch(0);
    while (test.Next(&batch)) correct += dp.Evaluate(batch.Local()).correct;
    // Gradients reduce in buckets while backward runs: "exposed" is the
    // part of the communication the devices waited for after it.
    std::printf(
        "epoch %d: loss %.4f, test acc %.4f, %.1f s, comm %.1f%% of it "
        "(%.1f%% exposed)\n",
        epoch + 1, loss / mnist.train.size(),
        static_cast<double>(correct) / mnist.test.size(), seconds,
        100 * comm / seconds, 100 * exposed / seconds);
  }
  return 0;
}

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("train_mlp", [&] { return Main(argc, argv); });
}
