#include "trainers/common/trainer_setup.h"

#include <sys/stat.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <stdexcept>

#include "cli/conventions.h"
#include "cli/standard_streams.h"
#include "collectives/backends/launch.h"
#include "data/fashion_mnist.h"
#include "nlohmann/json.hpp"
#include "nn/optim/registry.h"
#include "parallel/regroup.h"
#include "trainers/common/checkpoints/checkpoint.h"
#include "trainers/common/checkpoints/folder_lock.h"
#include "trainers/common/job.h"
#include "trainers/common/loop/stop_signals.h"
#include "trainers/common/outputs/confusion_report.h"
#include "trainers/common/outputs/output_files.h"
#include "trainers/common/outputs/parameter_file.h"
#include "trainers/common/outputs/progress.h"
#include "trainers/common/prediction.h"
#include "trainers/common/regroup.h"

namespace ringlet::trainers {

namespace {

// One line to stderr in one write, so the lines of processes sharing a
// terminal under mpirun do not interleave.
void PrintLine(const std::string& text) {
  const std::string line = text + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

// What processes agree on: the stop signals, and SIGPIPE, the loop's name
// for output that could not be written (its pipe closed, its disk full).
const std::vector<int>& AgreedStops() {
  static const std::vector<int> stops = [] {
    std::vector<int> s = StopSignals();
    s.push_back(SIGPIPE);
    return s;
  }();
  return stops;
}

// Every file the flags ask the run to write; the checkpoint last.
std::vector<OutputFile> TrainerOutputs(const TrainerFlags& flags,
                                       const std::string& program) {
  return {{"--metrics_out", ResolveUserPath(flags.metrics_out)},
          {"--csv_out", ResolveUserPath(flags.csv_out)},
          {"--plot_out", ResolveUserPath(flags.plot_out)},
          {"--plot_out's confusion heat map",
           ConfusionSvgPath(ResolveUserPath(flags.plot_out))},
          {"--params_out", ResolveUserPath(flags.params_out)},
          {"--predict_out", ResolveUserPath(flags.predict_out)},
          {"--keep_best's checkpoint", BestCheckpointPath(flags, program),
           /*stream_ok=*/false},
          {"--checkpoint_dir", CheckpointPath(flags, program),
           /*stream_ok=*/false}};
}

// Process 0's `mine` on every process of the job this process joined: the
// others' hosts need not see the files process 0 wrote. Collective.
std::string FromProcessZero(const std::string& mine) {
  collectives::ProcessWorld* world = JoinedWorld().get();
  if (world == nullptr) return mine;
  return parallel::ShareFromProcessZero(*world,
                                        world->process() == 0 ? mine : "");
}

}  // namespace

std::string CheckpointPath(const TrainerFlags& flags,
                           const std::string& program) {
  if (flags.checkpoint_dir.empty()) return "";
  return ResolveUserPath(flags.checkpoint_dir) + "/" + program + ".ckpt";
}

TrainerFlags ResumeAfterRestart(const TrainerFlags& flags,
                                const std::string& program, int restart_count,
                                std::string* note) {
  note->clear();
  if (restart_count <= 0 || flags.resume || flags.checkpoint_dir.empty()) {
    return flags;
  }
  const std::string path = CheckpointPath(flags, program);
  struct stat st;
  const std::string restarted =
      "restart " + std::to_string(restart_count) + " of this job: ";
  // Process 0 wrote the checkpoint: its finding one decides for all.
  const bool here = JobProcess() == 0 && ::stat(path.c_str(), &st) == 0 &&
                    S_ISREG(st.st_mode);
  const bool found = FromProcessZero(here ? "1" : "") == "1";
  if (!found) {
    *note = restarted + "no checkpoint in " +
            ResolveUserPath(flags.checkpoint_dir) +
            " yet, so it starts from the beginning";
    return flags;
  }
  TrainerFlags resumed = flags;
  resumed.resume = true;
  // The checkpoint's parameters are newer than the ones it started from.
  resumed.params_in.clear();
  *note = restarted + "resuming from its checkpoint, as --resume would";
  return resumed;
}

std::string ReplacedCheckpointNote(const TrainerFlags& flags,
                                   const std::string& program) {
  if (flags.resume || flags.checkpoint_dir.empty()) return "";
  const std::string path = CheckpointPath(flags, program);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  char written[32] = {};
  std::tm utc;
  gmtime_r(&st.st_mtime, &utc);
  std::strftime(written, sizeof(written), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return "note: " + path + " holds an earlier run (written " + written +
         "); this run starts afresh and replaces it (add --resume to "
         "continue that run instead)";
}

void CheckTrainerOutputs(const TrainerFlags& flags,
                         const std::string& program) {
  if (flags.eval_only && flags.params_in.empty()) {
    throw std::runtime_error(
        "--eval_only needs --params_in: the parameters to evaluate");
  }
  if (!flags.predict.empty() && flags.params_in.empty()) {
    throw std::runtime_error(
        "--predict needs --params_in: the trained parameters (a run's "
        "--params_out)");
  }
  if (!flags.predict.empty() && flags.eval_only) {
    throw std::runtime_error(
        "--predict and --eval_only each run the model "
        "and exit; give one");
  }
  if (flags.predict.empty() && !flags.predict_out.empty()) {
    throw std::runtime_error("--predict_out needs --predict: the inputs");
  }
  if (flags.resume && !flags.params_in.empty()) {
    throw std::runtime_error(
        "--resume and --params_in both set the parameters; give one");
  }
  if (flags.resume && flags.checkpoint_dir.empty()) {
    throw std::runtime_error(
        "--resume needs --checkpoint_dir: the folder holding the checkpoint");
  }
  if (!flags.checkpoint_dir.empty()) {
    const std::string dir = ResolveUserPath(flags.checkpoint_dir);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      throw std::runtime_error("--checkpoint_dir: cannot make " + dir + " (" +
                               std::strerror(errno) +
                               "); check that its parent folder exists");
    }
    struct stat st;
    if (::stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
      throw std::runtime_error("--checkpoint_dir: " + dir +
                               " is not a folder; name a folder (it "
                               "is made if missing)");
    }
    // Held until the process ends: one run per folder and program.
    static std::unique_ptr<FolderLock> lock;
    lock.reset();
    lock = std::make_unique<FolderLock>(dir, program, "--checkpoint_dir");
  }
  CheckOutputFiles(TrainerOutputs(flags, program));
  CheckTrainerOutputsSpare(flags, program, {});
}

void CheckTrainerOutputsSpare(const TrainerFlags& flags,
                              const std::string& program,
                              const std::vector<std::string>& inputs) {
  std::vector<KeptFile> kept;
  for (const std::string& path : inputs)
    kept.push_back({"a file of the data set", path});
  kept.push_back({"--params_in's file", ResolveUserPath(flags.params_in)});
  kept.push_back({"--predict's inputs", ResolveUserPath(flags.predict)});
  if (!flags.checkpoint_dir.empty()) {
    kept.push_back(
        {"the lock of --checkpoint_dir",
         FolderLock::PathFor(ResolveUserPath(flags.checkpoint_dir), program)});
  }
  std::vector<OutputFile> outputs = TrainerOutputs(flags, program);
  outputs.pop_back();  // The checkpoint: CheckOutputFiles compared it.
  const std::string checkpoint = CheckpointPath(flags, program);
  kept.push_back({"the checkpoint", checkpoint});
  CheckOutputsKeep(outputs, kept);
}

LoopOptions TrainerLoopOptions(const TrainerFlags& flags,
                               const std::string& program,
                               const TrainerJob& job, const std::string& where,
                               const BatchAndLr& run,
                               const RunSettings& settings,
                               std::shared_ptr<const Checkpoint> resume) {
  LoopOptions loop;
  loop.schedule.kind = flags.lr_schedule;
  loop.schedule.base_lr = run.lr;
  loop.schedule.warmup_epochs = flags.warmup_epochs;
  loop.epochs = flags.epochs;
  loop.batch_size = run.batch_size;
  loop.accumulate_steps = flags.accumulate_steps;
  loop.seed = flags.seed;
  loop.augment = data::AugmentationsNamed(
      flags.augment,
      flags.crop_padding >= 0 ? flags.crop_padding : data::kCropPaddingEighth);
  // mpirun hands processes a pseudo-terminal even when its own output is
  // a log, so a job of several processes logs plain lines.
  loop.terminal = IsTerminal(2) && job.num_processes == 1;
  loop.where = where;
  loop.plot_title = program + " on " + where;
  loop.settings = settings;
  loop.replica_check_every = flags.replica_check_every;
  loop.eval_every = flags.eval_every;
  loop.overlap_steps = flags.overlap_steps;
  loop.checkpoint_every = flags.checkpoint_every;
  loop.checkpoint_steps =
      flags.checkpoint_dir.empty() ? 0 : flags.checkpoint_steps;
  if (resume != nullptr) {
    loop.resume_path = CheckpointPath(flags, program);
    loop.resume = std::move(resume);
    loop.launcher = job.launcher;
    loop.restart_count = collectives::LauncherRestartCount();
  }
  if (job.leader()) {
    loop.metrics_out = ResolveUserPath(flags.metrics_out);
    loop.run_line = RunLine(where, settings, loop.resume_path);
    loop.csv_out = ResolveUserPath(flags.csv_out);
    loop.plot_out = ResolveUserPath(flags.plot_out);
    loop.checkpoint_path = CheckpointPath(flags, program);
  }
  if (!flags.checkpoint_dir.empty()) {
    // The stop signals end the run after its step, checkpoint written.
    HandleStopSignals(program, StopMode::kAfterStep, job.leader());
    loop.stop = StopRequested();
  } else {
    HandleStopSignals(program, StopMode::kEndNow, job.leader());
  }
  loop.output_failure = [] {
    const std::string why = cli::StandardStreamFailure();
    return why.empty() ? std::string("the output could not be written") : why;
  };
  if (!flags.checkpoint_dir.empty() && job.num_processes > 1) {
    // A scheduler signals every process, an interactive user one: either
    // way the job stops after the same step, where any process was asked.
    std::shared_ptr<collectives::ProcessGroup> processes = job.processes;
    // How many processes received each stop; the job's is the first of
    // AgreedStops() any received, the same on every process.
    loop.agree_stop = [processes](int mine) {
      const std::vector<int>& stops = AgreedStops();
      std::vector<double> received(stops.size());
      for (size_t k = 0; k < stops.size(); ++k) {
        received[k] = mine == stops[k] ? 1.0 : 0.0;
      }
      processes->SumOverProcesses(received.data(), received.size());
      for (size_t k = 0; k < stops.size(); ++k) {
        if (received[k] > 0) return stops[k];
      }
      return 0;
    };
  }
  return loop;
}

std::string BestCheckpointPath(const TrainerFlags& flags,
                               const std::string& program) {
  if (!flags.keep_best || flags.checkpoint_dir.empty()) return "";
  return ResolveUserPath(flags.checkpoint_dir) + "/" + program + ".best.ckpt";
}

std::string KeptBestLine(const TrainerFlags& flags, const std::string& program,
                         const std::vector<EpochMetrics>& epochs) {
  const EpochMetrics* best = nullptr;
  for (const EpochMetrics& m : epochs) {
    if (m.val_acc >= 0 && (best == nullptr || m.val_acc > best->val_acc)) {
      best = &m;
    }
  }
  if (best == nullptr) return "kept no epoch: none was validated";
  std::string where;
  for (const std::string& path :
       {flags.params_out.empty() ? std::string()
                                 : ResolveUserPath(flags.params_out),
        BestCheckpointPath(flags, program)}) {
    if (path.empty()) continue;
    where += (where.empty() ? "" : " and ") + path;
  }
  char acc[32];
  std::snprintf(acc, sizeof(acc), "%.3f", best->val_acc);
  return "kept epoch " + std::to_string(best->epoch) + " (validation acc " +
         acc + ") in " + where;
}

void WriteTrainedParameters(const TrainerFlags& flags, const std::string& model,
                            const parallel::NamedTensors& state) {
  if (flags.params_out.empty()) return;
  WriteParameterFile(ResolveUserPath(flags.params_out), model, state);
}

std::string RunLine(const std::string& where, const RunSettings& settings,
                    const std::string& resumed_from) {
  nlohmann::ordered_json run = {{"started", UtcNow()}, {"devices", where}};
  if (!resumed_from.empty()) run["resumed_from"] = resumed_from;
  for (const Setting& s : settings) run[s.name] = s.value;
  return nlohmann::ordered_json({{"run", run}}).dump();
}

std::shared_ptr<const Checkpoint> ReadResumeCheckpoint(
    const TrainerFlags& flags, const std::string& program) {
  if (!flags.resume) return nullptr;
  const std::string path = CheckpointPath(flags, program);
  const collectives::ProcessWorld* world = JoinedWorld().get();
  if (world == nullptr || world->processes() == 1) {
    return std::make_shared<const Checkpoint>(ReadCheckpoint(path));
  }
  // Process 0 reads the checkpoint it wrote and sends it, or why it
  // cannot: the others' hosts need not see the folder.
  std::string sent;
  if (world->process() == 0) {
    try {
      sent = "C" + EncodeCheckpoint(ReadCheckpoint(path));
    } catch (const CheckpointError& e) {
      sent = std::string("E") + e.what();
    }
  }
  const std::string got = FromProcessZero(sent);
  if (got.empty() || got[0] != 'C') {
    throw CheckpointError(got.empty() ? "process 0 sent no checkpoint"
                                      : got.substr(1));
  }
  return std::make_shared<const Checkpoint>(
      DecodeCheckpoint(got.substr(1), path));
}

BatchAndLr ResolveBatchAndLr(const TrainerFlags& flags,
                             const TrainerDefaults& defaults, int ranks,
                             const Checkpoint* resume) {
  const std::string scaled = "scaled for " + std::to_string(ranks) + " devices";
  BatchAndLr out;
  auto saved = [&](const char* name) -> const Setting* {
    return resume != nullptr ? FindSetting(resume->settings, name) : nullptr;
  };
  // A checkpoint's number, or a clear error for one that is not.
  auto number = [](const Setting& s) {
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s.value, &used);
    } catch (const std::exception&) {
    }
    if (used != s.value.size() || !(v > 0) || !std::isfinite(v)) {
      throw CheckpointError("the checkpoint records " + s.name + " '" +
                            s.value + "', not a number above 0; give --" +
                            s.name);
    }
    return v;
  };
  if (flags.batch_size > 0) {
    out.batch_size = flags.batch_size;
  } else if (const Setting* s = saved("batch_size")) {
    out.batch_size = static_cast<int64_t>(number(*s));
    out.batch_note = "the checkpoint's";
  } else {
    const int scale = defaults.per_device ? ranks : 1;
    out.batch_size = defaults.batch_size * scale;
    if (scale > 1) out.batch_note = scaled;
  }
  if (flags.lr > 0) {
    out.lr = flags.lr;
  } else if (const Setting* s = saved("lr")) {
    out.lr = number(*s);
    out.lr_note = "the checkpoint's";
  } else if (const nn::OptimizerSpec& spec = nn::FindOptimizer(flags.optimizer);
             spec.default_lr > 0) {
    out.lr = DecimalOf(spec.default_lr);
    out.lr_note = spec.default_lr_source;
  } else {
    const int scale = defaults.per_device ? ranks : 1;
    out.lr = defaults.lr * scale;
    if (scale > 1) out.lr_note = scaled;
  }
  return out;
}

bool LoadParamsAndMaybeEvaluate(const TrainerFlags& flags,
                                parallel::ReplicaEngine& engine,
                                const std::string& model,
                                const TrainerData& data, int64_t batch_size,
                                const std::string& where, bool terminal,
                                std::ostream& out, std::ostream& progress) {
  if (!flags.params_in.empty()) {
    LoadParameterFile(engine, ResolveUserPath(flags.params_in), model);
  }
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&start] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         start)
        .count();
  };
  if (!flags.predict.empty()) {
    PredictionOptions options;
    const data::DatasetPtr inputs =
        LoadPredictInputs(flags, data.test->input(), &options.sample_names);
    options.batch_size = batch_size;
    options.class_names = data.class_names;
    options.terminal = terminal;
    std::ostringstream file;
    const bool to_file = !flags.predict_out.empty();
    int64_t n = 0;
    try {
      n = WritePredictions(engine, inputs, options, to_file ? file : out,
                           progress);
    } catch (const std::bad_alloc& e) {
      ThrowOutOfMemory(e, batch_size, engine.ranks());
    }
    const std::string path = ResolveUserPath(flags.predict_out);
    if (to_file) WriteOutputFile(path, file.str(), "--predict_out");
    char line[200];
    std::snprintf(line, sizeof(line), "predicted %lld samples in %.1f s on ",
                  static_cast<long long>(n), seconds());
    progress << line << where << (to_file ? ": " + path : std::string())
             << std::endl;
    return true;
  }
  if (!flags.eval_only) return false;
  ProgressBar bar(progress, terminal, "eval", data.test->size());
  SplitEvaluation result;
  try {
    result = EvaluateSplit(engine, data.test, batch_size, data.classes, &bar);
  } catch (const std::bad_alloc& e) {
    ThrowOutOfMemory(e, batch_size, engine.ranks());
  }
  char line[160];
  std::snprintf(line, sizeof(line),
                "test acc: %.3f on %lld images in %.1f s on ", result.accuracy,
                static_cast<long long>(data.test->size()), seconds());
  out << line << where << std::endl;
  if (result.confusion.classes > 0) {
    const std::string lowest =
        LowestClassesLine(result.confusion, data.class_names, "test");
    if (!lowest.empty()) out << lowest << std::endl;
  }
  return true;
}

std::string SetupLine(const std::string& program, const std::string& where,
                      int n, const std::string& backend, const BatchAndLr& run,
                      const TrainerFlags& flags, int threads_per_device,
                      const TrainerData& data) {
  const int64_t batch = run.batch_size;
  std::string line = program + " on " + where + ": backend " + backend +
                     ", batch " + std::to_string(batch);
  std::string batch_notes;
  if (n > 1) {
    batch_notes = std::to_string(batch / n) +
                  (batch % n ? "-" + std::to_string(batch / n + 1) : "") +
                  " per device";
  }
  if (!run.batch_note.empty()) {
    batch_notes += (batch_notes.empty() ? "" : ", ") + run.batch_note;
  }
  if (!batch_notes.empty()) line += " (" + batch_notes + ")";
  if (flags.accumulate_steps > 1) {
    line += " x " + std::to_string(flags.accumulate_steps) +
            " accumulated per step";
  }
  line += ", lr " + FormatNumber(run.lr);
  if (!run.lr_note.empty()) line += " (" + run.lr_note + ")";
  line += ", " + OptimizerLine(flags);
  line += ", " + flags.lr_schedule + " schedule";
  if (flags.warmup_epochs > 0) {
    line += " (warmup " + FormatNumber(flags.warmup_epochs) + " epochs)";
  }
  if (flags.clip_grad_norm > 0) {
    line += ", clip grad norm " + FormatNumber(flags.clip_grad_norm);
  }
  line += ", " + flags.precision + ", ";
  if (flags.grad_dtype != "fp32") {
    line += "gradients " + flags.grad_dtype + " on the wire, ";
  }
  if (flags.layout != "nchw") line += flags.layout + " activations, ";
  if (flags.reproducible) {
    // GPUs (no op threads) take deterministic convolution algorithms.
    line += "reproducible (" + std::to_string(MicroShardCount(flags)) +
            " micro-shards" +
            (threads_per_device > 0 ? "" : ", deterministic convolutions") +
            "), ";
  }
  if (threads_per_device > 0) {  // CPU devices; GPUs use no op threads.
    line += std::to_string(threads_per_device) + " thread" +
            (threads_per_device == 1 ? "" : "s") + " per device, ";
  }
  const int epochs = flags.epochs;
  line += std::to_string(data.train->size()) + " training ";
  if (data.validation != nullptr) {
    line += "(" + std::to_string(data.validation->size()) +
            " held out for validation) ";
  }
  line += "and " + std::to_string(data.test->size()) + " test " +
          (data.train->input().shape.size() == 3 ? "images" : "samples");
  if (data.name != "fashion_mnist") {
    line += " (" + data.name + ", " + data.train->input().Describe() + ")";
  }
  line += ", " + std::to_string(epochs) + " epoch" + (epochs == 1 ? "" : "s");
  return line;
}

int RunTrainerMain(CLI::App& app, int argc, char** argv,
                   const std::function<int()>& body) {
  const int parsed = cli::ParseFlags(app, argc, argv);
  if (parsed >= 0) return parsed;
  HandleStopSignals(app.get_name(), StopMode::kStartUp);
  try {
    // --on_process_loss=regroup: a lost process's failure starts the run
    // again on the job that is left, from the state every process kept.
    while (true) {
      try {
        return body();
      } catch (const std::exception& e) {
        if (!RegroupAfterFailure(app.get_name(), e)) throw;
      }
    }
  } catch (const TrainingInterrupted& e) {
    // Every process of a job stopped after the same step (agree_stop): the
    // first says so, as a lone process would, and each ends on its own.
    std::cout.flush();
    // Output lost (SIGPIPE, the loop's name for it) is an error at run
    // time; a signal ends the program as the shell reports its death.
    const bool lost_output = e.signal() == SIGPIPE;
    if (JobProcess() == 0) {
      PrintLine(app.get_name() + (lost_output ? ": error: " : ": ") + e.what());
    }
    std::exit(lost_output ? 1 : 128 + e.signal());
  } catch (const std::bad_alloc& e) {
    // The loop turns a step's shortage into TrainingOutOfMemory with the
    // batch that fits: one here came before training, building replicas.
    std::cout.flush();
    const std::string what = std::string(e.what()) == "std::bad_alloc"
                                 ? "out of memory (an allocation failed)"
                                 : e.what();
    PrintLine(app.get_name() + ": error" + JobErrorContext() + ": " + what +
              "; the data and the model's replicas did not fit before "
              "training began: use fewer --devices");
    EndJob(1);
  } catch (const ProcessesDisagree& e) {
    // Every process found the same difference at the same point: each
    // says so and ends on its own, no abort needed.
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() + ": " + e.what());
    std::exit(1);
  } catch (const std::exception& e) {
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() + ": " + e.what());
    // Under mpirun the other processes are ended too, not left waiting.
    EndJob(1);
  } catch (...) {
    std::cout.flush();
    PrintLine(app.get_name() + ": error" + JobErrorContext() +
              ": an exception that is not a std::exception (a bug: please "
              "report it)");
    EndJob(1);
  }
}

}  // namespace ringlet::trainers
