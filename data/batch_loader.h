// Shuffled mini-batches of a data set, prepared ahead of time.
//
// Each epoch visits every sample once, in an order that depends only on the
// seed and the epoch number. Inputs come out as float32: uint8 ones in
// [0, 1] (value / 255, as d2l's ToTensor gives images), other types
// converted as they are; targets as the data set holds them. With
// prefetch > 0 a background thread fills up to that many batches ahead of
// the consumer.
#ifndef RINGLET_DATA_BATCH_LOADER_H_
#define RINGLET_DATA_BATCH_LOADER_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "data/dataset.h"
#include "data/fashion_mnist.h"
#include "data/shard.h"
#include "data/transforms.h"

namespace ringlet::data {

struct LoaderOptions {
  int64_t batch_size = 256;
  uint64_t seed = 0;
  bool shuffle = true;     // False keeps the file order (evaluation).
  bool drop_last = false;  // Drop the last batch when it is not full.
  int prefetch = 2;        // Batches prepared ahead; 0 prepares in Next().
  // Applied in order to each sample's float input, with randomness from
  // (seed, epoch, sample) alone (data/transforms.h).
  std::vector<Transform> transforms;
  // How every batch is cut into shards and which of them this process
  // loads (DistributedSampler's share; the engine's TrainLayout or
  // EvalLayout); the other shards are other processes' to read. The
  // default: the whole batch as one shard.
  ShardLayout layout;
};

struct Batch {
  int64_t epoch = 0;
  int64_t index = 0;  // Position of this batch within its epoch.
  int64_t size = 0;   // Samples in this batch; the last one may be smaller.
  // The samples held: [first, first + held) of the batch's (this
  // process's shards of `layout`); input(i) and the targets start at
  // `first`.
  int64_t first = 0;
  int64_t held = 0;
  ShardLayout layout;
  std::vector<int64_t> input_shape;  // One sample's ({1, 28, 28}).
  std::vector<float> inputs;         // held x input_shape, as float32.
  SampleSpec target;                 // One sample's target.
  std::vector<uint8_t> targets;      // held x target.bytes().

  // This process's shards, views into this batch (valid while it holds
  // them: until the loader refills it).
  LocalBatch Local() const;

  const float* input(int64_t i) const {
    return inputs.data() + i * ElementsOf(input_shape, INT64_MAX);
  }
  // The targets as T; throws DataError when they are of another type.
  template <typename T>
  const T* targets_as() const {
    CheckTargetType(ElementTypeOf<T>());
    return reinterpret_cast<const T*>(targets.data());
  }

 private:
  void CheckTargetType(ElementType wanted) const;
};

// Fashion-MNIST's split as a data set (uint8 {1, 28, 28} -> int32 {}, 10
// classes), without copying it: kept alive by the data set, or (a
// reference) outliving it.
DatasetPtr SplitDataset(std::shared_ptr<const Split> split);
DatasetPtr SplitDataset(const Split& split);

class BatchLoader {
 public:
  // Throws std::invalid_argument for a batch size below 1 or a negative
  // prefetch.
  BatchLoader(DatasetPtr data, const LoaderOptions& options);
  // A Fashion-MNIST split, which must outlive the loader.
  BatchLoader(const Split& split, const LoaderOptions& options)
      : BatchLoader(SplitDataset(split), options) {}
  ~BatchLoader();
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  // Starts (or restarts) epoch `epoch` at its batch `first_batch` (a run
  // resumed mid-epoch; the order is the epoch's whole order either way):
  // batches of an unfinished epoch are discarded. Throws
  // std::invalid_argument for a first_batch outside [0, batches_per_epoch].
  void StartEpoch(int64_t epoch, int64_t first_batch = 0);

  // Moves the next batch of the current epoch into *batch, reusing its
  // buffers, and returns true; returns false when the epoch is over. Throws
  // std::logic_error before the first StartEpoch, and what reading or
  // transforming the batch threw (a DataError for a file cut short), on
  // this thread whichever thread made the batch, until the next
  // StartEpoch.
  bool Next(Batch* batch);

  int64_t batches_per_epoch() const { return batches_per_epoch_; }
  const LoaderOptions& options() const { return options_; }

 private:
  // The order of one epoch, shared with the producer thread.
  struct EpochPlan {
    int64_t epoch = 0;
    std::vector<int64_t> order;
  };

  std::shared_ptr<const EpochPlan> MakePlan(int64_t epoch) const;
  void Fill(const EpochPlan& plan, int64_t index, Batch* batch) const;
  void ProducerLoop();

  const DatasetPtr data_;
  const LoaderOptions options_;
  int64_t batches_per_epoch_ = 0;

  std::mutex mu_;
  std::condition_variable changed_;
  std::shared_ptr<const EpochPlan> plan_;  // Null before StartEpoch.
  uint64_t generation_ = 0;  // Bumped by StartEpoch; stale batches are dropped.
  int64_t produced_ = 0;     // Batches of this generation made or queued.
  int64_t consumed_ = 0;     // Batches of this generation handed out.
  // What the producer threw making this generation's next batch; Next()
  // rethrows it once the batches before it are handed out.
  std::exception_ptr failed_;
  std::deque<Batch> ready_;
  std::vector<Batch> spare_;  // Buffers to reuse.
  bool stopping_ = false;
  std::thread producer_;
};

}  // namespace ringlet::data

#endif  // RINGLET_DATA_BATCH_LOADER_H_
