// //trainers:lenet_scratch — d2l's "Training on Multiple GPUs" from scratch:
// LeNet's parameters replicated per device, gradients summed by hand
// through //collectives. Defaults as in the chapter: batch 256, lr 0.2,
// 10 epochs, weights from normal(0, 0.01).
#include "cli/run_main.h"
#include "nn/compute_options.h"
#include "nn/models/lenet.h"
#include "trainers/common/trainer_main.h"
#include "trainers/lenet_replicas.h"

namespace ringlet::trainers {
namespace {

int Main(int argc, char** argv) {
  const TrainerProgram program{
      "lenet_scratch", "lenet", {256, 0.2, /*per_device=*/false}};
  CLI::App app(
      "Trains the from-scratch LeNet of d2l's \"Training on Multiple GPUs\" "
      "on Fashion-MNIST, data parallel over --devices: parameters copied to "
      "every device, each batch split across them, gradients summed with "
      "--backend. Defaults: batch 256, lr 0.2, 10 epochs.",
      program.name);
  TrainerFlags flags;
  AddTrainerFlags(app, &flags, /*default_epochs=*/10,
                  "256 (the chapter's, whatever the devices)",
                  "0.2 (the chapter's)");
  return RunTrainerMain(app, argc, argv, [&] {
    PreparedRun p = PrepareRun(flags, program);
    const nn::ComputeScope compute(p.compute);
    // The chapter's LeNet: one 28 x 28 channel, 10 classes.
    RequireImages(p.data, program.name, {1, 28, 28}, 10);
    parallel::ReplicaGroupOptions group;
    group.backend = p.backend;
    group.threads_per_device = p.threads_per_device;
    group.processes = p.job.processes;
    LeNetUpdate update;
    update.optimizer = OptimizerOf(flags, p.run.lr);
    update.clip_grad_norm = flags.clip_grad_norm;
    update.grad_dtype = GradWireType(flags);
    LeNetReplicas replicas(nn::LeNetParams::Init(flags.seed), p.devices, group,
                           update, MicroShardCount(flags));
    return TrainAndReport(flags, program, p, replicas.engine());
  });
}

}  // namespace
}  // namespace ringlet::trainers

int main(int argc, char** argv) {
  return ringlet::cli::RunMain(
      "lenet_scratch", [&] { return ringlet::trainers::Main(argc, argv); });
}
