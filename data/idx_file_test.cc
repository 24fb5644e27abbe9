#include "data/idx_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/data_error.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

using ::testing::AllOf;
using testing::Gzip;
using ::testing::HasSubstr;
using testing::IdxBytes;
using testing::MakeTempDir;
using testing::WriteFile;

// Runs ReadIdxGz and returns the DataError message, or fails the test.
std::string ErrorOf(const std::string& path, int rank,
                    uint64_t max_bytes = kDefaultIdxMaxBytes) {
  try {
    ReadIdxGz(path, rank, max_bytes);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataError for " << path;
  return "";
}

class IdxFileTest : public ::testing::Test {
 protected:
  std::string dir_ = MakeTempDir("idx_file_test");
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
};

TEST_F(IdxFileTest, ReadsDimsAndDataInOrder) {
  std::vector<uint8_t> data(2 * 3 * 4);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 5);
  WriteFile(Path("a.gz"), Gzip(IdxBytes({2, 3, 4}, data)));
  const IdxArray array = ReadIdxGz(Path("a.gz"), 3);
  EXPECT_EQ(array.dims, (std::vector<uint32_t>{2, 3, 4}));
  EXPECT_EQ(array.data, data);
}

TEST_F(IdxFileTest, ReadsConcatenatedGzipMembers) {
  const std::string raw = IdxBytes({5}, {1, 2, 3, 4, 5});
  WriteFile(Path("b.gz"), Gzip(raw.substr(0, 6)) + Gzip(raw.substr(6)));
  EXPECT_EQ(ReadIdxGz(Path("b.gz"), 1).data,
            (std::vector<uint8_t>{1, 2, 3, 4, 5}));
}

TEST_F(IdxFileTest, ZeroItemsIsAnEmptyArray) {
  WriteFile(Path("c.gz"), Gzip(IdxBytes({0}, {})));
  const IdxArray array = ReadIdxGz(Path("c.gz"), 1);
  EXPECT_EQ(array.dims, std::vector<uint32_t>{0});
  EXPECT_TRUE(array.data.empty());
}

TEST_F(IdxFileTest, MissingFileNamesThePath) {
  EXPECT_THAT(ErrorOf(Path("nope.gz"), 1),
              AllOf(HasSubstr(Path("nope.gz")), HasSubstr("cannot open")));
}

TEST_F(IdxFileTest, EmptyFileIsNotGzip) {
  WriteFile(Path("empty.gz"), "");
  EXPECT_THAT(ErrorOf(Path("empty.gz"), 1),
              AllOf(HasSubstr(Path("empty.gz")), HasSubstr("not a gzip file"),
                    HasSubstr("empty")));
}

TEST_F(IdxFileTest, UncompressedIdxIsNotGzip) {
  WriteFile(Path("raw.gz"), IdxBytes({3}, {1, 2, 3}));
  EXPECT_THAT(ErrorOf(Path("raw.gz"), 1),
              AllOf(HasSubstr(Path("raw.gz")), HasSubstr("not a gzip file"),
                    HasSubstr("00 00 08 01")));
}

TEST_F(IdxFileTest, TruncatedGzipStream) {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<uint8_t>(i * 13);
  const std::string gz = Gzip(IdxBytes({5000}, data));
  WriteFile(Path("cut.gz"), gz.substr(0, gz.size() / 2));
  EXPECT_THAT(ErrorOf(Path("cut.gz"), 1),
              AllOf(HasSubstr(Path("cut.gz")), HasSubstr("truncated gzip")));
}

TEST_F(IdxFileTest, CorruptGzipData) {
  std::string gz = Gzip(IdxBytes({4}, {9, 9, 9, 9}));
  gz[3] = static_cast<char>(0xe0);  // Reserved gzip flag bits.
  WriteFile(Path("bad.gz"), gz);
  EXPECT_THAT(ErrorOf(Path("bad.gz"), 1),
              AllOf(HasSubstr(Path("bad.gz")), HasSubstr("corrupt gzip")));
}

TEST_F(IdxFileTest, StrayBytesAfterTheGzipStream) {
  WriteFile(Path("tail.gz"), Gzip(IdxBytes({1}, {7})) + "junk");
  EXPECT_THAT(ErrorOf(Path("tail.gz"), 1),
              AllOf(HasSubstr(Path("tail.gz")), HasSubstr("stray bytes")));
}

// The reader once loaded the whole compressed file first: a 30 GB file
// ended in std::bad_alloc. The file here is sparse, so it takes no disk.
TEST_F(IdxFileTest, HugeFileIsReadInPiecesAndItsTailRefused) {
  const std::string gz = Gzip(IdxBytes({1}, {7}));
  WriteFile(Path("huge.gz"), gz);
  ASSERT_EQ(::truncate(Path("huge.gz").c_str(), int64_t{30} << 30), 0);
  EXPECT_THAT(ErrorOf(Path("huge.gz"), 1),
              HasSubstr(std::to_string((int64_t{30} << 30) - gz.size()) +
                        " stray bytes after the end of the gzip data"));
}

// 4 GiB of zeros after a valid stream were accepted: the file's size was
// cast to zlib's 32-bit count, which wrapped to the stream's own length.
TEST_F(IdxFileTest, FourGibOfTrailingZerosAreRefused) {
  const std::string gz = Gzip(IdxBytes({1}, {7}));
  WriteFile(Path("wrapped.gz"), gz);
  ASSERT_EQ(::truncate(Path("wrapped.gz").c_str(),
                       (int64_t{1} << 32) + static_cast<int64_t>(gz.size())),
            0);
  EXPECT_THAT(ErrorOf(Path("wrapped.gz"), 1), HasSubstr("stray bytes"));
}

TEST_F(IdxFileTest, AFolderOrAFifoIsNotARegularFile) {
  ASSERT_EQ(::mkdir(Path("folder.gz").c_str(), 0755), 0);
  EXPECT_THAT(ErrorOf(Path("folder.gz"), 1),
              HasSubstr("not a regular file (it is a folder)"));
  ASSERT_EQ(::mkfifo(Path("fifo.gz").c_str(), 0644), 0);
  EXPECT_THAT(ErrorOf(Path("fifo.gz"), 1), HasSubstr("not a regular file"));
}

TEST_F(IdxFileTest, ALongTailIsCountedOnlyUpToALimit) {
  std::vector<uint8_t> body(3 << 20, 0);
  WriteFile(Path("bomb.gz"),
            Gzip(IdxBytes({1}, body)));  // Promises 1 byte, holds 3 MiB.
  EXPECT_THAT(ErrorOf(Path("bomb.gz"), 1),
              HasSubstr("more than 1048576 bytes after the data"));
}

TEST_F(IdxFileTest, WrongMagicNumber) {
  std::string raw = IdxBytes({2}, {1, 2});
  raw[0] = 0x1f;
  WriteFile(Path("magic.gz"), Gzip(raw));
  EXPECT_THAT(ErrorOf(Path("magic.gz"), 1),
              AllOf(HasSubstr(Path("magic.gz")), HasSubstr("not an IDX file"),
                    HasSubstr("0x1f")));
}

TEST_F(IdxFileTest, UnsupportedDataType) {
  WriteFile(Path("float.gz"), Gzip(IdxBytes({1}, {0, 0, 0, 0}, 0x0d)));
  EXPECT_THAT(ErrorOf(Path("float.gz"), 1),
              AllOf(HasSubstr("data type 0x0d"), HasSubstr("not supported")));
}

TEST_F(IdxFileTest, WrongNumberOfDimensions) {
  WriteFile(Path("rank.gz"), Gzip(IdxBytes({2, 2}, {1, 2, 3, 4})));
  EXPECT_THAT(ErrorOf(Path("rank.gz"), 3),
              HasSubstr("has 2 dimensions, expected 3"));
}

TEST_F(IdxFileTest, HeaderCutShort) {
  const std::string raw = IdxBytes({60000, 28, 28}, {});
  WriteFile(Path("short.gz"), Gzip(raw.substr(0, 9)));
  EXPECT_THAT(ErrorOf(Path("short.gz"), 3),
              AllOf(HasSubstr(Path("short.gz")),
                    HasSubstr("file ends inside the IDX header")));
}

TEST_F(IdxFileTest, AbsurdDimensionsAreRefusedBeforeAllocating) {
  // 2^31 images of 28x28 would be 1.6 TB; the reader must not try.
  WriteFile(Path("huge.gz"), Gzip(IdxBytes({1u << 31, 28, 28}, {1, 2, 3})));
  EXPECT_THAT(ErrorOf(Path("huge.gz"), 3),
              AllOf(HasSubstr(Path("huge.gz")), HasSubstr("2147483648 x 28"),
                    HasSubstr("header is corrupt")));
  // Four dimensions of 2^32 - 1 overflow 64 bits; still a clean error.
  WriteFile(Path("overflow.gz"),
            Gzip(IdxBytes({0xffffffff, 0xffffffff, 0xffffffff}, {})));
  EXPECT_THAT(ErrorOf(Path("overflow.gz"), 3), HasSubstr("header is corrupt"));
}

TEST_F(IdxFileTest, RespectsTheByteLimit) {
  WriteFile(Path("limit.gz"),
            Gzip(IdxBytes({10, 10}, std::vector<uint8_t>(100))));
  EXPECT_THAT(ErrorOf(Path("limit.gz"), 2, 99), HasSubstr("99-byte limit"));
  EXPECT_EQ(ReadIdxGz(Path("limit.gz"), 2, 100).data.size(), 100u);
}

TEST_F(IdxFileTest, ZeroInnerDimension) {
  WriteFile(Path("zero.gz"), Gzip(IdxBytes({3, 0, 28}, {})));
  EXPECT_THAT(ErrorOf(Path("zero.gz"), 3), HasSubstr("dimension 1 is zero"));
}

TEST_F(IdxFileTest, DataShorterThanHeaderSays) {
  WriteFile(Path("less.gz"), Gzip(IdxBytes({10}, {1, 2, 3})));
  EXPECT_THAT(ErrorOf(Path("less.gz"), 1),
              AllOf(HasSubstr(Path("less.gz")), HasSubstr("truncated data"),
                    HasSubstr("promises 10 = 10 bytes, the file holds 3")));
}

TEST_F(IdxFileTest, DataLongerThanHeaderSays) {
  WriteFile(Path("more.gz"), Gzip(IdxBytes({2}, {1, 2, 3, 4, 5})));
  EXPECT_THAT(
      ErrorOf(Path("more.gz"), 1),
      AllOf(HasSubstr(Path("more.gz")), HasSubstr("3 bytes after the data")));
}

// ReadIdx: any element type and rank, plain or compressed, big-endian
// values in this machine's order.
TEST_F(IdxFileTest, ReadIdxTakesAnyTypeAndRankPlainOrCompressed) {
  // Two int32 values, 1 and -2, big-endian, as a [2, 1] array.
  const std::vector<uint8_t> be = {0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe};
  const std::string raw = IdxBytes({2, 1}, be, 0x0c);
  WriteFile(Path("ints.idx"), raw);
  WriteFile(Path("ints.idx.gz"), Gzip(raw));
  for (const char* name : {"ints.idx", "ints.idx.gz"}) {
    const Array a = ReadIdx(Path(name));
    EXPECT_EQ(a.type, ElementType::kInt32) << name;
    EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 1})) << name;
    ASSERT_EQ(a.bytes.size(), 8u) << name;
    const int32_t* v = reinterpret_cast<const int32_t*>(a.bytes.data());
    EXPECT_EQ(v[0], 1) << name;
    EXPECT_EQ(v[1], -2) << name;
  }
  // float32 1.5 is 3f c0 00 00.
  WriteFile(Path("f.idx"), IdxBytes({1}, {0x3f, 0xc0, 0, 0}, 0x0d));
  const Array f = ReadIdx(Path("f.idx"));
  EXPECT_EQ(*reinterpret_cast<const float*>(f.bytes.data()), 1.5f);
  EXPECT_EQ(f.Describe(), "float32 [1]");
}

// A plain file's size is checked against the header before allocating.
TEST_F(IdxFileTest, ReadIdxChecksAPlainFilesSizeFirst) {
  WriteFile(Path("short.idx"), IdxBytes({4, 2}, {1, 2, 3}, 0x0b));
  try {
    ReadIdx(Path("short.idx"));
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), AllOf(HasSubstr(Path("short.idx")),
                                HasSubstr("promises 4 x 2 = 16 bytes"),
                                HasSubstr("the file holds 3")));
  }
  WriteFile(Path("type.idx"), IdxBytes({1}, {1}, 0x0a));
  EXPECT_THROW(ReadIdx(Path("type.idx")), DataError);
  WriteFile(Path("rank0.idx"), IdxBytes({}, {}));
  EXPECT_THROW(ReadIdx(Path("rank0.idx")), DataError);
}

}  // namespace
}  // namespace ringlet::data
