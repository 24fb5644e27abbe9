// A rank's buffer for tools that drive any backend: host memory for the
// ring and naive backends, GPU memory (on the rank's device) for nccl.
#ifndef RINGLET_COLLECTIVES_BACKENDS_RANK_BUFFER_H_
#define RINGLET_COLLECTIVES_BACKENDS_RANK_BUFFER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "collectives/backends/registry.h"

namespace ringlet::collectives {

class RankBuffer {
 public:
  // True when `backend` works on GPU memory (registry.h's device_memory).
  static bool OnDevice(const std::string& backend) {
    const BackendSpec* spec = FindBackend(backend);
    return spec != nullptr && spec->device_memory;
  }

  // `bytes` on GPU `rank` when on_device (throws CollectiveError in a build
  // without CUDA or on a CUDA error), else in host memory.
  RankBuffer(bool on_device, int rank, size_t bytes);
  ~RankBuffer();
  RankBuffer(const RankBuffer&) = delete;
  RankBuffer& operator=(const RankBuffer&) = delete;

  void* data() { return data_; }
  void Upload(const void* host, size_t bytes);    // host -> buffer
  void Download(void* host, size_t bytes) const;  // buffer -> host

 private:
  bool on_device_;
  int rank_;
  void* data_ = nullptr;
  std::vector<unsigned char> host_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_RANK_BUFFER_H_
