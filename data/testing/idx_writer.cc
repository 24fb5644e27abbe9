#include "data/testing/idx_writer.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace ringlet::data::testing {

std::string IdxBytes(const std::vector<uint32_t>& dims,
                     const std::vector<uint8_t>& data, uint8_t type) {
  std::string out = {0, 0, static_cast<char>(type),
                     static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.push_back(static_cast<char>((d >> shift) & 0xff));
    }
  }
  out.append(data.begin(), data.end());
  return out;
}

std::string Gzip(const std::string& raw) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("deflateInit2 failed");
  }
  std::string out(deflateBound(&z, raw.size()), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  z.avail_in = raw.size();
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = out.size();
  const int rc = deflate(&z, Z_FINISH);
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(z.total_out);
  return out;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), bytes.size());
  if (!file) throw std::runtime_error("cannot write " + path);
}

std::string MakeTempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(root != nullptr ? root : "/tmp") + "/" + name;
  std::string cmd = "rm -rf '" + dir + "' && mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) {
    throw std::runtime_error("cannot create " + dir);
  }
  return dir;
}

uint8_t SyntheticPixel(int64_t image, int pixel) {
  return static_cast<uint8_t>((image * 31 + pixel * 7) % 256);
}

int32_t SyntheticLabel(int64_t image) {
  return static_cast<int32_t>((image * 3) % 10);
}

namespace {

void WriteSplit(const std::string& dir, const std::string& prefix,
                uint32_t count) {
  std::vector<uint8_t> pixels(static_cast<size_t>(count) * 784);
  std::vector<uint8_t> labels(count);
  for (uint32_t i = 0; i < count; ++i) {
    for (int p = 0; p < 784; ++p) pixels[i * 784 + p] = SyntheticPixel(i, p);
    labels[i] = static_cast<uint8_t>(SyntheticLabel(i));
  }
  WriteFile(dir + "/" + prefix + "-images-idx3-ubyte.gz",
            Gzip(IdxBytes({count, 28, 28}, pixels)));
  WriteFile(dir + "/" + prefix + "-labels-idx1-ubyte.gz",
            Gzip(IdxBytes({count}, labels)));
}

}  // namespace

void WriteSyntheticFashionMnist(const std::string& dir, uint32_t train,
                                uint32_t test) {
  WriteSplit(dir, "train", train);
  WriteSplit(dir, "t10k", test);
}

}  // namespace ringlet::data::testing
