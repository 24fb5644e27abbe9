// PNG and JPEG images decoded to uint8 pixels, channels first: what
// ImageFolder data sets hold. PNG through libpng's simplified API, JPEG
// through libjpeg-turbo's TurboJPEG; neither jumps out of a damaged file
// (both return their errors), so any bytes give an image or a DataError.
#ifndef RINGLET_DATA_IMAGE_DECODE_H_
#define RINGLET_DATA_IMAGE_DECODE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data {

// The most pixels (width x height) an image may have: 2^28, 16384 x 16384.
inline constexpr int64_t kMaxImagePixels = int64_t{1} << 28;

struct DecodedImage {
  int64_t channels = 0;  // 1 (gray) or 3 (RGB).
  int64_t height = 0, width = 0;
  std::vector<uint8_t> pixels;  // [channels, height, width].
};

// Decodes the PNG or JPEG (told by its first bytes) in bytes[0, size):
// gray stays one channel (gray with alpha too), everything else becomes
// RGB (palettes expanded, 16 bits rounded to 8, alpha composited onto
// black), or with channels = 3 always RGB (gray repeated, as PIL's
// convert("RGB")).
// Throws DataError naming `name` for other bytes, a damaged image, or one
// past kMaxImagePixels.
DecodedImage DecodeImage(const uint8_t* bytes, size_t size,
                         const std::string& name, int channels = 0);

// Whether the bytes begin as a PNG or a JPEG does.
bool LooksLikeImage(const uint8_t* bytes, size_t size);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_IMAGE_DECODE_H_
