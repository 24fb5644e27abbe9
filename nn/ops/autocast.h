// Mixed precision, as torch.autocast(dtype=torch.bfloat16): with autocast
// on (--precision=bf16), each op decides the type it computes in.
//   conv2d, linear   operands rounded to bfloat16, products summed in
//                    float32, the result rounded once to bfloat16 (what
//                    tensor cores compute). Their backward sums bfloat16
//                    products into float32 weight and bias gradients (the
//                    master weights' type; on GPUs cuDNN writes the
//                    weight gradient in bfloat16 first) and rounds the
//                    input gradient once to bfloat16, returned in the
//                    input's type.
//   batch norm, relu, pooling, add
//                    in their input's type (a float32 and a bfloat16
//                    operand of add give float32; AddInPlace takes two
//                    bfloat16 activation gradients, or float32 ones);
//                    batch-norm statistics, running averages, gamma and beta
//                    stay float32.
//   softmax cross-entropy
//                    float32 (bfloat16 logits are widened), its gradient
//                    too (the next backward rounds it as it needs).
//   everything else (optimizers, clipping, gradient sums, non-finite
//                    checks) takes float32 only (nn/ops/dispatch.h).
// Each op above also takes bfloat16 inputs with autocast off, by the same
// rules. Where no bfloat16 kernel is written, an op computes in float32 on
// the bfloat16 values (exact) and rounds its result once: the reference the
// bfloat16 kernels are checked against.
#ifndef RINGLET_NN_OPS_AUTOCAST_H_
#define RINGLET_NN_OPS_AUTOCAST_H_

#include <initializer_list>

#include "nn/compute_options.h"
#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// The calling thread's setting (ComputeOptions::autocast,
// nn/compute_options.h): kBFloat16 turns autocast on, kFloat32 (the
// default) off.
DType autocast();

// Whether a convolution or matrix product of `operands` computes in
// bfloat16: autocast is on, or an operand is bfloat16 already.
bool ComputesInBf16(std::initializer_list<const Tensor*> operands);
// `t` as `dtype` (an undefined tensor stays undefined), converted by the
// op threads on a CPU device.
Tensor AsDType(const Tensor& t, DType dtype);
// `t`'s values rounded to bfloat16, held in float32 (exact): what the
// reference path hands the float32 kernels.
Tensor RoundedToBf16(const Tensor& t);

// AsDType's implementations per device type (kernel_table.h), given a
// defined tensor and the other type.
namespace kernels {
inline KernelTable<Tensor(const Tensor& t, DType dtype)> as_dtype{"convert"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_AUTOCAST_H_
