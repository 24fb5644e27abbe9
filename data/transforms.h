// Transforms of one sample's input on the loader's thread, as torchvision's
// transforms: each a function of the input (float32, shape kept) and a
// random source seeded by (seed, epoch, sample) alone, so an augmented
// batch is the same for any number of devices and processes.
#ifndef RINGLET_DATA_TRANSFORMS_H_
#define RINGLET_DATA_TRANSFORMS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ringlet::data {

// splitmix64: small, fast to seed (a sample's source is made per sample)
// and the same on every machine. A UniformRandomBitGenerator.
class SampleRng {
 public:
  using result_type = uint64_t;
  explicit SampleRng(uint64_t state) : state_(state) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() { return ~result_type{0}; }
  result_type operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // In [0, n), n >= 1 (the bias, below n / 2^64, is far under anything
  // measurable).
  int64_t Below(int64_t n) { return static_cast<int64_t>((*this)() % n); }

 private:
  uint64_t state_;
};

// The source of sample `sample`'s randomness in `epoch`.
SampleRng RngFor(uint64_t seed, int64_t epoch, int64_t sample);

// Changes one sample's input in place; `shape` is one sample's, which the
// transform keeps.
using Transform = std::function<void(
    float* input, const std::vector<int64_t>& shape, SampleRng& rng)>;

// (x - mean[c]) / std[c] per channel of {C, ...} inputs (one value each
// for all channels when given one). Throws std::invalid_argument for a std
// of 0 or counts other than 1 or C (checked on the first sample).
Transform Normalize(std::vector<float> mean, std::vector<float> std);

// torchvision's RandomCrop(size, padding): the image {C, H, W} padded with
// `padding` zeros on every side and an H x W window taken at a random
// place. kCropPaddingEighth pads each image by CropPaddingOf its shape.
inline constexpr int kCropPaddingEighth = -1;
Transform RandomCrop(int padding);

// An eighth of the image's shorter side, rounded, at least 1: the padding
// of 4 that torchvision's CIFAR recipes give 32x32 images (and 28x28
// ones), scaled (1 for 8x8 digits, 12 for 96x96).
int CropPaddingOf(const std::vector<int64_t>& shape);

// torchvision's RandomHorizontalFlip(p): {C, H, W} mirrored left to right
// with probability p.
Transform RandomHorizontalFlip(double p = 0.5);

// --augment's names ("crop", "flip"; comma-separated, each once; "" for
// none) as transforms: crop pads `crop_padding` (by default an eighth of
// the side), flip at p = 0.5. Throws std::invalid_argument naming an
// unknown or repeated one.
std::vector<Transform> AugmentationsNamed(
    const std::string& names, int crop_padding = kCropPaddingEighth);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_TRANSFORMS_H_
