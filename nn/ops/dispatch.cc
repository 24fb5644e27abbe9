#include "nn/ops/dispatch.h"

#include <string>

namespace ringlet::nn {

Device OpDevice(const char* op, std::initializer_list<const Tensor*> inputs) {
  const Tensor* first = nullptr;
  for (const Tensor* t : inputs) {
    if (!t->defined()) continue;
    if (first == nullptr) {
      first = t;
    } else if (t->device() != first->device()) {
      throw DeviceError(std::string(op) + ": inputs on " +
                        ToString(first->device()) + " and " +
                        ToString(t->device()) +
                        "; move them to one device with Tensor::To");
    }
  }
  return first ? first->device() : Device::Cpu();
}

void RequireCpu(const char* op, std::initializer_list<const Tensor*> inputs) {
  const Device device = OpDevice(op, inputs);
  if (!device.is_cpu()) {
    throw DeviceError(std::string(op) + " on " + ToString(device) +
                      ": this op has no CUDA implementation yet (nn's CUDA "
                      "ops are being written); run it on a CPU device");
  }
}

}  // namespace ringlet::nn
