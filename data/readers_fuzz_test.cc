// Every reader against files mutated at random: each either reads an array
// consistent with its own header or throws DataError; never a crash, a
// hang or an allocation past its limit (CI runs this under ASan/UBSan).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>

#include "data/cifar.h"
#include "data/data_error.h"
#include "data/idx_file.h"
#include "data/image_decode.h"
#include "data/npy_file.h"
#include "data/npz_file.h"
#include "data/safetensors.h"
#include "data/testing/idx_writer.h"
#include "data/testing/image_writer.h"

namespace ringlet::data {
namespace {

using testing::Gzip;
using testing::IdxBytes;
using testing::MakeTempDir;
using testing::WriteFile;

constexpr uint64_t kLimit = 1 << 20;  // Each reader's limit here.

// One mutation of `seed`: bytes flipped or set to extremes (mostly in the
// header), the file cut, grown, or a piece repeated.
std::string Mutate(const std::string& seed, std::mt19937_64& rng) {
  std::string s = seed;
  const int edits = 1 + rng() % 4;
  for (int e = 0; e < edits; ++e) {
    const size_t header = std::min<size_t>(s.size(), 160);
    switch (rng() % 6) {
      case 0:
      case 1:
        if (header > 0) s[rng() % header] ^= static_cast<char>(1 << rng() % 8);
        break;
      case 2:
        if (header > 0) s[rng() % header] = (rng() % 2) ? '\xff' : '\0';
        break;
      case 3:
        s.resize(s.empty() ? 0 : rng() % s.size());
        break;
      case 4:
        s.append(rng() % 64, static_cast<char>(rng()));
        break;
      case 5:
        if (!s.empty()) s.insert(rng() % s.size(), s.substr(0, rng() % 16));
        break;
    }
  }
  return s;
}

void Fuzz(const std::string& name, const std::string& seed,
          const std::function<void(const std::string&)>& read) {
  const std::string dir = MakeTempDir("readers_fuzz_test");
  std::mt19937_64 rng(std::hash<std::string>()(name));
  int read_ok = 0, refused = 0;
  for (int i = 0; i < 400; ++i) {
    std::string bytes = Mutate(seed, rng);
    if (i % 4 == 3) bytes = Gzip(bytes);  // The compressed path too.
    const std::string path = dir + "/" + name;
    WriteFile(path, bytes);
    try {
      read(path);
      ++read_ok;
    } catch (const DataError&) {
      ++refused;
    }
  }
  // The mutations must reach both outcomes, or they test too little.
  EXPECT_GT(read_ok, 0) << name;
  EXPECT_GT(refused, 100) << name;
}

// An image decoded from mutated bytes has the pixels its size promises.
void DecodeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
  const DecodedImage image = DecodeImage(bytes.data(), bytes.size(), path);
  ASSERT_EQ(static_cast<int64_t>(image.pixels.size()),
            image.channels * image.height * image.width);
}

TEST(ReadersFuzzTest, PngAndJpeg) {
  std::vector<uint8_t> rgb(12 * 10 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7);
  Fuzz("image.png", testing::PngBytes(rgb, 12, 10, 3), DecodeFile);
  Fuzz("image.jpg", testing::JpegBytes(rgb, 12, 10, 3), DecodeFile);
}

TEST(ReadersFuzzTest, Idx) {
  std::vector<uint8_t> data(3 * 4 * 2);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i);
  Fuzz("idx", IdxBytes({3, 4}, data, 0x0b), [](const std::string& path) {
    const Array a = ReadIdx(path, kLimit);
    ASSERT_EQ(a.bytes.size(), a.elements() * ElementSize(a.type));
  });
  Fuzz("idx_gz", IdxBytes({6, 4}, std::vector<uint8_t>(24, 9)),
       [](const std::string& path) {
         const IdxArray a = ReadIdxGz(path, 2, kLimit);
         ASSERT_EQ(a.data.size(), uint64_t{a.dims[0]} * a.dims[1]);
       });
}

TEST(ReadersFuzzTest, Npy) {
  Array a;
  a.type = ElementType::kFloat32;
  a.dims = {3, 5};
  a.bytes.assign(60, 1);
  Fuzz("npy", NpyBytes(a), [](const std::string& path) {
    const Array b = ReadNpy(path, kLimit);
    ASSERT_EQ(b.bytes.size(), b.elements() * ElementSize(b.type));
  });
}

TEST(ReadersFuzzTest, Npz) {
  Array a;
  a.type = ElementType::kInt32;
  a.dims = {2, 3};
  a.bytes.assign(24, 3);
  Array b = a;
  b.dims = {6};
  // Mutations past the first 160 bytes matter too: the directory is last.
  const std::string archive = NpzBytes({{"a", a}, {"b", b}});
  Fuzz("npz", archive, [](const std::string& path) {
    for (const auto& [name, array] : ReadNpz(path, kLimit)) {
      ASSERT_EQ(array.bytes.size(), array.elements() * ElementSize(array.type));
    }
  });
  std::mt19937_64 rng(7);
  const std::string dir = MakeTempDir("readers_fuzz_test_npz_tail");
  int refused = 0;
  for (int i = 0; i < 300; ++i) {
    std::string s = archive;
    const size_t at = archive.size() - 1 - rng() % 120;  // The directory.
    s[at] ^= static_cast<char>(1 << rng() % 8);
    WriteFile(dir + "/t.npz", s);
    try {
      ReadNpz(dir + "/t.npz", kLimit);
    } catch (const DataError&) {
      ++refused;
    }
  }
  EXPECT_GT(refused, 50);
}

TEST(ReadersFuzzTest, Safetensors) {
  Array a;
  a.type = ElementType::kInt64;
  a.dims = {2, 2};
  a.bytes.assign(32, 5);
  Array b;
  b.type = ElementType::kFloat32;
  b.dims = {3};
  b.bytes.assign(12, 1);
  Fuzz("safetensors", EncodeSafetensors({{{"a", a}, {"b", b}}, {{"k", "v"}}}),
       [](const std::string& path) {
         for (const auto& [name, array] :
              ReadSafetensors(path, kLimit).tensors) {
           ASSERT_EQ(array.bytes.size(),
                     array.elements() * ElementSize(array.type));
         }
       });
}

TEST(ReadersFuzzTest, Cifar) {
  std::string records;
  for (int i = 0; i < 3; ++i) {
    records += static_cast<char>(i);
    records.append(kCifarImageBytes, static_cast<char>(i));
  }
  Fuzz("cifar", records, [](const std::string& path) {
    const CifarImages c = ReadCifarBatch(path, CifarKind::k10, kLimit);
    ASSERT_EQ(c.images.bytes.size(), c.labels.size() * kCifarImageBytes);
    for (int32_t l : c.labels) ASSERT_LT(l, 10);
  });
}

}  // namespace
}  // namespace ringlet::data
