#include "parallel/micro_shards.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "collectives/reproducible/reproducible_sum.h"
#include "collectives/reproducible/reproducible_sum_device.h"
#include "nn/device_event.h"
#include "nn/dtype.h"

namespace ringlet::parallel {

void CheckMicroShards(int micro_shards, int ranks, const char* who) {
  if (micro_shards < 1 || micro_shards > 4096) {
    throw std::invalid_argument(std::string(who) +
                                ": micro-shards must be 1 to 4096, not " +
                                std::to_string(micro_shards));
  }
  if (ranks > micro_shards) {
    throw std::invalid_argument(
        std::string(who) + ": " + std::to_string(ranks) +
        " devices need at least as many micro-shards, not " +
        std::to_string(micro_shards) + "; give --micro_shards=" +
        std::to_string(ranks) + " or more (the same in every run to compare)");
  }
}

ReproducibleGradients::ReproducibleGradients(collectives::DataType wire,
                                             nn::Device device)
    : wire_(wire), device_(device) {
  if (wire != collectives::DataType::kFloat32 &&
      wire != collectives::DataType::kBFloat16) {
    throw std::invalid_argument(
        "reproducible gradients: the wire is float32 or bfloat16");
  }
}

namespace {

// Where each gradient starts in the flat summand: at a block of the
// reproducible sum's grid of its own, so a large gradient never coarsens a
// small one's grid. Returns the flat count; the gaps stay zeros.
int64_t BlockAlignedOffsets(const std::vector<nn::Tensor*>& grads,
                            std::vector<int64_t>* offsets) {
  constexpr int64_t kBlock = collectives::kReproducibleBlock;
  offsets->clear();
  int64_t at = 0;
  for (const nn::Tensor* g : grads) {
    offsets->push_back(at);
    at += (g->numel() + kBlock - 1) / kBlock * kBlock;
  }
  return at;
}

}  // namespace

void ReproducibleGradients::AddOnDevice(const std::vector<nn::Tensor*>& grads,
                                        int64_t count) {
  nn::Tensor flat({count}, device_);  // Zeros: the gaps.
  for (size_t t = 0; t < grads.size(); ++t) {
    nn::CopyElements(*grads[t], 0, flat, offsets_[t], grads[t]->numel());
  }
  // float32 to bfloat16 rounds to nearest even, as the host's FloatToBf16.
  on_device_.push_back(wire_ == collectives::DataType::kBFloat16
                           ? flat.To(nn::DType::kBFloat16)
                           : flat);
  ++used_;
}

void ReproducibleGradients::SumOnDeviceInto(
    collectives::Communicator& comm, const std::vector<nn::Tensor*>& grads,
    int64_t count) {
  // The summands' copies have run before the sum's own stream reads them.
  nn::DeviceEvent copied(device_);
  copied.Record();
  copied.Wait();
  std::vector<const void*> summands;
  for (const nn::Tensor& summand : on_device_) {
    if (summand.numel() != count) {
      throw std::logic_error(
          "reproducible gradients: a summand's size differs from the "
          "gradients'");
    }
    summands.push_back(summand.raw_data());
  }
  const bool bf16 = wire_ == collectives::DataType::kBFloat16;
  nn::Tensor sum = nn::Tensor::Uninitialized(
      {count}, device_, bf16 ? nn::DType::kBFloat16 : nn::DType::kFloat32);
  // Returns with the sum written (its stream synchronised).
  collectives::ReproducibleAllReduceOnDevice(comm, summands, sum.raw_data(),
                                             static_cast<size_t>(count), wire_,
                                             device_.index);
  on_device_.clear();
  used_ = 0;
  if (bf16) sum = sum.To(nn::DType::kFloat32);
  for (size_t t = 0; t < grads.size(); ++t) {
    nn::CopyElements(sum, offsets_[t], *grads[t], 0, grads[t]->numel());
  }
}

void ReproducibleGradients::Add(const std::vector<nn::Tensor*>& grads) {
  const int64_t count = BlockAlignedOffsets(grads, &offsets_);
  if (device_.is_cuda()) {
    AddOnDevice(grads, count);
    return;
  }
  const bool bf16 = wire_ == collectives::DataType::kBFloat16;
  // A float32 summand is kept as it is; a bfloat16 one passes through one
  // float32 staging buffer.
  if (!bf16 && float32_.size() <= used_) float32_.emplace_back();
  std::vector<float>& flat = bf16 ? staging_ : float32_[used_];
  flat.assign(count, 0.0f);
  for (size_t t = 0; t < grads.size(); ++t) {
    nn::CopyToHost(*grads[t], flat.data() + offsets_[t]);
  }
  if (bf16) {
    if (bfloat16_.size() <= used_) bfloat16_.emplace_back();
    bfloat16_[used_].resize(count);
    nn::FloatToBf16(flat.data(), bfloat16_[used_].data(), count);
  }
  ++used_;
}

void ReproducibleGradients::SumInto(collectives::Communicator& comm,
                                    const std::vector<nn::Tensor*>& grads) {
  const int64_t count = BlockAlignedOffsets(grads, &offsets_);
  if (device_.is_cuda()) {
    SumOnDeviceInto(comm, grads, count);
    return;
  }
  const bool bf16 = wire_ == collectives::DataType::kBFloat16;
  std::vector<const void*> summands;
  for (size_t s = 0; s < used_; ++s) {
    const size_t held = bf16 ? bfloat16_[s].size() : float32_[s].size();
    if (static_cast<int64_t>(held) != count) {
      throw std::logic_error(
          "reproducible gradients: a summand's size differs from the "
          "gradients'");
    }
    summands.push_back(bf16 ? static_cast<const void*>(bfloat16_[s].data())
                            : float32_[s].data());
  }
  used_ = 0;
  staging_.resize(count);
  if (bf16) {
    narrow_.resize(count);
    collectives::ReproducibleAllReduce(comm, summands, narrow_.data(),
                                       static_cast<size_t>(count), wire_);
    nn::Bf16ToFloat(narrow_.data(), staging_.data(), count);
  } else {
    collectives::ReproducibleAllReduce(comm, summands, staging_.data(),
                                       static_cast<size_t>(count), wire_);
  }
  for (size_t t = 0; t < grads.size(); ++t) {
    nn::CopyFromHost(staging_.data() + offsets_[t], *grads[t]);
  }
}

MicroShardBuffers::MicroShardBuffers(std::vector<nn::Tensor*> buffers)
    : buffers_(std::move(buffers)) {
  for (const nn::Tensor* b : buffers_) count_ += b->numel();
}

void MicroShardBuffers::Begin(int64_t slots) {
  start_.resize(count_);
  int64_t at = 0;
  for (const nn::Tensor* b : buffers_) {
    nn::CopyToHost(*b, start_.data() + at);
    at += b->numel();
  }
  slots_.assign(slots * count_, 0.0f);
}

void MicroShardBuffers::Record(int64_t slot) {
  float* out = slots_.data() + slot * count_;
  int64_t at = 0;
  for (nn::Tensor* b : buffers_) {
    nn::CopyToHost(*b, out + at);
    nn::CopyFromHost(start_.data() + at, *b);
    at += b->numel();
  }
  // + 0.0f: a -0 becomes +0, as it would after adding another rank's 0.
  for (int64_t i = 0; i < count_; ++i) out[i] += 0.0f;
}

void MicroShardBuffers::Finish(collectives::Communicator& comm,
                               const std::vector<char>& used) {
  if (count_ == 0) return;
  const int64_t slots = static_cast<int64_t>(used.size());
  // Exact: each slot holds one rank's values and zeros from the others.
  comm.AllReduce(slots_.data(), slots_.data(), slots_.size(),
                 collectives::DataType::kFloat32, collectives::ReduceOp::kSum);
  int64_t n = 0;
  for (char u : used) n += u != 0;
  if (n == 0) return;
  std::vector<double> mean(count_, 0.0);
  for (int64_t s = 0; s < slots; ++s) {
    if (!used[s]) continue;
    const float* v = slots_.data() + s * count_;
    for (int64_t i = 0; i < count_; ++i) mean[i] += v[i];
  }
  std::vector<float> values(count_);
  for (int64_t i = 0; i < count_; ++i) {
    values[i] = static_cast<float>(mean[i] / static_cast<double>(n));
  }
  int64_t at = 0;
  for (nn::Tensor* b : buffers_) {
    nn::CopyFromHost(values.data() + at, *b);
    at += b->numel();
  }
}

}  // namespace ringlet::parallel
