// loader_bench: how fast Fashion-MNIST is decoded and batched, and
// CIFAR-10-shaped batches augmented.
//
//   ./bazelw run //data/bench:loader_bench
//   /usr/bin/python3 data/bench/loader_bench_torch.py   # PyTorch's peer
//
// Needs the installed data set (or $FASHION_MNIST_DIR). Goals on a 2-core
// machine: the training set decoded in under 0.5 s; shuffled, normalised
// batches of 256 at 200,000 images/s or more on one core; CIFAR-10-shaped
// batches of 256 with crop, flip and normalisation at 100,000 images/s or
// more and 3x PyTorch's DataLoader with torchvision's transforms.
#include <benchmark/benchmark.h>

#include "data/batch_loader.h"
#include "data/data_error.h"
#include "data/fashion_mnist.h"

namespace ringlet::data {
namespace {

// Loaded once for the batch benchmarks; null (with the reason) on failure.
const Split* TrainingSet(std::string* error) {
  static std::string load_error;
  static const Split* split = []() -> const Split* {
    try {
      return new Split(
          LoadFashionMnistSplit(ResolveFashionMnistDir(), "train"));
    } catch (const DataError& e) {
      load_error = e.what();
      return nullptr;
    }
  }();
  *error = load_error;
  return split;
}

// Takes one batch an iteration, epoch after epoch; counts the images.
void TakeBatches(benchmark::State& state, BatchLoader& loader) {
  Batch batch;
  int64_t epoch = 0;
  loader.StartEpoch(epoch);
  int64_t images = 0;
  for (auto _ : state) {
    if (!loader.Next(&batch)) {
      loader.StartEpoch(++epoch);
      loader.Next(&batch);
    }
    benchmark::DoNotOptimize(batch.inputs.data());
    images += batch.size;
  }
  state.SetItemsProcessed(images);
}

void BM_DecodeTrainingSet(benchmark::State& state) {
  const std::string dir = ResolveFashionMnistDir();
  for (auto _ : state) {
    try {
      Split split = LoadFashionMnistSplit(dir, "train");
      benchmark::DoNotOptimize(split.pixels.data());
      state.SetItemsProcessed(state.items_processed() + split.size());
    } catch (const DataError& e) {
      state.SkipWithError(e.what());
      return;
    }
  }
}
BENCHMARK(BM_DecodeTrainingSet)->Unit(benchmark::kMillisecond)->UseRealTime();

// Shuffled, normalised batches of 256; range(0) is the prefetch depth (0:
// produced on the calling thread, so this measures one core).
void BM_ShuffledBatches(benchmark::State& state) {
  std::string error;
  const Split* split = TrainingSet(&error);
  if (split == nullptr) {
    state.SkipWithError(error.c_str());
    return;
  }
  LoaderOptions options;
  options.batch_size = 256;
  options.prefetch = static_cast<int>(state.range(0));
  BatchLoader loader(*split, options);
  TakeBatches(state, loader);
}
BENCHMARK(BM_ShuffledBatches)->Arg(0)->Arg(2)->UseRealTime();

// 50,000 CIFAR-10-shaped images (uint8 {3, 32, 32}, values from the index)
// with class ids, in memory.
DatasetPtr CifarShaped() {
  static const DatasetPtr data = [] {
    constexpr int64_t n = 50000, pixels = 3 * 32 * 32;
    Array images;
    images.type = ElementType::kUint8;
    images.dims = {n, 3, 32, 32};
    images.bytes.resize(n * pixels);
    for (int64_t i = 0; i < n * pixels; ++i) {
      images.bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 24);
    }
    Array labels;
    labels.type = ElementType::kInt32;
    labels.dims = {n};
    labels.bytes.assign(n * 4, 0);
    return ArrayDataset("cifar-shaped", std::move(images), std::move(labels),
                        10);
  }();
  return data;
}

// Batches of 256 with RandomCrop(32, padding 4), a flip and per-channel
// normalisation, torchvision's CIFAR recipe; range(0) as above.
void BM_AugmentedCifarBatches(benchmark::State& state) {
  LoaderOptions options;
  options.batch_size = 256;
  options.prefetch = static_cast<int>(state.range(0));
  options.transforms = {
      RandomCrop(4), RandomHorizontalFlip(0.5),
      Normalize({0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f})};
  BatchLoader loader(CifarShaped(), options);
  TakeBatches(state, loader);
}
BENCHMARK(BM_AugmentedCifarBatches)->Arg(0)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace ringlet::data

BENCHMARK_MAIN();
