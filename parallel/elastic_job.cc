#include "parallel/elastic_job.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "collectives/api/collective_error.h"
#include "collectives/backends/launch.h"
#include "data/data_error.h"
#include "data/safetensors.h"

namespace ringlet::parallel {

// A finished step's state, as every replica holds it, in host memory.
struct ElasticKeptStep {
  StepMark mark;  // Epoch from 1.
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;
  std::vector<double> sums;
};

namespace {

constexpr char kStepKey[] = "ringlet_elastic_step";
constexpr char kSumsKey[] = "ringlet_elastic_sums";
constexpr char kSettingsKey[] = "ringlet_elastic_settings";

using Settings = std::map<std::string, std::string>;

data::SafetensorsFile ToFile(const ElasticKeptStep& kept,
                             const Settings& settings) {
  data::SafetensorsFile file;
  for (size_t i = 0; i < kept.names.size(); ++i) {
    data::Array a;
    a.type = data::ElementType::kFloat32;
    a.dims = kept.shapes[i];
    const auto* bytes = reinterpret_cast<const uint8_t*>(kept.values[i].data());
    a.bytes.assign(bytes, bytes + kept.values[i].size() * sizeof(float));
    file.tensors.emplace_back(kept.names[i], std::move(a));
  }
  file.metadata[kStepKey] =
      std::to_string(kept.mark.epoch) + " " + std::to_string(kept.mark.steps);
  file.metadata[kSumsKey] = nlohmann::json(kept.sums).dump();
  file.metadata[kSettingsKey] = nlohmann::json(settings).dump();
  return file;
}

// `settings` (where given) gets those the file was written with.
ElasticKeptStep FromFile(const data::SafetensorsFile& file,
                         const std::string& source,
                         Settings* settings = nullptr) {
  const auto step = file.metadata.find(kStepKey);
  const auto sums = file.metadata.find(kSumsKey);
  if (step == file.metadata.end() || sums == file.metadata.end()) {
    throw data::DataError(source +
                          " is not an ElasticJob's checkpoint (its "
                          "metadata holds no " +
                          kStepKey + "): give the file a job wrote");
  }
  ElasticKeptStep kept;
  std::istringstream in(step->second);
  if (!(in >> kept.mark.epoch >> kept.mark.steps) || kept.mark.epoch < 1 ||
      kept.mark.steps < 0) {
    throw data::DataError(source + ": " + kStepKey + " is '" + step->second +
                          "', not an epoch from 1 and a step count");
  }
  try {
    kept.sums = nlohmann::json::parse(sums->second).get<std::vector<double>>();
  } catch (const nlohmann::json::exception&) {
    throw data::DataError(source + ": " + kSumsKey + " is '" + sums->second +
                          "', not a JSON array of numbers");
  }
  if (settings != nullptr) {
    const auto written = file.metadata.find(kSettingsKey);
    try {
      *settings = written == file.metadata.end()
                      ? Settings{}
                      : nlohmann::json::parse(written->second).get<Settings>();
    } catch (const nlohmann::json::exception&) {
      throw data::DataError(source + ": " + kSettingsKey + " is '" +
                            written->second +
                            "', not a JSON object of strings");
    }
  }
  // The file's tensors come in name order; DataParallel::State's order is
  // restored by name in Resume.
  for (const auto& [name, array] : file.tensors) {
    if (array.type != data::ElementType::kFloat32) {
      throw data::DataError(source + ": tensor " + name + " is " +
                            data::ToString(array.type) + ", not float32");
    }
    kept.names.push_back(name);
    kept.shapes.push_back(array.dims);
    std::vector<float> values(array.bytes.size() / sizeof(float));
    std::memcpy(values.data(), array.bytes.data(), array.bytes.size());
    kept.values.push_back(std::move(values));
  }
  return kept;
}

StepMark MarkOf(const std::shared_ptr<const ElasticKeptStep>& kept) {
  return kept ? kept->mark : StepMark{};
}

std::string Where(const ElasticKeptStep& kept) {
  return "epoch " + std::to_string(kept.mark.epoch) + ", step " +
         std::to_string(kept.mark.steps);
}

// The file's bytes, "" when there is none. Throws std::runtime_error for
// one that is there but cannot be read (or is not a file).
std::string ReadIfThere(const std::string& path) {
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (status.type() == std::filesystem::file_type::not_found) return "";
  if (status.type() != std::filesystem::file_type::regular) {
    throw std::runtime_error("the checkpoint " + path +
                             " is not a file: give a file's path");
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in),
                    std::istreambuf_iterator<char>{});
  if (!in && !in.eof()) {
    throw std::runtime_error("cannot read the checkpoint " + path + " (" +
                             std::strerror(errno) + ")");
  }
  return bytes;
}

}  // namespace

ElasticJob::ElasticJob(int local_devices, ElasticOptions options)
    : options_(std::move(options)) {
  const std::string& program = options_.program;
  if (options_.checkpoint_every < 0 ||
      (options_.checkpoint_every > 0 && options_.checkpoint.empty())) {
    throw std::invalid_argument(
        "checkpoint_every is " + std::to_string(options_.checkpoint_every) +
        ": give 0 (no checkpoints), or steps from 1 with a checkpoint file");
  }
  world_ = collectives::JoinLaunchedJob(local_devices);
  if (world_ != nullptr && world_->JoinedRunningJob()) {
    // Started later: the others are regrouping to take this process in.
    const JoinedJob joined = JoinRunning(*world_, program, ++memberships_);
    records_ = joined.record;
    if (!joined.state.empty()) {
      resume_ = std::make_shared<const Kept>(FromFile(
          data::DecodeSafetensors(joined.state, "the state sent by process 0"),
          "the state sent by process 0"));
    }
    newest_ = resume_;
    return;
  }
  if (world_ != nullptr) {
    const std::string mine =
        std::string("regroup ") + (options_.regroup ? "on" : "off") +
        ", a checkpoint every " + std::to_string(options_.checkpoint_every) +
        " steps, settings " + nlohmann::json(options_.settings).dump();
    const std::vector<std::string> all = world_->GatherFromProcesses(mine);
    for (size_t p = 1; p < all.size(); ++p) {
      if (all[p] != all[0]) {
        throw std::invalid_argument(
            "the processes' ElasticOptions differ: " + all[0] +
            " on process 0, " + all[p] + " on process " + std::to_string(p));
      }
    }
  }
  if (options_.checkpoint.empty()) return;
  const int restart = collectives::LauncherRestartCount();
  if (restart == 0) {
    std::error_code error;
    if (leader() && options_.checkpoint_every > 0 &&
        std::filesystem::exists(options_.checkpoint, error)) {
      std::cerr << program << ": " << options_.checkpoint
                << " holds an earlier run's checkpoint: a first start writes "
                   "it anew (a launcher's restart resumes from it)"
                << std::endl;
    }
    return;
  }
  // Process 0 reads the file and sends it: the others may be on hosts
  // that cannot see it.
  std::string bytes = leader() ? ReadIfThere(options_.checkpoint) : "";
  if (world_ != nullptr) bytes = ShareFromProcessZero(*world_, bytes);
  if (bytes.empty()) {
    if (leader()) {
      std::cout << program << ": restart " << restart
                << " of this job: " << options_.checkpoint
                << " holds no checkpoint yet: starting from the beginning"
                << std::endl;
    }
    return;
  }
  Settings written;
  resume_ = std::make_shared<const Kept>(
      FromFile(data::DecodeSafetensors(bytes, options_.checkpoint),
               options_.checkpoint, &written));
  CheckSameRun(written);
  newest_ = resume_;
  if (leader()) {
    std::cout << program << ": restart " << restart
              << " of this job: resuming from " << options_.checkpoint << " ("
              << Where(*resume_) << ")" << std::endl;
  }
}

ElasticJob::~ElasticJob() {
  if (!writing_.valid()) return;
  try {
    writing_.get();
  } catch (const std::exception& e) {
    std::cerr << options_.program << ": " << e.what() << std::endl;
  }
}

void ElasticJob::CheckSameRun(const Settings& written) const {
  const auto describe = [](const Settings& m, const std::string& name) {
    const auto found = m.find(name);
    return found == m.end() ? std::string("none") : "'" + found->second + "'";
  };
  Settings names = written;
  names.insert(options_.settings.begin(), options_.settings.end());
  for (const auto& entry : names) {
    const std::string there = describe(written, entry.first);
    const std::string here = describe(options_.settings, entry.first);
    if (there != here) {
      throw std::invalid_argument(
          options_.checkpoint + " is another run's: its " + entry.first +
          " is " + there + ", this run's " + here +
          " (remove the file to start afresh, or give another checkpoint)");
    }
  }
}

int ElasticJob::Run(const std::function<int()>& body) {
  while (true) {
    try {
      const int code = body();
      if (writing_.valid()) writing_.get();
      return code;
    } catch (const std::exception& e) {
      if (!Regroup(e)) throw;
    }
  }
}

bool ElasticJob::Regroup(const std::exception& failure) {
  if (!options_.regroup ||
      !CanRegroup(world_.get(), failure, options_.program)) {
    return false;
  }
  const Regrouped r =
      RegroupLiving(*world_, options_.program, failure, ++memberships_,
                    MarkOf(newest_), MarkOf(before_), [this](int kept) {
                      return data::EncodeSafetensors(ToFile(
                          kept == 0 ? *newest_ : *before_, options_.settings));
                    });
  world_ = r.world;
  resume_ = r.kept == 0 ? newest_ : r.kept == 1 ? before_ : nullptr;
  // A loss before the next step finishes goes back to the same state.
  newest_ = resume_;
  before_ = nullptr;
  if (!records_.empty()) records_ += "\n";
  records_ += r.record;
  return true;
}

ElasticStart ElasticJob::Resume(DataParallel& dp) {
  if (resume_ == nullptr) return {};
  const NamedTensors live = dp.State(0);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < resume_->names.size(); ++i) {
    index[resume_->names[i]] = i;
  }
  if (index.size() != live.names.size()) {
    throw std::invalid_argument(
        "the state to resume holds " + std::to_string(index.size()) +
        " tensors, the model " + std::to_string(live.names.size()) +
        ": it is another model's");
  }
  std::vector<const float*> values;
  for (size_t i = 0; i < live.names.size(); ++i) {
    const auto found = index.find(live.names[i]);
    if (found == index.end() ||
        resume_->shapes[found->second] != live.tensors[i]->shape()) {
      throw std::invalid_argument(
          "the state to resume " +
          (found == index.end()
               ? "has no tensor " + live.names[i]
               : "holds " + live.names[i] + " in another shape") +
          ": it is another model's");
    }
    values.push_back(resume_->values[found->second].data());
  }
  dp.LoadState(values);
  ElasticStart at;
  at.epoch = resume_->mark.epoch - 1;
  at.step = resume_->mark.steps;
  at.sums = resume_->sums;
  resume_ = nullptr;
  return at;
}

void ElasticJob::StepDone(DataParallel& dp, int64_t epoch, int64_t steps,
                          std::vector<double> sums) {
  const bool keep = world_ != nullptr && options_.regroup;
  const bool due = options_.checkpoint_every > 0 &&
                   ++steps_since_checkpoint_ >= options_.checkpoint_every;
  if (keep || due) {
    auto kept = std::make_shared<Kept>();
    kept->mark = {static_cast<int>(epoch + 1), steps};
    kept->sums = std::move(sums);
    const NamedTensors state = dp.State(0);
    for (size_t i = 0; i < state.names.size(); ++i) {
      const nn::Tensor& t = *state.tensors[i];
      kept->names.push_back(state.names[i]);
      kept->shapes.emplace_back(t.shape().begin(), t.shape().end());
      kept->values.emplace_back(t.data(), t.data() + t.numel());
    }
    if (keep) {
      before_ = std::move(newest_);
      newest_ = kept;
    }
    if (due) {
      steps_since_checkpoint_ = 0;
      if (leader()) WriteCheckpoint(kept);
    }
  }
  // Between steps every process asks whether one waits to join.
  if (keep && world_->JoinersWaiting()) {
    throw MembershipChange("a process started later asks to join the job");
  }
}

void ElasticJob::WriteCheckpoint(std::shared_ptr<const Kept> state) {
  // One write at a time; the last one's failure surfaces here.
  if (writing_.valid()) writing_.get();
  writing_ = std::async(
      std::launch::async, [path = options_.checkpoint, state = std::move(state),
                           settings = options_.settings] {
        data::WriteSafetensors(path, ToFile(*state, settings));
      });
}

}  // namespace ringlet::parallel
