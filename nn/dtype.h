// The element types of nn's tensors:
//   float32   IEEE single precision; every op takes it, and master weights,
//             optimizer state, losses and batch-norm statistics stay in it.
//   bfloat16  float32's sign and 8-bit exponent with a 7-bit mantissa (the
//             top half of a float32): the storage of activations and of
//             the operands of convolutions and matrix products under
//             --precision=bf16. Converting from float32 rounds to nearest,
//             ties to even; converting back is exact.
// Each op states which it accepts (nn/ops/dispatch.h); one that does not
// take a tensor's type throws DTypeError naming the op and the types.
#ifndef RINGLET_NN_DTYPE_H_
#define RINGLET_NN_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ringlet::nn {

enum class DType { kFloat32, kBFloat16 };

// 4 or 2.
size_t ElementSize(DType dtype);
// "float32" or "bfloat16".
const char* ToString(DType dtype);
// "float32"/"fp32" or "bfloat16"/"bf16"; throws std::invalid_argument
// naming the choices.
DType ParseDType(const std::string& name);

// A tensor of a type an op does not take.
class DTypeError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Host conversions of n elements (bfloat16 as its 16 bits). Rounding to
// nearest even, as CUDA's __float2bfloat16 and Eigen's; a NaN stays a NaN.
void FloatToBf16(const float* src, uint16_t* dst, int64_t n);
void Bf16ToFloat(const uint16_t* src, float* dst, int64_t n);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_DTYPE_H_
