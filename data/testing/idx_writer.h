// Test helpers that write small IDX and Fashion-MNIST files, valid or broken
// on purpose. Test-only.
#ifndef RINGLET_DATA_TESTING_IDX_WRITER_H_
#define RINGLET_DATA_TESTING_IDX_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data::testing {

// The raw bytes of an IDX file: magic 00 00 `type` rank, big-endian dims,
// then `data` as given (which need not match the dims).
std::string IdxBytes(const std::vector<uint32_t>& dims,
                     const std::vector<uint8_t>& data, uint8_t type = 0x08);

// `raw` compressed as one gzip member.
std::string Gzip(const std::string& raw);

void WriteFile(const std::string& path, const std::string& bytes);

// A fresh empty folder under the test's temporary directory.
std::string MakeTempDir(const std::string& name);

// The pixel value of image i at pixel p in the synthetic data set: depends
// on both, so a misplaced image or pixel is caught.
uint8_t SyntheticPixel(int64_t image, int pixel);
int32_t SyntheticLabel(int64_t image);

// Writes the four Fashion-MNIST files with `train` and `test` synthetic
// 28x28 images into `dir`.
void WriteSyntheticFashionMnist(const std::string& dir, uint32_t train,
                                uint32_t test);

}  // namespace ringlet::data::testing

#endif  // RINGLET_DATA_TESTING_IDX_WRITER_H_
