#include "trainers/common/trainer_main.h"

#include <iostream>
#include <ostream>

#include "collectives/backends/launch.h"
#include "nn/compute_options.h"
#include "trainers/common/flags/trainer_data.h"
#include "trainers/common/flags/trainer_devices.h"
#include "trainers/common/regroup.h"

namespace ringlet::trainers {

PreparedRun PrepareRun(const TrainerFlags& given, const TrainerProgram& program,
                       const RunSettings& extra) {
  PreparedRun p;
  p.devices = ResolveTrainerDevices(given.devices);
  p.compute = ComputeOptionsFromFlags(given, p.devices);
  p.job = JoinTrainerJob(static_cast<int>(p.devices.size()));
  // A process started after the launch gets the others' state first.
  JoinRunningJob(program.name);
  // From every process's devices: two processes on one GPU cannot use NCCL.
  p.backend = ResolveBackend(given.backend, p.devices, p.job.processes.get());
  p.where = p.job.Where(p.devices);
  if (given.on_process_loss == "regroup" && p.job.launcher == "mpirun") {
    throw std::invalid_argument(
        "--on_process_loss=regroup: a job under mpirun ends with any of its "
        "processes; launch with torchrun, srun or torchrun's environment");
  }
  // Also once the job is down to one process: a joiner may still come.
  SetRegroupOnProcessLoss(given.on_process_loss == "regroup" &&
                          p.job.processes != nullptr);
  // After a regroup: the state every process holds, not a file.
  const bool regrouped = TakeRegroupResume(&p.resume, &p.membership_record);
  // A launcher's restart resumes from process 0's checkpoint.
  std::string restart_note;
  const TrainerFlags flags =
      regrouped ? given
                : ResumeAfterRestart(given, program.name,
                                     collectives::LauncherRestartCount(),
                                     &restart_note);
  // Bad output paths fail now, not after hours of training.
  if (!restart_note.empty()) {
    p.job.LeaderOnly(std::cout)
        << program.name << ": " << restart_note << std::endl;
  }
  if (p.job.leader() && !regrouped) {
    CheckTrainerOutputs(flags, program.name);
    const std::string note = ReplacedCheckpointNote(flags, program.name);
    if (!note.empty()) std::cerr << program.name << ": " << note << std::endl;
  }
  if (!regrouped) p.resume = ReadResumeCheckpoint(flags, program.name);
  // Reproducible runs take the same batch and lr on any number of devices.
  p.run =
      ResolveBatchAndLr(flags, program.defaults,
                        flags.reproducible ? 1 : p.job.ranks, p.resume.get());
  p.data = LoadTrainerData(flags);
  if (p.job.leader())
    CheckTrainerOutputsSpare(flags, program.name, p.data.files);
  p.settings =
      CommonSettings(program.name, program.model, *p.data.train, *p.data.test,
                     flags.epochs, p.run.batch_size, p.run.lr, flags.seed,
                     p.backend, flags.replica_check_every);
  AddTrainingSettings(flags, &p.settings);
  p.settings.insert(p.settings.end(), extra.begin(), extra.end());
  // Op threads may change a sum's order: reproducible runs fix them, and
  // on CPU devices their number is part of the bits, as is the kind of
  // device (--devices=auto takes a GPU where there is one): a resume and
  // every process must keep both (checkpoints that do not say were written
  // on CPU devices with 1 thread, the defaults).
  const int threads = flags.reproducible && flags.threads_per_device == 0
                          ? 1
                          : flags.threads_per_device;
  p.threads_per_device =
      ThreadsPerDevice(threads, static_cast<int>(p.devices.size()));
  if (flags.reproducible) {
    const bool gpu = p.devices.front().is_cuda();
    p.settings.push_back({"device_kind", gpu ? "cuda" : "cpu", true, "cpu"});
    if (!gpu) {
      p.settings.push_back({"threads_per_device",
                            std::to_string(p.threads_per_device), true, "1"});
    }
  }
  CheckProcessesAgree(p.job.processes.get(), p.settings);
  // Where each process writes what: one process given --metrics_out alone
  // would have it dropped.
  CheckProcessesAgree(p.job.processes.get(), OutputSettings(flags));
  return p;
}

int TrainAndReport(const TrainerFlags& flags, const TrainerProgram& program,
                   PreparedRun& p, parallel::ReplicaEngine& engine,
                   const std::string& header_suffix) {
  std::ostream& out = p.job.LeaderOnly(std::cout);
  std::ostream& err = p.job.LeaderOnly(std::cerr);
  LoopOptions loop = TrainerLoopOptions(flags, program.name, p.job, p.where,
                                        p.run, p.settings, p.resume);
  if (!p.membership_record.empty()) {
    loop.resume_path = "the state kept in memory";
    loop.membership_record = p.membership_record;
  }
  if (RegroupOnProcessLoss()) loop.keep_step = KeepStepForRegroup;
  loop.validation = p.data.validation;
  loop.classes = p.data.classes;
  loop.class_names = p.data.class_names;
  loop.early_stop = flags.early_stop;
  if (flags.keep_best) {
    if (p.job.leader()) {
      loop.best_checkpoint_path = BestCheckpointPath(flags, program.name);
    }
    loop.on_best = [&](const EpochMetrics&) {
      if (p.job.leader()) {
        WriteTrainedParameters(flags, program.model, engine.State(0));
      }
    };
  }
  if (!flags.predict.empty() && p.job.num_processes > 1) {
    throw std::invalid_argument(
        "--predict runs in one process: start it without mpirun (give "
        "--devices for several devices)");
  }
  if (LoadParamsAndMaybeEvaluate(flags, engine, program.model, p.data,
                                 p.run.batch_size, p.where, loop.terminal, out,
                                 err)) {
    return 0;
  }
  // GPU devices have no op threads to report.
  const int threads = p.devices.front().is_cuda() ? 0 : p.threads_per_device;
  out << SetupLine(program.name, p.where, p.job.ranks, p.backend, p.run, flags,
                   threads, p.data)
      << header_suffix << std::endl;
  const std::vector<EpochMetrics> epochs =
      TrainEpochs(engine, p.data.train, p.data.test, loop, out, err);
  if (flags.keep_best) {
    out << KeptBestLine(flags, program.name, epochs) << std::endl;
  } else if (p.job.leader()) {
    WriteTrainedParameters(flags, program.model, engine.State(0));
  }
  out << ClosingLine(epochs, p.where) << std::endl;
  return 0;
}

}  // namespace ringlet::trainers
