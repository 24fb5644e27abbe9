// A model of your own, trained with ringlet's DataParallel: a two-layer
// perceptron on Fashion-MNIST, or on data of your own saved by numpy,
// over two CPU devices (or the devices named, as the trainers' --devices:
// "cuda:0,1", "cuda:0,0" for two replicas on one GPU), with the loss and
// the optimizer chosen here; its parameters saved as PyTorch's state_dict.
//   bazel run //examples/mlp:train_mlp [-- --devices=cpu:2 --epochs=2]
//   bazel run //examples/mlp:train_mlp -- --data=$PWD/digits.npz
//     --save=$PWD/mlp.safetensors
// (digits.npz: train_inputs, train_targets, test_inputs, test_targets, as
// np.savez writes them; class ids of any integer type.) In PyTorch:
//   net = torch.nn.Module(); net.hidden = torch.nn.Linear(d, 256)
//   net.out = torch.nn.Linear(256, classes)
//   net.load_state_dict(safetensors.torch.load_file("mlp.safetensors"))
// Under torchrun, srun or mpirun the processes' devices train as one group
// (the parameters of one process with all their devices):
//   torchrun --standalone --nproc_per_node=2 --no_python --redirects=2
//     --tee=2 bazel-bin/examples/mlp/train_mlp --devices=cpu:1
// and the job outlives its machines (parallel/elastic_job.h): with
// --on_process_loss=regroup the others go on without a process that dies,
// and take in one started later; with --checkpoint and --checkpoint_steps
// a launcher's restart (torchrun --max_restarts) resumes from the file.
// With --reproducible either ends where the uninterrupted run ends.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "data/array_splits.h"
#include "data/batch_loader.h"
#include "data/dataset.h"
#include "gpu/device_probe.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "nn/state_file.h"
#include "parallel/data_parallel.h"
#include "parallel/elastic_job.h"

namespace data = ringlet::data;
namespace nn = ringlet::nn;
namespace parallel = ringlet::parallel;

// Any nn::Module: nn's layers, composed here. Its parameters are named
// hidden.weight, hidden.bias, out.weight, out.bias.
class Mlp : public nn::Module {
 public:
  Mlp(int64_t inputs, int64_t classes)
      : hidden_(inputs, 256), out_(256, classes) {}
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
    hidden_.CollectParameters(Join(prefix, "hidden"), out);
    out_.CollectParameters(Join(prefix, "out"), out);
  }
  std::vector<nn::Module*> Children() override {
    return {&flatten_, &hidden_, &relu_, &out_};
  }

 private:
  static std::string Join(const std::string& prefix, const char* name) {
    return prefix.empty() ? name : prefix + "." + name;
  }
  nn::Flatten flatten_;
  nn::Linear hidden_;
  nn::ReLU relu_;
  nn::Linear out_;
};

int Main(int argc, char** argv) {
  CLI::App app(
      "Trains a two-layer perceptron of its own (an nn::Module written in "
      "this file) on Fashion-MNIST, or on --data, with DataParallel and "
      "AdamW.",
      "train_mlp");
  ringlet::cli::UseConventions(app);
  std::string data_dir, own_data, save, devices_text = "cpu:2";
  std::string on_process_loss = "end";
  int epochs = 2;
  int64_t limit = 0;
  bool reproducible = false;
  parallel::ElasticOptions elastic;
  elastic.program = "train_mlp";
  app.add_option("--data_dir", data_dir,
                 "Fashion-MNIST folder (default: $FASHION_MNIST_DIR, else " +
                     std::string(data::kDefaultFashionMnistDir) + ")");
  app.add_option("--data", own_data,
                 "data of your own instead: a folder of train_inputs.npy, "
                 "train_targets.npy, test_inputs.npy and test_targets.npy, "
                 "an .npz or a .safetensors file of them (class ids)");
  app.add_option("--save", save,
                 "write the trained parameters here as PyTorch's state_dict "
                 "(safetensors)");
  app.add_option("--devices", devices_text,
                 "cpu:K (K CPU devices), cpu:I,J or cuda:I,J,... (a GPU may "
                 "repeat)")
      ->capture_default_str();
  app.add_option("--epochs", epochs, "passes over the training set")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--limit", limit,
                 "train on the first N training samples (0: all of them)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_flag("--reproducible", reproducible,
               "the same parameters, bit for bit, on any number of devices "
               "and processes (each batch in 8 micro-shards)");
  app.add_option("--on_process_loss", on_process_loss,
                 "when a process of a job over TCP (torchrun, srun, by hand) "
                 "dies or stops answering: end the job, or regroup: the "
                 "others go on without it from the last step they all "
                 "finished (process 0 must live, unless a store is given)")
      ->check(CLI::IsMember({"end", "regroup"}))
      ->capture_default_str();
  CLI::Option* checkpoint = app.add_option(
      "--checkpoint", elastic.checkpoint,
      "write the training state here (safetensors) every "
      "--checkpoint_steps steps; a launcher's restart resumes from it");
  app.add_option("--checkpoint_steps", elastic.checkpoint_every,
                 "steps between checkpoints")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->needs(checkpoint);
  checkpoint->needs("--checkpoint_steps");
  RINGLET_PARSE_FLAGS(app, argc, argv);
  elastic.regroup = on_process_loss == "regroup";
  const std::vector<nn::Device> devices = nn::ResolveDevices(
      devices_text,
      static_cast<int>(ringlet::gpu::ProbeCudaDevices().usable.size()));
  data::DatasetPtr train_set, test_set;
  int64_t classes = data::kNumClasses;
  if (own_data.empty()) {
    // The data sets keep the images alive.
    const auto mnist = std::make_shared<const data::FashionMnist>(
        data::LoadFashionMnist(data::ResolveFashionMnistDir(data_dir)));
    train_set = data::SplitDataset(
        std::shared_ptr<const data::Split>(mnist, &mnist->train));
    test_set = data::SplitDataset(
        std::shared_ptr<const data::Split>(mnist, &mnist->test));
  } else {
    const bool safetensors =
        own_data.size() > 12 &&
        own_data.compare(own_data.size() - 12, 12, ".safetensors") == 0;
    data::ArraySplits splits = data::ReadArraySplits(
        own_data, safetensors ? data::ArrayFormat::kSafetensors
                              : data::ArrayFormat::kNpy);
    train_set = splits.train;
    test_set = splits.test;
    classes = splits.classes;
  }
  if (limit > 0 && limit < train_set->size()) {
    std::vector<int64_t> first(limit);
    for (int64_t i = 0; i < limit; ++i) first[i] = i;
    train_set = data::Subset(train_set, std::move(first));
  }
  const int64_t inputs = train_set->input().elements();
  parallel::DataParallelOptions options;
  options.loss =
      parallel::SoftmaxCrossEntropyLoss();  // Or any parallel::LossFunction.
  options.optimizer.name = "adamw";  // Or options.make_optimizer: your own.
  options.optimizer.lr = 1e-3f;
  if (reproducible) options.micro_shards = 8;
  // A restart resumes only a checkpoint of this run.
  elastic.settings = {{"data", own_data.empty() ? "fashion_mnist" : own_data},
                      {"limit", std::to_string(limit)},
                      {"reproducible", reproducible ? "yes" : "no"}};
  // Started by torchrun, srun or mpirun: this process's devices join the
  // job's. Alone, the job is this process. Only process 0 prints.
  parallel::ElasticJob job(static_cast<int>(devices.size()), elastic);
  // After a regroup this runs again, on the job that is left, from the
  // last step every process finished.
  return job.Run([&] {
    options.processes = job.processes();
    parallel::DataParallel dp(
        [inputs, classes] {
          auto model = std::make_unique<Mlp>(inputs, classes);
          nn::InitParameters(*model, nn::InitScheme::kKaimingNormal,
                             /*seed=*/0);
          return model;
        },
        devices, options);
    // The loaders cut each batch into one shard per device, as
    // DataParallel runs them; the data says what a sample is (here an
    // image of {1, 28, 28} floats and one class id).
    data::LoaderOptions train_order, test_order;
    train_order.layout = dp.TrainLayout();
    test_order.layout = dp.EvalLayout();
    test_order.shuffle = false;
    data::BatchLoader train(train_set, train_order);
    data::BatchLoader test(test_set, test_order);
    data::Batch batch;
    const parallel::ElasticStart at = job.Resume(dp);
    if (job.leader()) {
      std::printf(
          "train_mlp on %d process%s (%d device%s): %lld training "
          "samples, from epoch %lld, step %lld%s\n",
          job.num_processes(), job.num_processes() == 1 ? "" : "es", dp.ranks(),
          dp.ranks() == 1 ? "" : "s", static_cast<long long>(train_set->size()),
          static_cast<long long>(at.epoch + 1), static_cast<long long>(at.step),
          reproducible ? ", reproducible" : "");
    }
    for (int64_t epoch = at.epoch; epoch < epochs; ++epoch) {
      // Resumed mid-epoch: the sums of the steps before come back too.
      const bool resumed = epoch == at.epoch;
      int64_t step = resumed ? at.step : 0;
      double loss = resumed ? at.Sum(0) : 0, comm = resumed ? at.Sum(1) : 0,
             exposed = resumed ? at.Sum(2) : 0;
      const double before = resumed ? at.Sum(3) : 0;
      const auto start = std::chrono::steady_clock::now();
      const auto seconds = [&] {
        return before + std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start)
                            .count();
      };
      train.StartEpoch(epoch, step);
      while (train.Next(&batch)) {
        const parallel::TrainStepStats stats = dp.TrainStep(batch.Local());
        loss += stats.loss_sum;
        comm += stats.comm_seconds;
        exposed += stats.exposed_comm_seconds;
        job.StepDone(dp, epoch, ++step, {loss, comm, exposed, seconds()});
      }
      const double took = seconds();
      int64_t correct = 0;
      test.StartEpoch(0);
      while (test.Next(&batch)) correct += dp.Evaluate(batch.Local()).correct;
      // Gradients reduce in buckets while backward runs: "exposed" is the
      // part of the communication the devices waited for after it.
      if (job.leader()) {
        std::printf(
            "epoch %lld: loss %.4f, test acc %.4f, %.1f s, comm %.1f%% of "
            "it (%.1f%% exposed)\n",
            static_cast<long long>(epoch + 1), loss / train_set->size(),
            static_cast<double>(correct) / test_set->size(), took,
            100 * comm / took, 100 * exposed / took);
        std::fflush(stdout);
      }
    }
    if (!save.empty() && job.leader()) {
      nn::SaveStateFile(dp.replica(0), save);
      std::printf("parameters written to %s\n", save.c_str());
    }
    return 0;
  });
}

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("train_mlp", [&] { return Main(argc, argv); });
}
