// The CUDA implementations of nn's ops, called by the ops in nn/ops when
// their inputs are on a GPU (see nn/ops/dispatch.h); same contracts as the
// CPU ops of the same names. Work is queued on the device's stream.
//
// Written so far: relu, add, SGD's update. Builds without CUDA link
// cuda_ops_without_cuda.cc (unreachable there: no tensor can be on a GPU).
#ifndef RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
#define RINGLET_NN_OPS_CUDA_CUDA_OPS_H_

#include "nn/tensor.h"

namespace ringlet::nn::cuda_ops {

Tensor ReluForward(const Tensor& x);
Tensor ReluBackward(const Tensor& y, const Tensor& dy);
Tensor Add(const Tensor& a, const Tensor& b);
void AddInPlace(Tensor& a, const Tensor& b);
// value -= lr * (grad + wd * value), or with momentum through velocity.
void SgdUpdate(Tensor& value, const Tensor& grad, Tensor* velocity, float lr,
               float momentum, float weight_decay);

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_CUDA_OPS_H_
