#include "trainers/common/checkpoints/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::trainers {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

Checkpoint Sample() {
  Checkpoint c;
  c.settings = {{"program", "lenet_scratch", true},
                {"lr", "0.20000000000000001", true},
                {"epochs", "10", false}};
  c.written = "2026-11-25T10:00:00Z";
  c.devices = "[cpu:0, cpu:1]";
  c.position.epoch = 3;
  c.position.steps = 17;
  c.position.loss_sum = 1234.5678901234567;
  c.position.correct = 999;
  c.position.images = 4352;
  c.position.seconds = 1.25;
  c.history = {{1, 2.3, 0.1, 0.2, 10, 100, 0.01},
               {2, 1.1, 0.5, 0.6, 9, 110, 0}};
  c.tensors = {{"W1", {2, 3}, {1, 2, 3, 4, 5, 6.5f}},
               {"b1", {2}, {-0.0f, 1e-30f}}};
  return c;
}

CheckpointError DecodeError(const std::string& bytes) {
  try {
    DecodeCheckpoint(bytes, "ck");
  } catch (const CheckpointError& e) {
    return e;
  }
  ADD_FAILURE() << "no error";
  return CheckpointError("");
}

TEST(CheckpointTest, RoundTripsExactly) {
  const Checkpoint in = Sample();
  const Checkpoint out = DecodeCheckpoint(EncodeCheckpoint(in), "ck");
  // Only the settings a resumed run must match are kept (and a checkpoint
  // that names no optimizer is SGD's, without augmentation).
  ASSERT_EQ(out.settings.size(), 5u);
  EXPECT_EQ(out.settings[2].name, "accumulate_steps");
  EXPECT_EQ(out.settings[2].value, "1");
  EXPECT_EQ(out.settings[3].name, "optimizer");
  EXPECT_EQ(out.settings[3].value, "sgd");
  EXPECT_EQ(out.settings[4].name, "augment");
  EXPECT_EQ(out.settings[4].value, "none");
  EXPECT_EQ(out.settings[1].name, "lr");
  EXPECT_EQ(out.settings[1].value, "0.20000000000000001");
  EXPECT_EQ(out.written, "2026-11-25T10:00:00Z");
  EXPECT_EQ(out.devices, "[cpu:0, cpu:1]");
  EXPECT_EQ(out.position.epoch, 3);
  EXPECT_EQ(out.position.steps, 17);
  EXPECT_EQ(out.position.loss_sum, in.position.loss_sum);  // Bit for bit.
  EXPECT_EQ(out.position.correct, 999);
  EXPECT_EQ(out.position.images, 4352);
  ASSERT_EQ(out.history.size(), 2u);
  EXPECT_EQ(out.history[1].test_acc, 0.6);
  ASSERT_EQ(out.tensors.size(), 2u);
  EXPECT_EQ(out.tensors[0].name, "W1");
  EXPECT_EQ(out.tensors[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(out.tensors[0].values, in.tensors[0].values);
  EXPECT_EQ(out.tensors[1].values[1], 1e-30f);
  EXPECT_TRUE(std::signbit(out.tensors[1].values[0]));
}

TEST(CheckpointTest, EveryFlippedByteIsCaught) {
  const std::string bytes = EncodeCheckpoint(Sample());
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    EXPECT_THROW(DecodeCheckpoint(bad, "ck"), CheckpointError) << "byte " << i;
  }
}

TEST(CheckpointTest, TruncatedOrForeignFilesAreClearErrors) {
  const std::string bytes = EncodeCheckpoint(Sample());
  EXPECT_NE(std::string(DecodeError(bytes.substr(0, bytes.size() - 3)).what())
                .find("checkpoint ck is corrupt"),
            std::string::npos);
  EXPECT_NE(std::string(DecodeError("PK\x03\x04 a zip file").what())
                .find("is not a ringlet checkpoint"),
            std::string::npos);
  EXPECT_NE(
      std::string(DecodeError("").what()).find("not a ringlet checkpoint"),
      std::string::npos);
}

// Headers a hostile or broken writer could make, each with a valid
// checksum (it guards against corruption, not against a forger): shapes
// whose count wraps around or is negative, positions no run reaches.
TEST(CheckpointTest, HostileHeadersAreCorruptNotAcceptedOrCrashes) {
  std::vector<std::pair<std::string, Checkpoint>> cases;
  Checkpoint c = Sample();
  c.tensors = {{"W", {int64_t{1} << 62, 4}, {}}};  // 2^64 elements: wraps to 0.
  cases.emplace_back("wrapping shape", c);
  c = Sample();
  c.tensors = {{"W", {-1, -2}, {1, 2}}};  // A product of 2.
  cases.emplace_back("negative shape", c);
  c = Sample();
  c.tensors = {{"W", {int64_t{1} << 40, int64_t{1} << 40}, {1}}};
  cases.emplace_back("overflowing shape", c);
  c = Sample();
  c.position.epoch = -5;
  cases.emplace_back("negative epoch", c);
  c = Sample();
  c.position.steps = int64_t{1} << 62;
  cases.emplace_back("step count past any run", c);
  c = Sample();
  c.position.correct = c.position.images + 1;
  cases.emplace_back("more correct than images", c);
  for (const auto& [what, hostile] : cases) {
    const std::string error = DecodeError(EncodeCheckpoint(hostile)).what();
    EXPECT_NE(error.find("checkpoint ck is corrupt"), std::string::npos)
        << what << ": " << error;
  }
  EXPECT_EQ(CheckedElements({2, 3}), 6);
  EXPECT_EQ(CheckedElements({}), 1);
  EXPECT_EQ(CheckedElements({int64_t{1} << 62, 4}), -1);
  EXPECT_EQ(CheckedElements({-1, -2}), -1);
}

TEST(CheckpointTest, WrittenAndReadBackThroughAFile) {
  const std::string path = TempPath("run.ckpt");
  WriteCheckpoint(path, Sample());
  EXPECT_EQ(ReadCheckpoint(path).tensors[0].values[5], 6.5f);
  try {
    ReadCheckpoint(TempPath("missing.ckpt"));
    FAIL() << "expected an error";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("--resume: no file at"),
              std::string::npos);
  }
}

std::string ResumeError(const RunSettings& settings,
                        const std::vector<std::string>& names,
                        const std::vector<int64_t>& sizes) {
  const Checkpoint c = DecodeCheckpoint(EncodeCheckpoint(Sample()), "ck");
  try {
    CheckResumable(c, "ck", settings, names, sizes);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointTest, SettingsNamedAsFlagsOrWordsReadAsPlainNames) {
  Checkpoint c = Sample();
  c.settings = {{"--lr", "0.2", true}, {"training data", "3 images", true}};
  const Checkpoint out = DecodeCheckpoint(EncodeCheckpoint(c), "ck");
  ASSERT_EQ(out.settings.size(), 5u);
  EXPECT_EQ(out.settings[0].name, "lr");
  EXPECT_EQ(out.settings[1].name, "training_data");
}

TEST(CheckpointTest, ResumableOnlyWithTheSameSettingsAndModel) {
  const RunSettings same = {{"program", "lenet_scratch", true},
                            {"lr", "0.20000000000000001", true},
                            {"epochs", "20", false}};  // May change.
  EXPECT_EQ(ResumeError(same, {"W1", "b1"}, {6, 2}), "");
  RunSettings other_lr = same;
  other_lr[1].value = "0.5";
  EXPECT_NE(ResumeError(other_lr, {"W1", "b1"}, {6, 2})
                .find("was written with lr 0.20000000000000001, this run "
                      "has 0.5"),
            std::string::npos);
  EXPECT_NE(ResumeError(same, {"W1"}, {6}).find("another model"),
            std::string::npos);
  EXPECT_NE(ResumeError(same, {"W1", "b1"}, {6, 3}).find("another model"),
            std::string::npos);
  RunSettings more = same;
  more.push_back({"sync_bn", "true", true});
  // A checkpoint of an earlier version lacks the settings added since (the
  // training knobs): the message says so and how to go on.
  const std::string older = ResumeError(more, {"W1", "b1"}, {6, 2});
  EXPECT_NE(older.find("does not record sync_bn"), std::string::npos);
  EXPECT_NE(older.find("older ringlet; leave out --resume"), std::string::npos)
      << older;
}

// A setting recorded only when on (--reproducible, and its threads): a
// checkpoint without it was written with it off. Before: "written by
// another program or by an older ringlet".
TEST(CheckpointTest, ASettingRecordedOnlyWhenOnIsReadAsOffWhenAbsent) {
  RunSettings on = {{"program", "lenet_scratch", true},
                    {"lr", "0.20000000000000001", true},
                    {"reproducible", "8 micro-shards", true, "off"}};
  EXPECT_EQ(ResumeError(on, {"W1", "b1"}, {6, 2}),
            "checkpoint ck was written with reproducible off, this run has 8 "
            "micro-shards; run with the checkpoint's settings to resume it, "
            "or leave out --resume to start afresh");
  RunSettings threads = {{"program", "lenet_scratch", true},
                         {"threads_per_device", "1", true, "1"}};
  EXPECT_EQ(ResumeError(threads, {"W1", "b1"}, {6, 2}), "");
  threads[1].value = "2";
  EXPECT_NE(ResumeError(threads, {"W1", "b1"}, {6, 2})
                .find("was written with threads_per_device 1, this run has 2"),
            std::string::npos);
}

}  // namespace
}  // namespace ringlet::trainers

namespace ringlet::trainers {
namespace {

// The message of the CheckpointError ReadWholeFile throws; "" for none.
std::string ReadError(const std::string& path) {
  try {
    ReadWholeFile(path, "--params_in", "give a file");
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(ReadWholeFileTest, ADeviceIsRefusedNotReadForever) {
  EXPECT_EQ(ReadError("/dev/zero"),
            "--params_in: /dev/zero is a device, not a file; give a file");
  EXPECT_EQ(ReadError(::testing::TempDir()),
            "--params_in: " + ::testing::TempDir() +
                " is a folder, not a file; give a file");
}

// A host that reports 64 MiB available (nn/host_memory.h's test files).
class SmallHost {
 public:
  SmallHost() : meminfo_(::testing::TempDir() + "/small_meminfo") {
    std::ofstream(meminfo_) << "MemTotal: 1048576 kB\nMemAvailable: 65536 kB\n";
    ::mkdir((::testing::TempDir() + "/no_cgroup").c_str(), 0755);
    ::setenv("RINGLET_MEMINFO", meminfo_.c_str(), 1);
    ::setenv("RINGLET_MEMORY_CGROUP",
             (::testing::TempDir() + "/no_cgroup").c_str(), 1);
  }
  ~SmallHost() {
    ::unsetenv("RINGLET_MEMINFO");
    ::unsetenv("RINGLET_MEMORY_CGROUP");
  }

 private:
  std::string meminfo_;
};

TEST(ReadWholeFileTest, AFileLargerThanMemoryIsRefusedBeforeReading) {
  const std::string path = ::testing::TempDir() + "/big.params";
  {
    std::ofstream out(path, std::ios::binary);
    out.seekp((int64_t{48} << 20) - 1);
    out.put('\0');  // 48 MiB, sparse.
  }
  SmallHost host;
  const std::string error = ReadError(path);
  EXPECT_NE(error.find("--params_in: " + path +
                       " is 48.00 MiB, and reading it takes twice that: only "
                       "48.00 MiB of the host's memory are free"),
            std::string::npos)
      << error;
}

TEST(ReadWholeFileTest, AStreamThatDoesNotEndIsCutAtWhatMemoryAllows) {
  const std::string fifo = ::testing::TempDir() + "/endless";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  SmallHost host;  // Streams get half the free memory: 32 MiB.
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    if (fd < 0) return;
    std::vector<char> block(1 << 20, 'x');
    ::signal(SIGPIPE, SIG_IGN);
    for (int i = 0; i < 64; ++i) {
      if (::write(fd, block.data(), block.size()) < 0) break;
    }
    ::close(fd);
  });
  const std::string error = ReadError(fifo);
  writer.join();
  EXPECT_EQ(error, "--params_in: " + fifo +
                       " gave more than 32.00 MiB without ending; name a file "
                       "written by --params_out or --checkpoint_dir");
}

}  // namespace
}  // namespace ringlet::trainers
