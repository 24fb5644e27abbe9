#include "nn/ops/dispatch.h"

#include <string>

namespace ringlet::nn {

Device CommonDevice(const char* op, std::initializer_list<Device> devices) {
  bool any = false;
  Device common;
  for (const Device& d : devices) {
    if (!any) {
      common = d;
      any = true;
    } else if (d != common && (d.is_cuda() || common.is_cuda())) {
      throw DeviceError(std::string(op) + ": inputs on " + ToString(common) +
                        " and " + ToString(d) +
                        "; move them to one device with Tensor::To");
    }
  }
  return any ? common : Device::Cpu();
}

namespace {

Device CommonDeviceOf(const char* op,
                      std::initializer_list<const Tensor*> inputs) {
  // At most a handful of inputs: a small fixed array, no allocation.
  Device devices[8];
  size_t n = 0;
  for (const Tensor* t : inputs) {
    if (t->defined() && n < 8) devices[n++] = t->device();
  }
  switch (n) {
    case 0:
      return Device::Cpu();
    case 1:
      return devices[0];
    default:
      break;
  }
  Device common = devices[0];
  for (size_t i = 1; i < n; ++i)
    common = CommonDevice(op, {common, devices[i]});
  return common;
}

}  // namespace

Device OpDeviceOfAnyType(const char* op,
                         std::initializer_list<const Tensor*> inputs) {
  const Device device = CommonDeviceOf(op, inputs);
  if (device.is_cpu()) {
    int position = 0;
    for (const Tensor* t : inputs) {
      ++position;
      if (t->defined() && t->StoredChannelsLast()) {
        throw DeviceError(
            std::string(op) + ": input " + std::to_string(position) +
            " (shape " + ToString(t->shape()) +
            ") is channels-last, a GPU memory format; CPU ops take "
            "contiguous tensors (convert with "
            "Tensor::ToMemoryFormat(MemoryFormat::kContiguous))");
      }
    }
  }
  return device;
}

Device OpDevice(const char* op, std::initializer_list<const Tensor*> inputs) {
  int position = 0;
  for (const Tensor* t : inputs) {
    ++position;
    if (t->defined() && t->dtype() != DType::kFloat32) {
      throw DTypeError(std::string(op) + ": input " + std::to_string(position) +
                       " (shape " + ToString(t->shape()) + ") is " +
                       ToString(t->dtype()) + "; " + op +
                       " takes float32 only (convert with "
                       "Tensor::To(DType::kFloat32))");
    }
  }
  return OpDeviceOfAnyType(op, inputs);
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
