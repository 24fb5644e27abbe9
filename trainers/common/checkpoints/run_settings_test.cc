#include "trainers/common/checkpoints/run_settings.h"

#include <algorithm>
#include <string>
#include <vector>

#include "data/batch_loader.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "trainers/common/checkpoints/checksum.h"

namespace ringlet::trainers {
namespace {

data::Split MakeSplit(int n) {
  data::Split split;
  split.pixels.assign(n * data::kImagePixels, 7);
  split.labels.assign(n, 3);
  return split;
}

std::string FingerprintOf(const data::Split& split) {
  return DataFingerprint(*data::SplitDataset(split));
}

TEST(DataFingerprintTest, ChangesWithAnyPixelOrLabel) {
  const data::Split a = MakeSplit(5);
  data::Split b = a;
  EXPECT_EQ(FingerprintOf(a), FingerprintOf(b));
  EXPECT_EQ(FingerprintOf(a).rfind("5 images, fingerprint ", 0), 0u);
  b.pixels[4 * data::kImagePixels + 100] = 8;
  EXPECT_NE(FingerprintOf(a), FingerprintOf(b));
  b = a;
  b.labels[0] = 4;
  EXPECT_NE(FingerprintOf(a), FingerprintOf(b));
}

// Streamed in pieces of any size, the checksum of the whole.
TEST(Checksum64StreamTest, IsChecksum64OfTheConcatenation) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>(i * 37));
  for (size_t piece : {1, 3, 7, 8, 13, 64, 1000}) {
    for (size_t length : {0, 5, 8, 9, 999, 1000}) {
      Checksum64Stream s(12345);
      for (size_t at = 0; at < length; at += piece) {
        s.Update(bytes.data() + at, std::min(piece, length - at));
      }
      EXPECT_EQ(s.Finish(), Checksum64(bytes.data(), length, 12345))
          << piece << " " << length;
    }
  }
}

// Checkpoints record the fingerprint: a Fashion-MNIST split's stays the
// checksum of its pixels, then its labels, as it always was.
TEST(DataFingerprintTest, AFashionMnistSplitsIsItsPixelsThenLabels) {
  data::Split a = MakeSplit(3);
  a.pixels[5] = 200;
  a.labels[2] = 9;
  uint64_t h = Checksum64(a.pixels.data(), a.pixels.size());
  h = Checksum64(a.labels.data(), a.labels.size() * sizeof(int32_t), h);
  EXPECT_EQ(FingerprintOf(a), "3 images, fingerprint " + HexChecksum(h));
}

// A job of processes whose settings are given: GatherFromProcesses hands
// out the others' JSON as CheckProcessesAgree encoded this process's own.
class FakeProcesses : public collectives::ProcessGroup {
 public:
  explicit FakeProcesses(std::vector<RunSettings> others)
      : others_(std::move(others)) {}
  int process() const override { return 0; }
  int processes() const override { return 1 + others_.size(); }
  int first_rank() const override { return 0; }
  int local_ranks() const override { return 1; }
  int size() const override { return processes(); }
  void SetLocalDevices(const std::vector<collectives::RankDevice>&) override {}
  std::vector<collectives::RankDevice> local_devices() const override {
    return {collectives::RankDevice::Host()};
  }
  std::vector<std::unique_ptr<collectives::Communicator>> CreateGroup(
      const std::string&, const collectives::CommOptions&) override {
    return {};
  }
  void SumOverProcesses(double*, size_t) override {}
  std::vector<std::string> GatherFromProcesses(
      const std::string& mine) override {
    std::vector<std::string> all = {mine};
    for (const RunSettings& settings : others_) {
      nlohmann::json j = nlohmann::json::array();
      for (const Setting& s : settings) j.push_back({s.name, s.value});
      all.push_back(j.dump());
    }
    return all;
  }

 private:
  std::vector<RunSettings> others_;
};

std::string Disagreement(const RunSettings& mine,
                         const std::vector<RunSettings>& others) {
  FakeProcesses processes(others);
  try {
    CheckProcessesAgree(&processes, mine);
  } catch (const ProcessesDisagree& e) {
    return e.what();
  }
  return "";
}

TEST(CheckProcessesAgreeTest, NamesTheFirstSettingThatDiffersWithBothValues) {
  const RunSettings mine = {
      {"program", "lenet_scratch"}, {"--lr", "0.2"}, {"--seed", "0"}};
  EXPECT_EQ(Disagreement(mine, {mine, mine}), "");
  RunSettings other = mine;
  other[1].value = "5";
  other[2].value = "1";
  EXPECT_EQ(
      Disagreement(mine, {mine, other})
          .rfind("processes disagree on --lr: 0.2 on process 0, 5 on process 2",
                 0),
      0u);
  EXPECT_NE(Disagreement(mine, {{{"program", "resnet_dp"}}})
                .find("processes disagree on program"),
            std::string::npos);
  EXPECT_NO_THROW(CheckProcessesAgree(nullptr, mine));  // One process.
}

// Before: "--metrics_out: m.json on process 0,  on process 1".
TEST(CheckProcessesAgreeTest, AValueNotGivenIsSaidSo) {
  const RunSettings mine = {{"--metrics_out", "m.json"}};
  const RunSettings other = {{"--metrics_out", ""}};
  EXPECT_EQ(Disagreement(mine, {mine, other})
                .rfind("processes disagree on --metrics_out: m.json on "
                       "process 0, (not given) on process 2;",
                       0),
            0u);
}

}  // namespace
}  // namespace ringlet::trainers
