// RankBuffer for builds without CUDA: host memory only.
#include <cstring>

#include "collectives/api/collective_error.h"
#include "collectives/backends/rank_buffer.h"

namespace ringlet::collectives {

RankBuffer::RankBuffer(bool on_device, int rank, size_t bytes)
    : on_device_(on_device), rank_(rank) {
  if (on_device_) {
    throw CollectiveError(
        "GPU buffers need a build with CUDA (no toolkit was found, or "
        "--config=cpu_only)");
  }
  host_.resize(bytes);
  data_ = host_.data();
}

RankBuffer::~RankBuffer() = default;

void RankBuffer::Upload(const void* host, size_t bytes) {
  std::memcpy(data_, host, bytes);
}

void RankBuffer::Download(void* host, size_t bytes) const {
  std::memcpy(host, data_, bytes);
}

}  // namespace ringlet::collectives
