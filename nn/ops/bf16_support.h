// Where --precision=bf16 trains: on CPU devices through oneDNN's bfloat16
// convolutions, which need AVX512_BF16 or AMX-BF16 (read at run time), and
// on GPUs through cuDNN's bfloat16 convolutions. Elsewhere a clear error
// naming what is missing. (The ops themselves take bfloat16 on every
// device, through the reference path the tests compare against.)
#ifndef RINGLET_NN_OPS_BF16_SUPPORT_H_
#define RINGLET_NN_OPS_BF16_SUPPORT_H_

#include <vector>

#include "nn/device.h"

namespace ringlet::nn {

// Throws DeviceError saying what is missing unless every device in
// `devices` trains in bfloat16 on kernels made for it.
void RequireBf16Training(const std::vector<Device>& devices);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_BF16_SUPPORT_H_
