#include "data/npy_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <vector>

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

template <typename T>
Array ArrayOf(ElementType type, std::vector<int64_t> dims,
              const std::vector<T>& values) {
  Array a;
  a.type = type;
  a.dims = std::move(dims);
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) {
    std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  }
  return a;
}

// A header written by hand: what NumPy itself writes, with version,
// padding and byte order as given.
std::string NpyWithHeader(const std::string& header, const std::string& body,
                          int version = 1) {
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  if (version == 1) {
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
  } else {
    for (int i = 0; i < 4; ++i)
      out += static_cast<char>(header.size() >> (8 * i));
  }
  return out + header + body;
}

std::string ErrorOf(const std::string& path) {
  try {
    ReadNpy(path);
  } catch (const DataError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no DataError for " << path;
  return "";
}

class NpyFileTest : public ::testing::Test {
 protected:
  std::string dir_ = MakeTempDir("npy_file_test");
  std::string Path(const std::string& name) { return dir_ + "/" + name; }
};

TEST_F(NpyFileTest, RoundTripsEveryTypeAndRank) {
  const std::vector<Array> arrays = {
      ArrayOf<uint8_t>(ElementType::kUint8, {2, 3}, {1, 2, 3, 4, 5, 255}),
      ArrayOf<int32_t>(ElementType::kInt32, {3}, {-1, 0, 70000}),
      ArrayOf<int64_t>(ElementType::kInt64, {1, 1, 2}, {-5, int64_t{1} << 40}),
      ArrayOf<float>(ElementType::kFloat32, {2, 2}, {0.5f, -1, 3, 1e30f}),
      ArrayOf<double>(ElementType::kFloat64, {}, {2.25}),
      ArrayOf<float>(ElementType::kFloat32, {0, 4}, {})};
  for (size_t i = 0; i < arrays.size(); ++i) {
    const std::string path = Path("a" + std::to_string(i) + ".npy");
    WriteFile(path, NpyBytes(arrays[i]));
    const Array back = ReadNpy(path);
    EXPECT_EQ(back.type, arrays[i].type) << i;
    EXPECT_EQ(back.dims, arrays[i].dims) << i;
    EXPECT_EQ(back.bytes, arrays[i].bytes) << i;
  }
  WriteFile(Path("z.npy.gz"), Gzip(NpyBytes(arrays[1])));
  EXPECT_EQ(ReadNpy(Path("z.npy.gz")).bytes, arrays[1].bytes);
}

TEST_F(NpyFileTest, ReadsNumPysOwnHeadersAndBigEndianValues) {
  // As np.save writes them: version 1, and version 2 for huge headers;
  // '>i4' values are swapped into this machine's order.
  WriteFile(Path("be.npy"),
            NpyWithHeader("{'descr': '>i4', 'fortran_order': False, "
                          "'shape': (2,), }          \n",
                          std::string("\x00\x00\x01\x00\xff\xff\xff\xff", 8)));
  const Array be = ReadNpy(Path("be.npy"));
  const int32_t* v = reinterpret_cast<const int32_t*>(be.bytes.data());
  EXPECT_EQ(v[0], 256);
  EXPECT_EQ(v[1], -1);
  WriteFile(Path("v2.npy"),
            NpyWithHeader("{\"descr\": \"<f4\", \"fortran_order\": False, "
                          "\"shape\": (1, 1)}\n",
                          std::string("\x00\x00\xc0\x3f", 4), 2));
  EXPECT_EQ(
      *reinterpret_cast<const float*>(ReadNpy(Path("v2.npy")).bytes.data()),
      1.5f);
}

TEST_F(NpyFileTest, RefusesWhatItCannotReadSayingWhatToSave) {
  WriteFile(Path("f.npy"),
            NpyWithHeader("{'descr': '<f4', 'fortran_order': True, "
                          "'shape': (2, 2), }\n",
                          std::string(16, '\0')));
  EXPECT_THAT(ErrorOf(Path("f.npy")),
              AllOf(HasSubstr(Path("f.npy")), HasSubstr("Fortran order"),
                    HasSubstr("ascontiguousarray")));
  WriteFile(Path("o.npy"), NpyWithHeader("{'descr': '|O', 'fortran_order': "
                                         "False, 'shape': (1,), }\n",
                                         std::string(8, '\0')));
  EXPECT_THAT(ErrorOf(Path("o.npy")), HasSubstr("'|O' is not read"));
  WriteFile(Path("s.npy"),
            NpyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, "
                          "'shape': (1,), }\n",
                          std::string(4, '\0')));
  EXPECT_THAT(ErrorOf(Path("s.npy")), HasSubstr("structured"));
  WriteFile(Path("x.npy"), "PK\x03\x04 a zip file");
  EXPECT_THAT(ErrorOf(Path("x.npy")), HasSubstr("not a .npy file"));
}

TEST_F(NpyFileTest, SizesAreCheckedBeforeAllocating) {
  WriteFile(Path("short.npy"),
            NpyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (1000000, 1000000), }\n",
                          std::string(16, '\0')));
  EXPECT_THAT(ErrorOf(Path("short.npy")), HasSubstr("-byte limit"));
  WriteFile(Path("cut.npy"),
            NpyWithHeader("{'descr': '<i8', 'fortran_order': False, "
                          "'shape': (3,), }\n",
                          std::string(16, '\0')));
  EXPECT_THAT(ErrorOf(Path("cut.npy")),
              AllOf(HasSubstr("promises int64 [3] = 24 bytes"),
                    HasSubstr("the file holds 16")));
  WriteFile(Path("huge.npy"),
            NpyWithHeader("{'descr': '<f4', 'fortran_order': False, "
                          "'shape': (99999999999999999999,), }\n",
                          ""));
  EXPECT_THAT(ErrorOf(Path("huge.npy")), HasSubstr("overflows"));
  std::string bad_length =
      NpyBytes(ArrayOf<uint8_t>(ElementType::kUint8, {1}, {7}));
  bad_length[8] = '\xff';
  bad_length[9] = '\xff';
  WriteFile(Path("len.npy"), bad_length);
  EXPECT_THAT(ErrorOf(Path("len.npy")),
              HasSubstr("file ends inside the npy header"));
}

// A gzip-compressed .npy whose header promises 3 GiB of uint8 (3 GiB of
// zeros, or a header that lies): in a 1 GiB memory cgroup the reader says
// what does not fit. Before, it zero-filled 3 GiB before inflating and the
// kernel killed the process (exit 137).
TEST_F(NpyFileTest, ACompressedArrayPastTheHostsMemoryIsRefusedNotKilled) {
  const std::string header =
      "{'descr': '|u1', 'fortran_order': False, 'shape': (3221225472,), }\n";
  WriteFile(Path("big.npy.gz"),
            Gzip(NpyWithHeader(header, std::string(1 << 20, '\0'))));
  const std::string path = Path("big.npy.gz");
  const int code = host::testing::RunInCgroup(host::testing::kGiB, [&] {
    const std::string error = ErrorOf(path);
    return error.find(
               "its data (uint8 [3221225472], 3.00 GiB) does not fit: "
               "only ") != std::string::npos
               ? 0
               : 3;
  });
  if (code < 0) GTEST_SKIP() << "no memory cgroup this test may make";
  EXPECT_EQ(code, 0) << (code > 128 ? "killed" : "not the one-line error");
}

// Where 3 GiB would fit, a header that promises them over 1 MiB of data
// costs only what arrives: the reader's peak resident memory stays far
// below the promise (before, it zero-filled all 3 GiB first).
TEST_F(NpyFileTest, APromiseTheDataDoesNotKeepCostsNoMemory) {
  const std::string header =
      "{'descr': '|u1', 'fortran_order': False, 'shape': (3221225472,), }\n";
  WriteFile(Path("liar.npy.gz"),
            Gzip(NpyWithHeader(header, std::string(1 << 20, '\7'))));
  const std::string path = Path("liar.npy.gz");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (ErrorOf(path).find("truncated data") == std::string::npos) _exit(3);
    // VmHWM: the most this process ever held resident.
    std::ifstream status("/proc/self/status");
    std::string line;
    int64_t peak_kib = -1;
    while (std::getline(status, line)) {
      if (line.rfind("VmHWM:", 0) == 0) peak_kib = std::stoll(line.substr(6));
    }
    _exit(peak_kib > 0 && peak_kib < 512 * 1024 ? 0 : 4);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: not the one-line error; 4: the "
                                       "reader held 512 MiB or more";
}

}  // namespace
}  // namespace ringlet::data
