#include "trainers/common/checkpoints/checkpoint.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "host/memory.h"
#include "nlohmann/json.hpp"
#include "trainers/common/checkpoints/checksum.h"
#include "trainers/common/outputs/output_files.h"

namespace ringlet::trainers {
namespace {

constexpr char kMagic[] = "ringlet checkpoint 1\n";
constexpr size_t kMagicBytes = sizeof(kMagic) - 1;

void AppendU64(std::string* out, uint64_t v) {
  char buf[8];
  std::memcpy(buf, &v, 8);
  out->append(buf, 8);
}

uint64_t ReadU64(const std::string& bytes, size_t at) {
  uint64_t v;
  std::memcpy(&v, bytes.data() + at, 8);
  return v;
}

// Settings were once named as flags ("--lr") or in words ("training data").
std::string PlainSettingName(std::string name) {
  if (name.rfind("--", 0) == 0) name.erase(0, 2);
  std::replace(name.begin(), name.end(), ' ', '_');
  return name;
}

// The integer at `key` of `object` within [low, high]; anything else (a
// fraction, a number past int64, a string) is std::invalid_argument.
int64_t IntegerIn(const nlohmann::json& object, const char* key, int64_t low,
                  int64_t high) {
  const nlohmann::json& v = object.at(key);
  if (!v.is_number_integer()) {
    throw std::invalid_argument(std::string(key) + " is not an integer");
  }
  const bool is_unsigned = v.is_number_unsigned();
  if (is_unsigned && v.get<uint64_t>() > static_cast<uint64_t>(high)) {
    throw std::invalid_argument(std::string(key) + " is out of range");
  }
  const int64_t n = v.get<int64_t>();
  if (n < low || n > high) {
    throw std::invalid_argument(std::string(key) + " is " + std::to_string(n) +
                                ", outside [" + std::to_string(low) + ", " +
                                std::to_string(high) + "]");
  }
  return n;
}

// A shape: a list of integers, each non-negative and below 2^62.
std::vector<int64_t> ShapeOf(const nlohmann::json& list) {
  if (!list.is_array()) throw std::invalid_argument("a shape is not a list");
  std::vector<int64_t> shape;
  for (const nlohmann::json& d : list) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      throw std::invalid_argument("a shape holds " + d.dump() + ", not a size");
    }
    shape.push_back(d.get<int64_t>());
  }
  return shape;
}

}  // namespace

int64_t CheckedElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) return -1;
  }
  return n;
}

std::string EncodeCheckpoint(const Checkpoint& c) {
  nlohmann::ordered_json header;
  nlohmann::ordered_json settings = nlohmann::ordered_json::array();
  for (const Setting& s : c.settings) {
    if (s.resume_must_match) settings.push_back({s.name, s.value});
  }
  header["settings"] = settings;
  header["written"] = c.written;
  header["devices"] = c.devices;
  const RunPosition& p = c.position;
  header["position"] = {{"epoch", p.epoch},
                        {"steps", p.steps},
                        {"loss_sum", p.loss_sum},
                        {"correct", p.correct},
                        {"images", p.images},
                        {"seconds", p.seconds},
                        {"comm_seconds", p.comm_seconds},
                        {"exposed_comm_seconds", p.exposed_comm_seconds}};
  nlohmann::ordered_json history = nlohmann::ordered_json::array();
  for (const EpochMetrics& m : c.history) {
    history.push_back(nlohmann::ordered_json::parse(ToJsonLine(m)));
  }
  header["history"] = history;
  nlohmann::ordered_json evals = nlohmann::ordered_json::array();
  for (const StepEval& e : c.evals) {
    evals.push_back(nlohmann::ordered_json::parse(ToJsonLine(e)));
  }
  header["evals"] = evals;
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const CheckpointTensor& t : c.tensors) {
    tensors.push_back({{"name", t.name}, {"shape", t.shape}});
  }
  header["tensors"] = tensors;
  // Doubles round-trip exactly through nlohmann's shortest representation.
  const std::string text = header.dump();

  std::string out(kMagic, kMagicBytes);
  AppendU64(&out, text.size());
  out += text;
  for (const CheckpointTensor& t : c.tensors) {
    out.append(reinterpret_cast<const char*>(t.values.data()),
               t.values.size() * sizeof(float));
  }
  AppendU64(&out, Checksum64(out.data(), out.size()));
  return out;
}

Checkpoint DecodeCheckpoint(const std::string& bytes, const std::string& path) {
  auto corrupt = [&](const std::string& why) {
    return CheckpointError("checkpoint " + path + " is corrupt (" + why +
                           "); delete it, or resume from another one");
  };
  if (bytes.size() < kMagicBytes || bytes.compare(0, kMagicBytes, kMagic)) {
    throw CheckpointError("checkpoint " + path +
                          " is not a ringlet checkpoint (it does not start "
                          "with \"ringlet checkpoint 1\")");
  }
  if (bytes.size() < kMagicBytes + 16) throw corrupt("too short");
  const size_t body = bytes.size() - 8;
  if (ReadU64(bytes, body) != Checksum64(bytes.data(), body)) {
    throw corrupt("its checksum does not match its contents");
  }
  const uint64_t header_bytes = ReadU64(bytes, kMagicBytes);
  const size_t header_at = kMagicBytes + 8;
  if (header_bytes > body - header_at) throw corrupt("header past the end");
  Checkpoint c;
  try {
    const nlohmann::json h =
        nlohmann::json::parse(bytes.substr(header_at, header_bytes));
    for (const auto& s : h.at("settings")) {
      c.settings.push_back({PlainSettingName(s.at(0).get<std::string>()),
                            s.at(1).get<std::string>(), true});
    }
    // Checkpoints written before these were settings: one batch a step,
    // SGD, no augmentation.
    for (const auto& [name, value] :
         {std::pair<const char*, const char*>{"accumulate_steps", "1"},
          {"optimizer", "sgd"},
          {"augment", "none"}}) {
      if (FindSetting(c.settings, name) == nullptr) {
        c.settings.push_back({name, value, true});
      }
    }
    c.written = h.value("written", "");
    c.devices = h.value("devices", "");
    // Positions a run can reach: a hostile header must not drive the loop
    // to a negative epoch or overflow its step arithmetic.
    constexpr int64_t kMost = int64_t{1} << 40;
    const auto& p = h.at("position");
    c.position.epoch = static_cast<int>(IntegerIn(p, "epoch", 1, 1 << 30));
    c.position.steps = IntegerIn(p, "steps", 0, kMost);
    c.position.loss_sum = p.at("loss_sum").get<double>();
    c.position.images = IntegerIn(p, "images", 0, kMost);
    c.position.correct = IntegerIn(p, "correct", 0, c.position.images);
    c.position.seconds = p.at("seconds").get<double>();
    c.position.comm_seconds = p.at("comm_seconds").get<double>();
    c.position.exposed_comm_seconds = p.value("exposed_comm_seconds", 0.0);
    for (const auto& m : h.at("history")) {
      c.history.push_back(FromJsonLine(m.dump()));
    }
    // Checkpoints written before evaluations were kept have none.
    if (h.contains("evals")) {
      for (const auto& e : h.at("evals")) {
        c.evals.push_back(StepEvalFromJsonLine(e.dump()));
      }
    }
    size_t at = header_at + header_bytes;
    for (const auto& t : h.at("tensors")) {
      CheckpointTensor tensor;
      tensor.name = t.at("name").get<std::string>();
      tensor.shape = ShapeOf(t.at("shape"));
      const int64_t n = CheckedElements(tensor.shape);
      if (n < 0 || static_cast<uint64_t>(n) > (body - at) / sizeof(float)) {
        throw corrupt("tensor " + tensor.name + " runs past the end");
      }
      tensor.values.resize(n);
      std::memcpy(tensor.values.data(), bytes.data() + at, n * sizeof(float));
      at += n * sizeof(float);
      c.tensors.push_back(std::move(tensor));
    }
    if (at != body) throw corrupt("bytes left after the last tensor");
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(std::string("header: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw corrupt(e.what());
  }
  return c;
}

void WriteCheckpoint(const std::string& path, const Checkpoint& checkpoint) {
  WriteOutputFile(path, EncodeCheckpoint(checkpoint), "--checkpoint_dir",
                  /*stream_ok=*/false);
}

std::string ReadWholeFile(const std::string& path, const std::string& flag,
                          const std::string& if_missing) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      throw CheckpointError(flag + ": no file at " + path + "; " + if_missing);
    }
    throw CheckpointError(flag + ": cannot read " + path + " (" +
                          std::strerror(errno) + ")");
  }
  if (S_ISDIR(st.st_mode)) {
    throw CheckpointError(flag + ": " + path + " is a folder, not a file; " +
                          if_missing);
  }
  // /dev/zero and its kind never end.
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    throw CheckpointError(flag + ": " + path + " is a device, not a file; " +
                          if_missing);
  }
  // The bytes, then the decoded tensors: twice the file, checked before
  // reading (Linux would overcommit and kill the process later).
  const bool regular = S_ISREG(st.st_mode);
  const host::HostMemory memory = host::ReadHostMemory();
  const std::string shortfall =
      regular ? host::HostMemoryShortfall(2 * int64_t{st.st_size}) : "";
  if (!shortfall.empty()) {
    throw CheckpointError(flag + ": " + path + " is " +
                          host::FormatBytes(st.st_size) +
                          ", and reading it takes twice that: " + shortfall +
                          "; free some memory, or read it on a larger machine");
  }
  // A FIFO or pipe says no size: read up to what memory allows.
  const int64_t most =
      regular ? int64_t{st.st_size}
              : std::min<int64_t>(kMaxStreamedFileBytes,
                                  memory.available < 0 ? kMaxStreamedFileBytes
                                                       : memory.available / 2);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw CheckpointError(flag + ": cannot read " + path + " (" +
                          std::strerror(errno) + ")");
  }
  std::string bytes;
  char chunk[1 << 16];
  while (in.read(chunk, sizeof(chunk)) || in.gcount() > 0) {
    bytes.append(chunk, static_cast<size_t>(in.gcount()));
    if (!regular && static_cast<int64_t>(bytes.size()) > most) {
      throw CheckpointError(flag + ": " + path + " gave more than " +
                            host::FormatBytes(most) +
                            " without ending; name a file written by "
                            "--params_out or --checkpoint_dir");
    }
  }
  if (in.bad()) throw CheckpointError(flag + ": cannot read " + path);
  return bytes;
}

Checkpoint ReadCheckpoint(const std::string& path, const std::string& flag,
                          const std::string& if_missing) {
  return DecodeCheckpoint(ReadWholeFile(path, flag, if_missing), path);
}

void CheckTensorValues(const CheckpointTensor& t, const std::string& source) {
  auto ends_with = [&](const std::string& suffix) {
    return t.name.size() >= suffix.size() &&
           t.name.compare(t.name.size() - suffix.size(), suffix.size(),
                          suffix) == 0;
  };
  const bool non_negative = ends_with("running_var") || ends_with("exp_avg_sq");
  for (size_t i = 0; i < t.values.size(); ++i) {
    const float v = t.values[i];
    const bool finite = std::isfinite(v);
    if (finite && !(non_negative && v < 0)) continue;
    char value[32];
    std::snprintf(value, sizeof(value), "%g", v);
    throw CheckpointError(
        source + ": tensor " + t.name + " holds " + value + " at element " +
        std::to_string(i) + " of " + std::to_string(t.values.size()) + "; " +
        (finite ? "a variance cannot be negative"
                : "a model's values must be finite") +
        " (the file comes from a run that diverged, or is damaged): use "
        "another file, or train afresh");
  }
}

void CheckResumable(const Checkpoint& c, const std::string& path,
                    const RunSettings& settings,
                    const std::vector<std::string>& names,
                    const std::vector<int64_t>& sizes) {
  for (const Setting& saved : c.settings) {
    for (const Setting& now : settings) {
      if (now.name != saved.name || now.value == saved.value) continue;
      throw CheckpointError(
          "checkpoint " + path + " was written with " + saved.name + " " +
          saved.value + ", this run has " + now.value +
          "; run with the checkpoint's settings to resume it, or leave out "
          "--resume to start afresh");
    }
  }
  for (const Setting& now : settings) {
    if (!now.resume_must_match) continue;
    bool found = false;
    for (const Setting& saved : c.settings) found |= saved.name == now.name;
    if (!found && !now.when_absent.empty() && now.value != now.when_absent) {
      throw CheckpointError(
          "checkpoint " + path + " was written with " + now.name + " " +
          now.when_absent + ", this run has " + now.value +
          "; run with the checkpoint's settings to resume it, or leave out "
          "--resume to start afresh");
    }
    if (!found && now.when_absent.empty()) {
      throw CheckpointError(
          "checkpoint " + path + " does not record " + now.name +
          "; it was written by another program or by an "
          "older ringlet; leave out --resume to start afresh");
    }
  }
  for (const CheckpointTensor& t : c.tensors) {
    CheckTensorValues(t, "checkpoint " + path);
  }
  if (c.tensors.size() != names.size()) {
    throw CheckpointError(
        "checkpoint " + path + " holds " + std::to_string(c.tensors.size()) +
        " tensors, this model has " + std::to_string(names.size()) +
        "; it belongs to another model");
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const CheckpointTensor& t = c.tensors[i];
    if (t.name != names[i] ||
        static_cast<int64_t>(t.values.size()) != sizes[i]) {
      throw CheckpointError(
          "checkpoint " + path + ": tensor " + std::to_string(i) + " is " +
          t.name + " of " + std::to_string(t.values.size()) +
          " values, this model's is " + names[i] + " of " +
          std::to_string(sizes[i]) + "; it belongs to another model");
    }
  }
}

}  // namespace ringlet::trainers
