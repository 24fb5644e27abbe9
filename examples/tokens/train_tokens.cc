// A model of your own built from the layers a sequence model reaches for:
// Embedding, LayerNorm, GELU and Dropout. Each Fashion-MNIST image is read
// as a sequence of 784 pixel tokens (its grey levels in 16 steps), each
// token embedded, normalised, passed through GELU and dropout, and a
// linear layer reads the whole sequence. Trained with DataParallel over
// two CPU devices (or the devices named, as the trainers' --devices).
//   bazel run //examples/tokens:train_tokens [-- --devices=cpu:2 --epochs=2]
#include <algorithm>
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

constexpr int64_t kLevels = 16;  // Token ids: grey levels 0..15.
constexpr int64_t kWidth = 8;    // Each token's embedding.

class PixelTokens : public nn::Module {
 public:
  explicit PixelTokens(float dropout) : dropout_(dropout) {}
  // ids [N, 784] -> logits [N, 10].
  nn::Tensor Forward(const nn::Tensor& ids) override {
    nn::Tensor h = norm_.Forward(embed_.Forward(ids));
    h = dropout_.Forward(gelu_.Forward(h));
    return out_.Forward(flatten_.Forward(h));
  }
  nn::Tensor Backward(const nn::Tensor& dy) override {
    nn::Tensor g = flatten_.Backward(out_.Backward(dy));
    g = gelu_.Backward(dropout_.Backward(g));
    return embed_.Backward(norm_.Backward(g));
  }
  std::string kind() const override { return "pixel_tokens"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<nn::Parameter*>* out) override {
    embed_.CollectParameters(prefix + "embed", out);
    norm_.CollectParameters(prefix + "norm", out);
    out_.CollectParameters(prefix + "out", out);
  }
  std::vector<nn::Module*> Children() override {
    return {&embed_, &norm_, &gelu_, &dropout_, &flatten_, &out_};
  }

 private:
  nn::Embedding embed_{kLevels, kWidth};
  nn::LayerNorm norm_{kWidth};
  nn::GELU gelu_;
  nn::Dropout dropout_;
  nn::Flatten flatten_;
  nn::Linear out_{data::kImagePixels * kWidth, data::kNumClasses};
};

// The batch's pixels as token ids, in place (floats holding integers, as
// an Embedding takes them), each image a row of ids.
void ToTokens(data::Batch* batch) {
  for (float& v : batch->inputs) {
    v = static_cast<float>(
        std::clamp<int64_t>(static_cast<int64_t>(v * kLevels), 0, kLevels - 1));
  }
  batch->input_shape = {data::kImagePixels};
}

int Main(int argc, char** argv) {
  CLI::App app(
      "Trains a model of its own (Embedding, LayerNorm, GELU, Dropout, "
      "Linear) on Fashion-MNIST images read as sequences of pixel tokens, "
      "with DataParallel and AdamW.",
      "train_tokens");
  ringlet::cli::UseConventions(app);
  std::string data_dir, devices_text = "cpu:2";
  int epochs = 2;
  float dropout = 0.1f;
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
  app.add_option("--dropout", dropout, "dropout probability, in [0, 1)")
      ->check(CLI::Range(0.0f, 0.99f))
      ->capture_default_str();
  RINGLET_PARSE_FLAGS(app, argc, argv);
  const std::vector<nn::Device> devices = nn::ResolveDevices(
      devices_text,
      static_cast<int>(ringlet::gpu::ProbeCudaDevices().usable.size()));
  const data::FashionMnist mnist =
      data::LoadFashionMnist(data::ResolveFashionMnistDir(data_dir));
  parallel::DataParallelOptions options;
  options.loss = parallel::SoftmaxCrossEntropyLoss();
  options.optimizer.name = "adamw";
  options.optimizer.lr = 1e-3f;
  parallel::DataParallel dp(
      [dropout] {
        auto model = std::make_unique<PixelTokens>(dropout);
        nn::InitParameters(*model, nn::InitScheme::kKaimingNormal, /*seed=*/0);
        return model;
      },
      devices, options);
  // The loaders cut each batch into one shard per device, as DataParallel
  // runs them.
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
      ToTokens(&batch);
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
    while (test.Next(&batch)) {
      ToTokens(&batch);
      correct += dp.Evaluate(batch.Local()).correct;
    }
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
  return ringlet::cli::RunMain("train_tokens",
                               [&] { return Main(argc, argv); });
}
