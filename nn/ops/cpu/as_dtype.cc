// Conversions between float32 and bfloat16 on CPU devices.
#include <cstdint>

#include "nn/ops/autocast.h"
#include "nn/ops/op_threads.h"

namespace ringlet::nn {
namespace {

// By the device's op threads: every activation of a bfloat16 step passes
// through here, and one thread alone left the others idle for a third of
// a ResNet-18 step.
Tensor AsDTypeCpu(const Tensor& t, DType dtype) {
  Tensor out = Tensor::Uninitialized(t.shape(), t.device(), dtype);
  const int64_t grain = int64_t{1} << 16;
  if (dtype == DType::kBFloat16) {
    const float* in = t.device_data();
    uint16_t* to = out.bf16_data();
    ParallelForElements(t.numel(), grain, [in, to](int64_t begin, int64_t end) {
      FloatToBf16(in + begin, to + begin, end - begin);
    });
  } else {
    const uint16_t* in = t.bf16_data();
    float* to = out.device_data();
    ParallelForElements(t.numel(), grain, [in, to](int64_t begin, int64_t end) {
      Bf16ToFloat(in + begin, to + begin, end - begin);
    });
  }
  return out;
}

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::as_dtype, DeviceType::kCpu, AsDTypeCpu);

}  // namespace ringlet::nn
