// Test helpers: PNG and JPEG files written by the same libraries the
// readers use (libpng, TurboJPEG), from interleaved (HWC) uint8 pixels.
#ifndef RINGLET_DATA_TESTING_IMAGE_WRITER_H_
#define RINGLET_DATA_TESTING_IMAGE_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data::testing {

// channels: 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA).
std::string PngBytes(const std::vector<uint8_t>& hwc, int width, int height,
                     int channels);
// channels: 1 or 3; quality 1-100.
std::string JpegBytes(const std::vector<uint8_t>& hwc, int width, int height,
                      int channels, int quality = 95);

}  // namespace ringlet::data::testing

#endif  // RINGLET_DATA_TESTING_IMAGE_WRITER_H_
