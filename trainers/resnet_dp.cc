// //trainers:resnet_dp — d2l's "Concise Implementation for Multiple GPUs":
// ResNet-18 behind DataParallel. Defaults as in the chapter: batch 256 and
// lr 0.1 on one device, each times the number of devices when left out
// (512 and 0.2 on two), 10 epochs.
#include "cli/run_main.h"
#include "nn/compute_options.h"
#include "nn/layers/init.h"
#include "nn/models/resnet.h"
#include "parallel/data_parallel.h"
#include "trainers/common/loop/training_loop.h"
#include "trainers/common/trainer_main.h"

namespace ringlet::trainers {
namespace {

int Main(int argc, char** argv) {
  const TrainerProgram program{
      "resnet_dp", "resnet18", {256, 0.1, /*per_device=*/true}};
  CLI::App app(
      "Trains d2l's ResNet-18 on Fashion-MNIST (or --dataset) behind "
      "DataParallel over "
      "--devices: replicas broadcast from the first device, each batch "
      "scattered, gradients summed in buckets while backward runs. Defaults: "
      "batch 256 and lr 0.1 per device (scaled by the number of devices), "
      "10 epochs.",
      program.name);
  TrainerFlags flags;
  AddTrainerFlags(app, &flags, /*default_epochs=*/10,
                  "256 per device, times the devices",
                  "0.1 per device, times the devices");
  bool sync_bn = false;
  app.add_flag("--sync_bn", sync_bn,
               "batch norm with the whole batch's statistics, summed across "
               "devices (default: each device's own, as in the chapter)")
      ->excludes("--reproducible");
  return RunTrainerMain(app, argc, argv, [&] {
    // Per-device or whole-batch statistics: different trajectories.
    PreparedRun p = PrepareRun(flags, program,
                               {{"sync_bn", sync_bn ? "true" : "false", true}});
    const nn::ComputeScope compute(p.compute);
    parallel::DataParallelOptions options;
    options.backend = p.backend;
    options.optimizer = OptimizerOf(flags, p.run.lr);
    options.clip_grad_norm = flags.clip_grad_norm;
    options.grad_dtype = GradWireType(flags);
    options.sync_bn = sync_bn;
    options.threads_per_device = p.threads_per_device;
    options.processes = p.job.processes;
    options.micro_shards = MicroShardCount(flags);
    // d2l's ResNet-18 takes its channels and classes from the data.
    RequireImages(p.data, program.name, {}, 0);
    const int channels = static_cast<int>(p.data.train->input().shape[0]);
    const int classes = static_cast<int>(p.data.classes);
    const uint64_t seed = flags.seed;
    parallel::DataParallel dp(
        [seed, classes, channels] {
          auto net = nn::MakeResNet18(classes, channels);
          nn::InitParameters(*net, nn::InitScheme::kNormal001, seed);
          return net;
        },
        p.devices, options);
    return TrainAndReport(flags, program, p, dp.engine(),
                          sync_bn ? ", synchronised batch norm" : "");
  });
}

}  // namespace
}  // namespace ringlet::trainers

int main(int argc, char** argv) {
  return ringlet::cli::RunMain(
      "resnet_dp", [&] { return ringlet::trainers::Main(argc, argv); });
}
