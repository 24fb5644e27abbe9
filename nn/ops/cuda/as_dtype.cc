// Conversion between element types on CUDA devices: the tensor runtime's
// own kernels (nn/cuda/tensor_kernels.h), reached through Tensor::To.
#include "nn/ops/autocast.h"

namespace ringlet::nn::cuda_ops {
namespace {

Tensor AsDTypeCuda(const Tensor& t, DType dtype) { return t.To(dtype); }

}  // namespace

RINGLET_REGISTER_KERNEL(kernels::as_dtype, DeviceType::kCuda, AsDTypeCuda);

}  // namespace ringlet::nn::cuda_ops
