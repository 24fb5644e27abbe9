// RankBuffer for builds with CUDA.
#include <cuda_runtime.h>

#include <cstring>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/rank_buffer.h"

namespace ringlet::collectives {
namespace {

void Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    throw CollectiveError(std::string(what) + ": " +
                          cudaGetErrorString(status));
  }
}

}  // namespace

RankBuffer::RankBuffer(bool on_device, int rank, size_t bytes)
    : on_device_(on_device), rank_(rank) {
  if (!on_device_) {
    host_.resize(bytes);
    data_ = host_.data();
    return;
  }
  Check(cudaSetDevice(rank_), "cudaSetDevice");
  Check(cudaMalloc(&data_, bytes), "cudaMalloc");
}

RankBuffer::~RankBuffer() {
  if (on_device_ && data_ != nullptr) cudaFree(data_);
}

void RankBuffer::Upload(const void* host, size_t bytes) {
  if (!on_device_) {
    std::memcpy(data_, host, bytes);
    return;
  }
  Check(cudaSetDevice(rank_), "cudaSetDevice");
  Check(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

void RankBuffer::Download(void* host, size_t bytes) const {
  if (!on_device_) {
    std::memcpy(host, data_, bytes);
    return;
  }
  Check(cudaSetDevice(rank_), "cudaSetDevice");
  Check(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
}

}  // namespace ringlet::collectives
