#include "trainers/common/checkpoints/run_settings.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "nlohmann/json.hpp"
#include "trainers/common/checkpoints/checksum.h"

namespace ringlet::trainers {

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

const Setting* FindSetting(const RunSettings& settings,
                           const std::string& name) {
  for (const Setting& s : settings) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string DataFingerprint(const data::Dataset& data) {
  // Every input, then every target, each as one run of bytes: the inputs
  // streamed (a data set read from files is never held whole), the
  // targets, small, kept until the inputs are done.
  const int64_t n = data.size();
  const int64_t in = data.input().bytes(), target = data.target().bytes();
  // A byte at least: Read's copies need a buffer even for empty samples.
  std::vector<uint8_t> input(std::max<int64_t>(in, 1)),
      labels(std::max<int64_t>(n * target, 1));
  Checksum64Stream inputs;
  for (int64_t i = 0; i < n; ++i) {
    data.Read(i, input.data(), labels.data() + i * target);
    inputs.Update(input.data(), in);
  }
  Checksum64Stream targets(inputs.Finish());
  targets.Update(labels.data(), n * target);
  const uint64_t h = targets.Finish();
  // Images: an input of channels, height and width.
  return std::to_string(n) +
         (data.input().shape.size() == 3 ? " images" : " samples") +
         ", fingerprint " + HexChecksum(h);
}

std::string BuildFingerprint() {
  std::ifstream exe("/proc/self/exe", std::ios::binary);
  if (!exe) return "unknown";
  std::string bytes((std::istreambuf_iterator<char>(exe)),
                    std::istreambuf_iterator<char>());
  return HexChecksum(Checksum64(bytes.data(), bytes.size()));
}

RunSettings CommonSettings(const std::string& program, const std::string& model,
                           const data::Dataset& train,
                           const data::Dataset& test, int epochs,
                           int64_t batch_size, double lr, uint64_t seed,
                           const std::string& backend,
                           int64_t replica_check_every) {
  return {
      {"program", program, true},
      {"model", model, true},
      {"training_data", DataFingerprint(train), true},
      {"batch_size", std::to_string(batch_size), true},
      {"lr", FormatNumber(lr), true},
      {"seed", std::to_string(seed), true},
      {"test_data", DataFingerprint(test), false},
      {"epochs", std::to_string(epochs), false},
      {"backend", backend, false},
      // A collective every so many steps: all processes must call it.
      {"replica_check_every", std::to_string(replica_check_every), false},
      {"program_checksum", BuildFingerprint(), false},
  };
}

void CheckProcessesAgree(collectives::ProcessGroup* processes,
                         const RunSettings& settings) {
  if (processes == nullptr || processes->processes() == 1) return;
  nlohmann::json mine = nlohmann::json::array();
  for (const Setting& s : settings) mine.push_back({s.name, s.value});
  const std::vector<std::string> all =
      processes->GatherFromProcesses(mine.dump());
  const nlohmann::json first = nlohmann::json::parse(all[0]);
  for (size_t p = 1; p < all.size(); ++p) {
    const nlohmann::json other = nlohmann::json::parse(all[p]);
    for (size_t i = 0; i < first.size() || i < other.size(); ++i) {
      if (i >= first.size() || i >= other.size()) {
        throw ProcessesDisagree(
            "processes 0 and " + std::to_string(p) +
            " run different programs; launch the same program everywhere");
      }
      if (first[i] == other[i]) continue;
      const std::string name = first[i][0].get<std::string>();
      auto shown = [](const nlohmann::json& setting) {
        const std::string value = setting[1].get<std::string>();
        return value.empty() ? std::string("(not given)") : value;
      };
      throw ProcessesDisagree(
          "processes disagree on " + name + ": " + shown(first[i]) +
          " on process 0, " + shown(other[i]) + " on process " +
          std::to_string(p) +
          "; launch every process with the same flags, data and build");
    }
  }
}

}  // namespace ringlet::trainers
