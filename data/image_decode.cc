#include "data/image_decode.h"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <memory>

#include "data/data_error.h"

namespace ringlet::data {
namespace {

constexpr uint8_t kPngMagic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

bool IsPng(const uint8_t* b, size_t size) {
  return size >= 8 && std::memcmp(b, kPngMagic, 8) == 0;
}

bool IsJpeg(const uint8_t* b, size_t size) {
  return size >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF;
}

void CheckPixels(int64_t width, int64_t height, const std::string& name) {
  if (width < 1 || height < 1 || width * height > kMaxImagePixels) {
    throw DataError(name + ": an image of " + std::to_string(width) + "x" +
                    std::to_string(height) + " pixels; at most " +
                    std::to_string(kMaxImagePixels) + " pixels are read");
  }
}

// Interleaved rows (HWC) to planes (CHW).
std::vector<uint8_t> Planar(const std::vector<uint8_t>& hwc, int64_t channels,
                            int64_t pixels) {
  if (channels == 1) return hwc;
  std::vector<uint8_t> chw(hwc.size());
  for (int64_t c = 0; c < channels; ++c) {
    uint8_t* plane = chw.data() + c * pixels;
    for (int64_t i = 0; i < pixels; ++i) plane[i] = hwc[i * channels + c];
  }
  return chw;
}

DecodedImage DecodePng(const uint8_t* bytes, size_t size,
                       const std::string& name, int channels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, bytes, size)) {
    const std::string why = image.message;
    png_image_free(&image);
    throw DataError(name + ": not a readable PNG (" + why + ")");
  }
  // Frees libpng's state whatever happens below.
  std::unique_ptr<png_image, void (*)(png_image*)> guard(&image,
                                                         png_image_free);
  const bool gray = (image.format & PNG_FORMAT_FLAG_COLOR) == 0;
  DecodedImage out;
  out.channels = channels > 0 ? channels : (gray ? 1 : 3);
  out.height = image.height;
  out.width = image.width;
  CheckPixels(out.width, out.height, name);
  // Alpha composited onto black (the background the simplified API takes
  // when a colour is given for it).
  image.format = out.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_color black = {0, 0, 0};
  std::vector<uint8_t> hwc(
      static_cast<size_t>(out.channels * out.height * out.width));
  if (!png_image_finish_read(&image, &black, hwc.data(), 0, nullptr)) {
    throw DataError(name + ": a damaged PNG (" + std::string(image.message) +
                    ")");
  }
  out.pixels = Planar(hwc, out.channels, out.height * out.width);
  return out;
}

DecodedImage DecodeJpeg(const uint8_t* bytes, size_t size,
                        const std::string& name, int channels) {
  std::unique_ptr<void, int (*)(tjhandle)> handle(tjInitDecompress(),
                                                  tjDestroy);
  if (handle == nullptr) {
    throw DataError(name + ": TurboJPEG could not start (" +
                    std::string(tjGetErrorStr2(nullptr)) + ")");
  }
  int width = 0, height = 0, subsampling = 0, colorspace = 0;
  if (tjDecompressHeader3(handle.get(), bytes, static_cast<unsigned long>(size),
                          &width, &height, &subsampling, &colorspace) != 0) {
    throw DataError(name + ": not a readable JPEG (" +
                    std::string(tjGetErrorStr2(handle.get())) + ")");
  }
  DecodedImage out;
  out.channels = channels > 0 ? channels : (colorspace == TJCS_GRAY ? 1 : 3);
  out.height = height;
  out.width = width;
  CheckPixels(out.width, out.height, name);
  std::vector<uint8_t> hwc(
      static_cast<size_t>(out.channels * out.height * out.width));
  const int format = out.channels == 1 ? TJPF_GRAY : TJPF_RGB;
  // Warnings (a truncated but decodable file) are errors too: a sample
  // half grey would train silently.
  if (tjDecompress2(handle.get(), bytes, static_cast<unsigned long>(size),
                    hwc.data(), width, 0, height, format,
                    TJFLAG_ACCURATEDCT | TJFLAG_STOPONWARNING) != 0) {
    throw DataError(name + ": a damaged JPEG (" +
                    std::string(tjGetErrorStr2(handle.get())) + ")");
  }
  out.pixels = Planar(hwc, out.channels, out.height * out.width);
  return out;
}

}  // namespace

bool LooksLikeImage(const uint8_t* bytes, size_t size) {
  return IsPng(bytes, size) || IsJpeg(bytes, size);
}

DecodedImage DecodeImage(const uint8_t* bytes, size_t size,
                         const std::string& name, int channels) {
  if (channels != 0 && channels != 3) {
    throw DataError(name +
                    ": images are read in their own channels or as "
                    "RGB (3), not as " +
                    std::to_string(channels));
  }
  if (IsPng(bytes, size)) return DecodePng(bytes, size, name, channels);
  if (IsJpeg(bytes, size)) return DecodeJpeg(bytes, size, name, channels);
  throw DataError(name +
                  ": neither a PNG nor a JPEG (its first bytes say "
                  "neither); ImageFolder data sets take .png and .jpg");
}

}  // namespace ringlet::data
