#include "parallel/flat_tensors.h"

#include <utility>

#include "nn/ops/dispatch.h"

namespace ringlet::parallel {
namespace {

// 256 bytes of floats: where cudaMalloc's blocks start.
constexpr int64_t kViewAlignment = 64;

nn::Device CommonDeviceOf(const std::vector<nn::Tensor*>& tensors) {
  if (tensors.empty()) return nn::Device::Cpu();
  const nn::Device device = tensors.front()->device();
  // nn's rule for mixing devices (CPU devices share host memory).
  for (const nn::Tensor* t : tensors) {
    nn::CommonDevice("flat tensors", {device, t->device()});
  }
  return device;
}

}  // namespace

FlatTensors::FlatTensors(std::vector<nn::Tensor*> tensors, Layout layout)
    : tensors_(std::move(tensors)) {
  const nn::Device device = CommonDeviceOf(tensors_);
  for (const nn::Tensor* t : tensors_) {
    if (layout == kViews) {
      count_ = (count_ + kViewAlignment - 1) / kViewAlignment * kViewAlignment;
    }
    offsets_.push_back(count_);
    count_ += t->numel();
  }
  if (layout == kCopies) {
    flat_ = nn::Tensor::Uninitialized({count_}, device);
  } else {
    flat_ = nn::Tensor({count_}, device);  // Zeros: the gaps.
    for (size_t i = 0; i < tensors_.size(); ++i) {
      nn::Tensor& t = *tensors_[i];
      nn::CopyElements(t, 0, flat_, offsets_[i], t.numel());
      t = flat_.ViewAt(offsets_[i], t.shape());
    }
  }
  packed_ = nn::DeviceEvent(device);
}

bool FlatTensors::IsView(size_t i) const {
  return tensors_[i]->device_data() == flat_.device_data() + offsets_.at(i);
}

void FlatTensors::Pack() {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (IsView(i)) continue;
    nn::CopyElements(*tensors_[i], 0, flat_, offsets_[i], tensors_[i]->numel());
  }
  packed_.Record();
}

void FlatTensors::WaitUntilPacked() const { packed_.Wait(); }

void FlatTensors::PackForCollective() {
  Pack();
  WaitUntilPacked();
}

void FlatTensors::Unpack() {
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (IsView(i)) continue;
    nn::CopyElements(flat_, offsets_[i], *tensors_[i], 0, tensors_[i]->numel());
  }
}

}  // namespace ringlet::parallel
