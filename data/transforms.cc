#include "data/transforms.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace ringlet::data {
namespace {

// {C, H, W} or a refusal naming the transform.
void CheckImage(const std::vector<int64_t>& shape, const char* who) {
  if (shape.size() != 3) {
    throw std::invalid_argument(std::string(who) +
                                " takes images {channels, height, width}");
  }
}

}  // namespace

SampleRng RngFor(uint64_t seed, int64_t epoch, int64_t sample) {
  SampleRng mix(seed ^ (0x9e3779b97f4a7c15ull * static_cast<uint64_t>(epoch)));
  return SampleRng(mix() ^
                   (static_cast<uint64_t>(sample) * 0xd1b54a32d192ed03ull));
}

Transform Normalize(std::vector<float> mean, std::vector<float> std) {
  for (float s : std) {
    if (!(s != 0)) throw std::invalid_argument("normalize: a std of 0");
  }
  if (mean.empty() || mean.size() != std.size()) {
    throw std::invalid_argument(
        "normalize: give as many means as stds (one, or one per channel)");
  }
  std::vector<float> inverse;
  for (float s : std) inverse.push_back(1.0f / s);
  return [mean, inverse](float* x, const std::vector<int64_t>& shape,
                         SampleRng&) {
    const int64_t channels = shape.empty() ? 1 : shape[0];
    if (mean.size() != 1 && static_cast<int64_t>(mean.size()) != channels) {
      throw std::invalid_argument("normalize: " + std::to_string(mean.size()) +
                                  " means for " + std::to_string(channels) +
                                  " channels");
    }
    int64_t per_channel = 1;
    for (size_t d = 1; d < shape.size(); ++d) per_channel *= shape[d];
    for (int64_t c = 0; c < channels; ++c) {
      const float m = mean[mean.size() == 1 ? 0 : c];
      const float k = inverse[inverse.size() == 1 ? 0 : c];
      float* p = x + c * per_channel;
      for (int64_t i = 0; i < per_channel; ++i) p[i] = (p[i] - m) * k;
    }
  };
}

int CropPaddingOf(const std::vector<int64_t>& shape) {
  CheckImage(shape, "crop");
  const int64_t side = std::min(shape[1], shape[2]);
  return static_cast<int>(std::max<int64_t>(1, (side + 4) / 8));
}

Transform RandomCrop(int given) {
  if (given < kCropPaddingEighth) {
    throw std::invalid_argument("crop: negative padding");
  }
  return [given](float* x, const std::vector<int64_t>& shape, SampleRng& rng) {
    const int padding =
        given == kCropPaddingEighth ? CropPaddingOf(shape) : given;
    CheckImage(shape, "crop");
    const int64_t c = shape[0], h = shape[1], w = shape[2];
    // The window's top-left corner in the padded image, as offsets from
    // the original's: in [-padding, padding].
    const int64_t dy = rng.Below(2 * padding + 1) - padding;
    const int64_t dx = rng.Below(2 * padding + 1) - padding;
    if (dy == 0 && dx == 0) return;
    thread_local std::vector<float> copy;  // Each loader thread its own.
    copy.assign(x, x + c * h * w);
    for (int64_t k = 0; k < c; ++k) {
      const float* src = copy.data() + k * h * w;
      float* dst = x + k * h * w;
      for (int64_t y = 0; y < h; ++y) {
        const int64_t sy = y + dy;
        float* row = dst + y * w;
        if (sy < 0 || sy >= h) {
          std::fill(row, row + w, 0.0f);
          continue;
        }
        // The row's columns [first, last) come from the image, the
        // rest from the padding; none when |dx| >= w (an image narrower
        // than the padding's reach).
        const int64_t first = std::clamp<int64_t>(-dx, 0, w);
        const int64_t last = std::clamp<int64_t>(w - dx, first, w);
        std::fill(row, row + first, 0.0f);
        if (last > first) {
          std::copy(src + sy * w + first + dx, src + sy * w + last + dx,
                    row + first);
        }
        std::fill(row + last, row + w, 0.0f);
      }
    }
  };
}

Transform RandomHorizontalFlip(double p) {
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument("flip: p outside [0, 1]");
  return [p](float* x, const std::vector<int64_t>& shape, SampleRng& rng) {
    CheckImage(shape, "flip");
    // 2^53 steps: p's resolution, exact for 0.5.
    if (static_cast<double>(rng() >> 11) >= p * 9007199254740992.0) return;
    const int64_t rows = shape[0] * shape[1], w = shape[2];
    for (int64_t r = 0; r < rows; ++r) std::reverse(x + r * w, x + r * w + w);
  };
}

std::vector<Transform> AugmentationsNamed(const std::string& names,
                                          int crop_padding) {
  std::vector<Transform> out;
  std::stringstream in(names);
  std::string name;
  std::vector<std::string> seen;
  while (std::getline(in, name, ',')) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      throw std::invalid_argument("'" + name +
                                  "' is given twice; use crop, flip or "
                                  "crop,flip");
    }
    seen.push_back(name);
    if (name == "crop") {
      out.push_back(RandomCrop(crop_padding));
    } else if (name == "flip") {
      out.push_back(RandomHorizontalFlip(0.5));
    } else if (!name.empty()) {
      throw std::invalid_argument("'" + name +
                                  "' is not an augmentation; use crop, flip "
                                  "or crop,flip");
    }
  }
  return out;
}

}  // namespace ringlet::data
