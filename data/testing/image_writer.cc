#include "data/testing/image_writer.h"

#include <png.h>
#include <turbojpeg.h>

#include <cstring>
#include <stdexcept>

namespace ringlet::data::testing {

std::string PngBytes(const std::vector<uint8_t>& hwc, int width, int height,
                     int channels) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  const png_uint_32 formats[] = {PNG_FORMAT_GRAY, PNG_FORMAT_GA, PNG_FORMAT_RGB,
                                 PNG_FORMAT_RGBA};
  image.format = formats[channels - 1];
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, hwc.data(), 0,
                                 nullptr)) {
    throw std::runtime_error(std::string("PngBytes: ") + image.message);
  }
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, hwc.data(), 0,
                                 nullptr)) {
    throw std::runtime_error(std::string("PngBytes: ") + image.message);
  }
  out.resize(size);
  return out;
}

std::string JpegBytes(const std::vector<uint8_t>& hwc, int width, int height,
                      int channels, int quality) {
  tjhandle handle = tjInitCompress();
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int ok = tjCompress2(handle, hwc.data(), width, 0, height,
                             channels == 1 ? TJPF_GRAY : TJPF_RGB, &jpeg, &size,
                             channels == 1 ? TJSAMP_GRAY : TJSAMP_444, quality,
                             TJFLAG_ACCURATEDCT);
  std::string out;
  if (ok == 0) out.assign(reinterpret_cast<char*>(jpeg), size);
  tjFree(jpeg);
  tjDestroy(handle);
  if (ok != 0) throw std::runtime_error("JpegBytes: compression failed");
  return out;
}

}  // namespace ringlet::data::testing
