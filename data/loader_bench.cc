// loader_bench: how fast Fashion-MNIST is decoded and batched.
//
//   ./bazelw run //data:loader_bench
//
// Needs the installed data set (or $FASHION_MNIST_DIR). Goals on a 2-core
// machine: the training set decoded in under 0.5 s; shuffled, normalised
// batches of 256 at 200,000 images/s or more on one core.
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
BENCHMARK(BM_ShuffledBatches)->Arg(0)->Arg(2)->UseRealTime();

}  // namespace
}  // namespace ringlet::data

BENCHMARK_MAIN();
