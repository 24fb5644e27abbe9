#include "data/cifar.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "data/data_error.h"
#include "data/testing/idx_writer.h"
#include "host/testing/memory_cgroup.h"

namespace ringlet::data {
namespace {

using ::testing::AllOf;
using testing::Gzip;
using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::WriteFile;

// n records whose pixels depend on the record and the byte, labels
// label_of(i) (CIFAR-100: coarse label 19 - fine % 20 first).
std::string Records(CifarKind kind, int n, int first = 0) {
  std::string out;
  for (int i = first; i < first + n; ++i) {
    const int label = kind == CifarKind::k10 ? i % 10 : i % 100;
    if (kind == CifarKind::k100) out += static_cast<char>(19 - label % 20);
    out += static_cast<char>(label);
    for (int p = 0; p < kCifarImageBytes; ++p) {
      out += static_cast<char>((i * 7 + p) & 0xff);
    }
  }
  return out;
}

class CifarTest : public ::testing::Test {
 protected:
  std::string dir_ = MakeTempDir("cifar_test");
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
};

TEST_F(CifarTest, ReadsRecordsInOrder) {
  for (CifarKind kind : {CifarKind::k10, CifarKind::k100}) {
    WriteFile(Path("b.bin"), Records(kind, 13));
    const CifarImages c = ReadCifarBatch(Path("b.bin"), kind);
    ASSERT_EQ(c.labels.size(), 13u);
    EXPECT_EQ(c.images.dims, (std::vector<int64_t>{13, 3, 32, 32}));
    EXPECT_EQ(c.classes, kind == CifarKind::k10 ? 10 : 100);
    EXPECT_EQ(c.labels[12], 12 % c.classes);  // The fine label.
    EXPECT_EQ(c.images.bytes[12 * kCifarImageBytes + 5], (12 * 7 + 5) & 0xff);
  }
  WriteFile(Path("g.bin.gz"), Gzip(Records(CifarKind::k10, 3)));
  EXPECT_EQ(ReadCifarBatch(Path("g.bin.gz"), CifarKind::k10).labels.size(), 3u);
}

TEST_F(CifarTest, LoadsTheSplitsFilesInOrder) {
  for (int i = 1; i <= 5; ++i) {
    WriteFile(Path("data_batch_" + std::to_string(i) + ".bin"),
              Records(CifarKind::k10, 2, 2 * (i - 1)));
  }
  WriteFile(Path("test_batch.bin"), Records(CifarKind::k10, 3));
  const CifarImages train = LoadCifarSplit(dir_, CifarKind::k10, "train");
  ASSERT_EQ(train.labels.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(train.labels[i], i);
  EXPECT_EQ(train.images.bytes[9 * kCifarImageBytes], (9 * 7) & 0xff);
  EXPECT_EQ(LoadCifarSplit(dir_, CifarKind::k10, "test").labels.size(), 3u);
  try {
    LoadCifarSplit(dir_, CifarKind::k100, "train");
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr("train.bin: not found"),
                                HasSubstr("cifar-100-binary.tar.gz")));
  }
}

TEST_F(CifarTest, BrokenFilesAreOneLineErrors) {
  WriteFile(Path("cut.bin"), Records(CifarKind::k10, 2).substr(0, 5000));
  EXPECT_THROW(ReadCifarBatch(Path("cut.bin"), CifarKind::k10), DataError);
  WriteFile(Path("cut.bin.gz"),
            Gzip(Records(CifarKind::k10, 2).substr(0, 5000)));
  try {
    ReadCifarBatch(Path("cut.bin.gz"), CifarKind::k10);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("record 1 is cut short"));
  }
  // A CIFAR-100 file read as CIFAR-10: records of the wrong size.
  WriteFile(Path("100.bin"), Records(CifarKind::k100, 3));
  EXPECT_THAT(
      [&] {
        try {
          ReadCifarBatch(Path("100.bin"), CifarKind::k10);
        } catch (const DataError& e) {
          return std::string(e.what());
        }
        return std::string();
      }(),
      HasSubstr("not a whole number of CIFAR-10 records of 3073 bytes"));
  std::string bad = Records(CifarKind::k10, 2);
  bad[3073] = 10;  // Record 1's label.
  WriteFile(Path("label.bin"), bad);
  try {
    ReadCifarBatch(Path("label.bin"), CifarKind::k10);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("record 1 has label 10, outside 0..9"));
  }
  WriteFile(Path("empty.bin"), "");
  EXPECT_THROW(ReadCifarBatch(Path("empty.bin"), CifarKind::k10), DataError);
}

// A compressed batch of 400 MB of records (labels 0, black images) in a
// 256 MiB memory cgroup: one line saying the images do not fit, where
// before the buffer grew until the kernel killed the process (exit 137).
TEST_F(CifarTest, ACompressedBatchPastTheHostsMemoryIsRefusedNotKilled) {
  const std::string member =
      Gzip(std::string(16384 * (1 + kCifarImageBytes), '\0'));  // 50 MB.
  std::string file;
  for (int i = 0; i < 8; ++i) file += member;  // gzip members concatenate.
  WriteFile(Path("huge.bin.gz"), file);
  const std::string path = Path("huge.bin.gz");
  const int code = host::testing::RunInCgroup(256 * host::testing::kMiB, [&] {
    try {
      ReadCifarBatch(path, CifarKind::k10);
    } catch (const DataError& e) {
      return std::string(e.what()).find(
                 " so far, and more to come) do not fit: only ") !=
                     std::string::npos
                 ? 0
                 : 3;
    }
    return 4;
  });
  if (code < 0) GTEST_SKIP() << "no memory cgroup this test may make";
  EXPECT_EQ(code, 0) << (code > 128 ? "killed" : "not the one-line error");
}

}  // namespace
}  // namespace ringlet::data
