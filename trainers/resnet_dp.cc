// //trainers:resnet_dp — d2l's "Concise Implementation for Multiple GPUs":
// ResNet-18 behind DataParallel. Defaults as in the chapter: batch 256 and
// lr 0.1 on one device, each times the number of devices when left out
// (512 and 0.2 on two), 10 epochs.
#include <iostream>

#include "cli/run_main.h"
#include "nn/layers/init.h"
#include "nn/models/resnet.h"
#include "nn/parallel/data_parallel.h"
#include "trainers/common/job.h"
#include "trainers/common/progress.h"
#include "trainers/common/run_settings.h"
#include "trainers/common/trainer_setup.h"
#include "trainers/common/training_loop.h"

namespace ringlet::trainers {
namespace {

// The training loop's view of a DataParallel model.
class DataParallelTrainer : public ParallelTrainer {
 public:
  explicit DataParallelTrainer(nn::DataParallel& dp) : dp_(dp) {}
  int num_devices() const override { return dp_.ranks(); }
  nn::TrainStepStats TrainStep(
      const std::vector<nn::ReplicaInput>& shards) override {
    return dp_.TrainStep(shards);
  }
  nn::PendingStep QueueStep(
      const std::vector<nn::ReplicaInput>& shards) override {
    return dp_.QueueStep(shards);
  }
  nn::PendingStep QueueAccumulatedStep(
      const std::vector<std::vector<nn::ReplicaInput>>& micro_batches)
      override {
    return dp_.QueueStep(micro_batches);
  }
  int64_t CountCorrect(const std::vector<nn::ReplicaInput>& shards) override {
    return dp_.CountCorrect(shards);
  }
  nn::NamedTensors State() override { return dp_.State(0); }
  void LoadState(const std::vector<const float*>& values) override {
    dp_.LoadState(values);
  }
  std::string CompareReplicas() override { return dp_.CompareReplicas(); }
  void SetLearningRate(double lr) override {
    dp_.set_lr(static_cast<float>(lr));
  }

 private:
  nn::DataParallel& dp_;
};

constexpr char kProgram[] = "resnet_dp";
constexpr char kModel[] = "resnet18";

int Main(int argc, char** argv) {
  CLI::App app(
      "Trains d2l's ResNet-18 on Fashion-MNIST behind DataParallel over "
      "--devices: replicas broadcast from the first device, each batch "
      "scattered, gradients summed in buckets while backward runs. Defaults: "
      "batch 256 and lr 0.1 per device (scaled by the number of devices), "
      "10 epochs.",
      kProgram);
  TrainerFlags flags;
  AddTrainerFlags(app, &flags, /*default_epochs=*/10,
                  "256 per device, times the devices",
                  "0.1 per device, times the devices");
  bool sync_bn = false;
  app.add_flag("--sync_bn", sync_bn,
               "batch norm with the whole batch's statistics, summed across "
               "devices (default: each device's own, as in the chapter)");
  return RunTrainerMain(app, argc, argv, [&] {
    const std::vector<nn::Device> devices =
        ResolveTrainerDevices(flags.devices);
    const std::string backend = ResolveBackend(flags.backend, devices);
    ApplyGpuFlags(flags, devices);
    const TrainerJob job = JoinTrainerJob(static_cast<int>(devices.size()));
    // Bad output paths fail now, not after hours of training.
    if (job.leader()) CheckTrainerOutputs(flags, kProgram);
    const int n = job.ranks;
    const auto resume = ReadResumeCheckpoint(flags, kProgram);
    const BatchAndLr run = ResolveBatchAndLr(
        flags, TrainerDefaults{256, 0.1, /*per_device=*/true}, n, resume.get());
    data::Split validation;
    const data::FashionMnist data = LoadTrainerData(flags, &validation);
    RunSettings settings =
        CommonSettings(kProgram, kModel, data, flags.epochs, run.batch_size,
                       run.lr, flags.seed, backend, flags.replica_check_every);
    AddTrainingSettings(flags, &settings);
    // Per-device or whole-batch statistics: different trajectories.
    settings.push_back({"sync_bn", sync_bn ? "true" : "false", true});
    CheckProcessesAgree(job.processes.get(), settings);

    nn::DataParallelOptions options;
    options.backend = backend;
    options.optimizer = OptimizerOf(flags, run.lr);
    options.clip_grad_norm = flags.clip_grad_norm;
    options.sync_bn = sync_bn;
    options.threads_per_device =
        ThreadsPerDevice(flags.threads_per_device, devices.size());
    options.processes = job.processes;
    const uint64_t seed = flags.seed;
    nn::DataParallel dp(
        [seed] {
          auto net = nn::MakeResNet18();
          nn::InitParameters(*net, nn::InitScheme::kNormal001, seed);
          return net;
        },
        devices, options);
    std::ostream& out = job.LeaderOnly(std::cout);
    const std::string where = job.Where(devices);
    DataParallelTrainer trainer(dp);
    LoopOptions loop =
        TrainerLoopOptions(flags, kProgram, job, where, run, settings, resume);
    if (validation.size() > 0) loop.validation = &validation;
    if (LoadParamsAndMaybeEvaluate(flags, trainer, kModel, data.test,
                                   run.batch_size, where, loop.terminal, out,
                                   job.LeaderOnly(std::cerr))) {
      return 0;
    }
    out << SetupLine(kProgram, where, n, backend, run, flags,
                     devices.front().is_cuda() ? 0 : options.threads_per_device,
                     data, validation.size())
        << (sync_bn ? ", synchronised batch norm" : "") << std::endl;
    const std::vector<EpochMetrics> epochs = TrainEpochs(
        trainer, data.train, data.test, loop, out, job.LeaderOnly(std::cerr));
    out << ClosingLine(epochs, where) << std::endl;
    if (job.leader()) WriteTrainedParameters(flags, kModel, trainer.State());
    return 0;
  });
}

}  // namespace
}  // namespace ringlet::trainers

int main(int argc, char** argv) {
  return ringlet::cli::RunMain(
      "resnet_dp", [&] { return ringlet::trainers::Main(argc, argv); });
}
