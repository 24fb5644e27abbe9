#include "nn/ops/non_finite.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include "nn/ops/dispatch.h"

namespace ringlet::nn {

NonFiniteCounts QueueCountNonFinite(const std::vector<const Tensor*>& tensors) {
  NonFiniteCounts out;
  out.counts_.assign(tensors.size(), 0);
  if (tensors.empty()) return out;
  const Device device = tensors.front()->device();
  for (const Tensor* t : tensors) {
    CommonDevice("count non-finite", {device, t->device()});
  }
  out.device_counts_ =
      kernels::count_non_finite.For(device)(tensors, &out.counts_);
  out.pending_ = out.device_counts_.defined();
  return out;
}

const std::vector<int64_t>& NonFiniteCounts::Read() const {
  if (!pending_) return counts_;
  const size_t n = counts_.size();
  std::vector<float> host(n + 1);
  CopyToHost(device_counts_, host.data());
  std::vector<uint32_t> bits(n + 1);
  std::memcpy(bits.data(), host.data(), bits.size() * sizeof(uint32_t));
  for (size_t i = 0; i < n; ++i) counts_[i] = bits[i];
  pending_ = false;
  return counts_;
}

int NonFiniteCounts::FirstBad() const {
  const std::vector<int64_t>& counts = Read();
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > 0) return static_cast<int>(i);
  }
  return -1;
}

const unsigned int* NonFiniteCounts::device_total() const {
  if (!device_counts_.defined()) return nullptr;
  return reinterpret_cast<const unsigned int*>(device_counts_.device_data()) +
         counts_.size();
}

}  // namespace ringlet::nn
