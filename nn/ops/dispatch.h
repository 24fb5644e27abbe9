// The checks every op's front makes before its kernel table picks the
// kernel (kernel_table.h): an op runs on the device of its tensor inputs,
// and inputs on different devices are DeviceErrors naming the op and the
// devices.
//
// Element types: every op takes, accumulates in and returns float32 unless
// its header says more; OpDevice refuses any other input with a DTypeError
// naming the op. The ops that also take bfloat16 (under --precision=bf16,
// nn/autocast.h) handle it before they reach OpDevice.
#ifndef RINGLET_NN_OPS_DISPATCH_H_
#define RINGLET_NN_OPS_DISPATCH_H_

#include <initializer_list>

#include "nn/tensor.h"

namespace ringlet::nn {

// The device all defined `inputs` are on (CPU when none is defined). CPU
// devices share host memory, so tensors of cpu:0 and cpu:1 mix (CPU ops
// return cpu:0 tensors); a GPU's tensors mix only with that GPU's. Throws
// DTypeError for an input that is not float32, and DeviceError for a
// channels-last input of a CPU op (channels-last is a GPU memory format).
Device OpDevice(const char* op, std::initializer_list<const Tensor*> inputs);
// The same without the type check, for ops that take bfloat16 too.
Device OpDeviceOfAnyType(const char* op,
                         std::initializer_list<const Tensor*> inputs);
// The same rule over devices.
Device CommonDevice(const char* op, std::initializer_list<Device> devices);

// For CPU-only ops: throws unless every defined input is on a CPU device.
void RequireCpu(const char* op, std::initializer_list<const Tensor*> inputs);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_DISPATCH_H_
