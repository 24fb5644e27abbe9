// Test helpers for parallel: random batches, d2l's split into shards,
// small models with seeded initialisation.
#ifndef RINGLET_PARALLEL_TESTING_BATCHES_H_
#define RINGLET_PARALLEL_TESTING_BATCHES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "nn/layers/containers.h"
#include "nn/tensor.h"
#include "parallel/data_parallel.h"

namespace ringlet::parallel::testing {

struct Batch {
  nn::Tensor images;  // [N, 1, side, side], host memory.
  std::vector<int32_t> labels;
  int64_t size() const { return images.dim(0); }
};

// Images uniform in [0, 1), labels 0..9, both from `seed`.
Batch RandomBatch(int64_t n, int64_t side, uint64_t seed);

// d2l's split_batch: contiguous shards whose sizes differ by at most one
// (later ones empty when there are more devices than samples).
std::vector<data::Shard> Shards(const Batch& b, int devices);

std::vector<nn::Device> Cpus(int k);  // cpu:0 .. cpu:k-1

// A small ResNet-shaped model for 8x8 inputs: convolution, batch norm,
// ReLU, a residual unit with a 1x1 shortcut, pooling, a linear layer.
std::unique_ptr<nn::Sequential> SmallNet();

// `make` with Kaiming-normal parameters from `seed`.
DataParallel::ModelFactory Seeded(
    std::function<std::unique_ptr<nn::Sequential>()> make, uint64_t seed);

}  // namespace ringlet::parallel::testing

#endif  // RINGLET_PARALLEL_TESTING_BATCHES_H_
