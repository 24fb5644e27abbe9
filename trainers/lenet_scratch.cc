// //trainers:lenet_scratch — d2l's "Training on Multiple GPUs" from scratch:
// LeNet's parameters replicated per device, gradients summed by hand
// through //collectives. Defaults as in the chapter: batch 256, lr 0.2,
// 10 epochs, weights from normal(0, 0.01).
#include <iostream>

#include "cli/run_main.h"
#include "nn/models/lenet.h"
#include "trainers/common/job.h"
#include "trainers/common/progress.h"
#include "trainers/common/run_settings.h"
#include "trainers/common/trainer_setup.h"
#include "trainers/common/training_loop.h"
#include "trainers/lenet_replicas.h"

namespace ringlet::trainers {
namespace {

constexpr char kProgram[] = "lenet_scratch";
constexpr char kModel[] = "lenet";

int Main(int argc, char** argv) {
  CLI::App app(
      "Trains the from-scratch LeNet of d2l's \"Training on Multiple GPUs\" "
      "on Fashion-MNIST, data parallel over --devices: parameters copied to "
      "every device, each batch split across them, gradients summed with "
      "--backend. Defaults: batch 256, lr 0.2, 10 epochs.",
      kProgram);
  TrainerFlags flags;
  AddTrainerFlags(app, &flags, /*default_epochs=*/10,
                  "256 (the chapter's, whatever the devices)",
                  "0.2 (the chapter's)");
  return RunTrainerMain(app, argc, argv, [&] {
    const std::vector<nn::Device> devices =
        ResolveTrainerDevices(flags.devices);
    const std::string backend = ResolveBackend(flags.backend, devices);
    ApplyGpuFlags(flags, devices);
    const TrainerJob job = JoinTrainerJob(static_cast<int>(devices.size()));
    // Bad output paths fail now, not after hours of training.
    if (job.leader()) CheckTrainerOutputs(flags, kProgram);
    const auto resume = ReadResumeCheckpoint(flags, kProgram);
    const BatchAndLr run = ResolveBatchAndLr(
        flags, TrainerDefaults{256, 0.2, /*per_device=*/false}, job.ranks,
        resume.get());
    data::Split validation;
    const data::FashionMnist data = LoadTrainerData(flags, &validation);
    RunSettings settings =
        CommonSettings(kProgram, kModel, data, flags.epochs, run.batch_size,
                       run.lr, flags.seed, backend, flags.replica_check_every);
    AddTrainingSettings(flags, &settings);
    CheckProcessesAgree(job.processes.get(), settings);
    nn::ReplicaGroupOptions group;
    group.backend = backend;
    group.threads_per_device =
        ThreadsPerDevice(flags.threads_per_device, devices.size());
    group.processes = job.processes;
    LeNetUpdate update;
    update.optimizer = OptimizerOf(flags, run.lr);
    update.clip_grad_norm = flags.clip_grad_norm;
    LeNetReplicas replicas(nn::LeNetParams::Init(flags.seed), devices, group,
                           update);
    std::ostream& out = job.LeaderOnly(std::cout);
    const std::string where = job.Where(devices);
    LoopOptions loop =
        TrainerLoopOptions(flags, kProgram, job, where, run, settings, resume);
    if (validation.size() > 0) loop.validation = &validation;
    if (LoadParamsAndMaybeEvaluate(flags, replicas, kModel, data.test,
                                   run.batch_size, where, loop.terminal, out,
                                   job.LeaderOnly(std::cerr))) {
      return 0;
    }
    out << SetupLine(kProgram, where, job.ranks, backend, run, flags,
                     devices.front().is_cuda() ? 0 : group.threads_per_device,
                     data, validation.size())
        << std::endl;
    const std::vector<EpochMetrics> epochs = TrainEpochs(
        replicas, data.train, data.test, loop, out, job.LeaderOnly(std::cerr));
    out << ClosingLine(epochs, where) << std::endl;
    if (job.leader()) WriteTrainedParameters(flags, kModel, replicas.State());
    return 0;
  });
}

}  // namespace
}  // namespace ringlet::trainers

int main(int argc, char** argv) {
  return ringlet::cli::RunMain(
      "lenet_scratch", [&] { return ringlet::trainers::Main(argc, argv); });
}
