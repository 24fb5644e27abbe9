// fashion_mnist_info: shows what ringlet sees of Fashion-MNIST and of the
// machine's GPUs, so a person can check both before training.
#include <CLI/CLI.hpp>
#include <array>
#include <cstdio>
#include <string>

#include "cli/conventions.h"
#include "cli/run_main.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"
#include "gpu/device_probe.h"

namespace {

using ringlet::data::FashionMnist;
using ringlet::data::kClassNames;
using ringlet::data::kImageCols;
using ringlet::data::kImageRows;
using ringlet::data::kNumClasses;
using ringlet::data::Split;

std::array<int64_t, kNumClasses> ClassCounts(const Split& split) {
  std::array<int64_t, kNumClasses> counts{};
  for (int32_t label : split.labels) ++counts[label];
  return counts;
}

void PrintHistogram(const FashionMnist& data) {
  const auto train = ClassCounts(data.train);
  const auto test = ClassCounts(data.test);
  std::printf("\n  %-2s %-12s %7s %7s\n", "#", "class", "train", "test");
  for (int c = 0; c < kNumClasses; ++c) {
    std::printf("  %-2d %-12.*s %7ld %7ld\n", c,
                static_cast<int>(kClassNames[c].size()), kClassNames[c].data(),
                static_cast<long>(train[c]), static_cast<long>(test[c]));
  }
}

// Draws images side by side, two pixel rows per text line (characters are
// about twice as tall as wide), darkest to brightest through the ramp.
void PrintImages(const Split& split, int count) {
  static constexpr char kRamp[] = " .:-=+*#%@";
  constexpr int kColumnWidth = kImageCols + 2;
  if (count <= 0) return;
  std::printf("\n");
  for (int i = 0; i < count; ++i) {
    const std::string title = "#" + std::to_string(i) + " " +
                              std::string(kClassNames[split.labels[i]]);
    std::printf("%-*s", kColumnWidth, title.c_str());
  }
  std::printf("\n");
  for (int row = 0; row < kImageRows; row += 2) {
    for (int i = 0; i < count; ++i) {
      const uint8_t* image = split.image(i);
      for (int col = 0; col < kImageCols; ++col) {
        const int value = (image[row * kImageCols + col] +
                           image[(row + 1) * kImageCols + col]) /
                          2;
        std::putchar(kRamp[value * 10 / 256]);
      }
      std::printf("  ");
    }
    std::printf("\n");
  }
}

void PrintGpus() {
  const ringlet::gpu::CudaDeviceReport gpus = ringlet::gpu::ProbeCudaDevices();
  std::printf("\nGPUs: %zu usable", gpus.usable.size());
  if (!gpus.reason.empty()) std::printf(" (%s)", gpus.reason.c_str());
  std::printf("\n");
  for (const std::string& line : gpus.descriptions) {
    std::printf("  %s\n", line.c_str());
  }
}

}  // namespace

static int Main(int argc, char** argv) {
  CLI::App app{
      "Shows the Fashion-MNIST data ringlet will train on (folder, counts, "
      "class histogram, a few images) and the GPUs it can use.",
      "fashion_mnist_info"};
  ringlet::cli::UseConventions(app);
  std::string data_dir;
  int samples = 6;
  app.add_option("--data_dir", data_dir,
                 "folder with the four .gz files (default: $FASHION_MNIST_DIR, "
                 "else /usr/share/datasets/fashion-mnist)");
  app.add_option("--samples", samples, "training images to draw")
      ->check(CLI::Range(0, 12));
  RINGLET_PARSE_FLAGS(app, argc, argv);

  const std::string dir = ringlet::data::ResolveFashionMnistDir(data_dir);
  FashionMnist data;
  try {
    data = ringlet::data::LoadFashionMnist(dir);
  } catch (const std::exception& e) {  // DataError, or out of memory.
    std::fprintf(stderr, "fashion_mnist_info: %s\n", e.what());
    return 1;
  }

  std::printf("Fashion-MNIST at %s\n", data.dir.c_str());
  for (const Split* split : {&data.train, &data.test}) {
    std::printf("  %-5s %6ld images of %dx%d, %ld labels\n",
                split->name.c_str(), static_cast<long>(split->size()),
                kImageRows, kImageCols,
                static_cast<long>(split->labels.size()));
  }
  PrintHistogram(data);
  PrintImages(data.train,
              static_cast<int>(std::min<int64_t>(samples, data.train.size())));
  PrintGpus();
  return 0;
}

int main(int argc, char** argv) {
  return ringlet::cli::RunMain("fashion_mnist_info",
                               [&] { return Main(argc, argv); });
}
