// image_folder_bench: an ImageFolder read (every image decoded) and one
// epoch of shuffled float batches of it, timed: ringlet's side of
// data/bench/image_folder_bench.py, which runs torchvision's ImageFolder
// and DataLoader on the same files beside it.
//
//   image_folder_bench --root=DIR [--batch_size=256]
//
// Prints one JSON line: images, decode_seconds, epoch_seconds and
// images_per_sec (images over both).
#include <chrono>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/conventions.h"
#include "data/batch_loader.h"
#include "data/dataset.h"
#include "data/image_folder.h"

namespace ringlet::data {
namespace {

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

int Run(int argc, char** argv) {
  CLI::App app{"An ImageFolder decoded and one epoch of its batches, timed"};
  cli::UseConventions(app);
  std::string root;
  int64_t batch_size = 256;
  app.add_option("--root", root, "a folder of class folders of images")
      ->required();
  app.add_option("--batch_size", batch_size, "images a batch")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const auto start = std::chrono::steady_clock::now();
  ImageFolder folder = ReadImageFolder(root);
  const double decode = Since(start);
  const int64_t n = folder.files;
  const int64_t classes = static_cast<int64_t>(folder.classes.size());
  DatasetPtr d = ArrayDataset(root, std::move(folder.images),
                              std::move(folder.targets), classes);
  LoaderOptions options;
  options.batch_size = batch_size;
  BatchLoader loader(d, options);
  const auto epoch_start = std::chrono::steady_clock::now();
  loader.StartEpoch(0);
  Batch batch;
  int64_t seen = 0;
  while (loader.Next(&batch)) seen += batch.size;
  const double epoch = Since(epoch_start);
  std::printf(
      "{\"images\": %lld, \"decode_seconds\": %.4f, \"epoch_seconds\": %.4f, "
      "\"images_per_sec\": %.1f}\n",
      static_cast<long long>(seen), decode, epoch, n / (decode + epoch));
  return 0;
}

}  // namespace
}  // namespace ringlet::data

int main(int argc, char** argv) {
  try {
    return ringlet::data::Run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "image_folder_bench: " << e.what() << std::endl;
    return 1;
  }
}
