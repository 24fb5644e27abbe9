#include "data/npz_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "data/data_error.h"
#include "data/npy_file.h"
#include "data/testing/idx_writer.h"
#include "host/testing/memory_cgroup.h"

namespace ringlet::data {
namespace {

using ::testing::HasSubstr;
using testing::MakeTempDir;
using testing::WriteFile;

Array Ints(std::vector<int64_t> dims, std::vector<int32_t> v) {
  Array a;
  a.type = ElementType::kInt32;
  a.dims = std::move(dims);
  a.bytes.resize(v.size() * 4);
  if (!v.empty()) std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
  return a;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadNpz(path);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataError for " << path;
  return "";
}

// np.savez_compressed's form: each member deflated. Made here from a
// stored archive by deflating its one member in place of the stored bytes.
std::string Deflated(const std::string& npy, const std::string& name) {
  std::string packed(compressBound(npy.size()) + 64, '\0');
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(npy.data()));
  z.avail_in = npy.size();
  z.next_out = reinterpret_cast<Bytef*>(packed.data());
  z.avail_out = packed.size();
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  packed.resize(z.total_out);
  deflateEnd(&z);
  const uint32_t crc =
      crc32(0, reinterpret_cast<const Bytef*>(npy.data()), npy.size());
  auto le = [](uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
    return s;
  };
  const std::string file = name + ".npy";
  std::string out = "PK\x03\x04" + le(20, 2) + le(0, 2) + le(8, 2) + le(0, 4) +
                    le(crc, 4) + le(packed.size(), 4) + le(npy.size(), 4) +
                    le(file.size(), 2) + le(0, 2) + file + packed;
  const std::string dir = "PK\x01\x02" + le(20, 2) + le(20, 2) + le(0, 2) +
                          le(8, 2) + le(0, 4) + le(crc, 4) +
                          le(packed.size(), 4) + le(npy.size(), 4) +
                          le(file.size(), 2) + le(0, 2) + le(0, 2) + le(0, 2) +
                          le(0, 2) + le(0, 4) + le(0, 4) + file;
  return out + dir + "PK\x05\x06" + le(0, 4) + le(1, 2) + le(1, 2) +
         le(dir.size(), 4) + le(out.size(), 4) + le(0, 2);
}

TEST(NpzFileTest, ReadsStoredAndDeflatedMembers) {
  const std::string dir = MakeTempDir("npz_file_test");
  const Array a = Ints({2, 2}, {1, -2, 3, 4}), b = Ints({3}, {7, 8, 9});
  WriteFile(dir + "/s.npz", NpzBytes({{"a", a}, {"b", b}}));
  const auto arrays = ReadNpz(dir + "/s.npz");
  ASSERT_EQ(arrays.size(), 2u);
  EXPECT_EQ(arrays.at("a").bytes, a.bytes);
  EXPECT_EQ(arrays.at("b").dims, b.dims);
  WriteFile(dir + "/d.npz", Deflated(NpyBytes(b), "b"));
  EXPECT_EQ(ReadNpz(dir + "/d.npz").at("b").bytes, b.bytes);
}

TEST(NpzFileTest, CorruptArchivesAreOneLineErrors) {
  const std::string dir = MakeTempDir("npz_file_test_bad");
  const std::string good = NpzBytes({{"a", Ints({2}, {1, 2})}});
  WriteFile(dir + "/x.npz", "not a zip at all");
  EXPECT_THAT(ErrorOf(dir + "/x.npz"), HasSubstr("not an .npz (zip) file"));
  std::string crc = good;
  crc[crc.find(".npy") + 4 + 60] ^= 1;  // A byte of the member's data.
  WriteFile(dir + "/crc.npz", crc);
  EXPECT_THAT(ErrorOf(dir + "/crc.npz"), HasSubstr("CRC-32 mismatch"));
  std::string far = good;
  const size_t eocd = far.rfind("PK\x05\x06");
  far[eocd + 19] = '\x7f';  // The directory's offset past the end.
  WriteFile(dir + "/far.npz", far);
  EXPECT_THAT(ErrorOf(dir + "/far.npz"), HasSubstr("past the end of the file"));
  WriteFile(dir + "/cut.npz", good.substr(0, good.size() / 2));
  EXPECT_THROW(ReadNpz(dir + "/cut.npz"), DataError);
  EXPECT_THAT(ErrorOf(dir + "/none.npz"), HasSubstr("cannot open"));
}

// An .npz whose directory and member header promise 3.5 GiB over a few
// bytes of data: in a 1 GiB memory cgroup, one line naming what does not
// fit. Before, the reader zero-filled the claimed size and the kernel
// killed the process (exit 137).
TEST(NpzFileTest, AClaimPastTheHostsMemoryIsRefusedNotKilled) {
  const std::string dir = MakeTempDir("npz_file_test_claim");
  const uint64_t claimed = uint64_t{7} << 29;  // 3.5 GiB.
  std::string npy = NpyBytes(Ints({1}, {0}));
  const std::string shape = "(1,)";
  npy.replace(npy.find(shape), shape.size(),
              "(" + std::to_string(claimed / 4) + ",)");
  std::string archive = Deflated(npy, "x");
  // The directory's size field (4 bytes at 24 into its entry) and the
  // local header's (at 22) say 3.5 GiB.
  const size_t entry = archive.find("PK\x01\x02");
  for (int i = 0; i < 4; ++i) {
    archive[entry + 24 + i] = static_cast<char>(claimed >> (8 * i));
    archive[22 + i] = static_cast<char>(claimed >> (8 * i));
  }
  WriteFile(dir + "/claim.npz", archive);
  const std::string path = dir + "/claim.npz";
  const int code = host::testing::RunInCgroup(host::testing::kGiB, [&] {
    const std::string error = ErrorOf(path);
    return error.find("3.50 GiB) does not fit: only ") != std::string::npos ? 0
                                                                            : 3;
  });
  if (code < 0) GTEST_SKIP() << "no memory cgroup this test may make";
  EXPECT_EQ(code, 0) << (code > 128 ? "killed" : "not the one-line error");
}

// A directory that says more or less than the member holds is found while
// the member streams, not trusted.
TEST(NpzFileTest, AMemberOfAnotherSizeThanTheDirectorySaysIsRefused) {
  const std::string dir = MakeTempDir("npz_file_test_size");
  std::string archive = Deflated(NpyBytes(Ints({3}, {7, 8, 9})), "b");
  const size_t entry = archive.find("PK\x01\x02");
  archive[entry + 24] = static_cast<char>(archive[entry + 24] + 1);
  WriteFile(dir + "/size.npz", archive);
  EXPECT_THAT(ErrorOf(dir + "/size.npz"), HasSubstr("b.npy"));
}

}  // namespace
}  // namespace ringlet::data
