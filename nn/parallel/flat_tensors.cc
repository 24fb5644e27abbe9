#include "nn/parallel/flat_tensors.h"

#include <utility>

#include "nn/ops/dispatch.h"

namespace ringlet::nn {
namespace {

Device CommonDeviceOf(const std::vector<Tensor*>& tensors) {
  if (tensors.empty()) return Device::Cpu();
  const Device device = tensors.front()->device();
  // nn's rule for mixing devices (CPU devices share host memory).
  for (const Tensor* t : tensors) {
    CommonDevice("flat tensors", {device, t->device()});
  }
  return device;
}

}  // namespace

FlatTensors::FlatTensors(std::vector<Tensor*> tensors)
    : tensors_(std::move(tensors)) {
  const Device device = CommonDeviceOf(tensors_);
  for (const Tensor* t : tensors_) count_ += t->numel();
  flat_ = Tensor::Uninitialized({count_}, device);
  packed_ = DeviceFence(device);
}

void FlatTensors::Pack() {
  int64_t offset = 0;
  for (const Tensor* t : tensors_) {
    CopyElements(*t, 0, flat_, offset, t->numel());
    offset += t->numel();
  }
  packed_.Record();
}

void FlatTensors::WaitUntilPacked() const { packed_.Wait(); }

void FlatTensors::PackForCollective() {
  Pack();
  WaitUntilPacked();
}

void FlatTensors::Unpack() {
  int64_t offset = 0;
  for (Tensor* t : tensors_) {
    CopyElements(flat_, offset, *t, 0, t->numel());
    offset += t->numel();
  }
}

}  // namespace ringlet::nn
