// The sizes cuDNN's and cuBLAS's calls take, checked before a call so that
// a batch past them is a ShapeError saying what fits, not a library status
// (cuDNN's NCHW descriptors hold at most 2^31 - 1 elements, since their
// strides are ints; cuBLAS's dimensions are ints too). Plain C++: the
// arithmetic is tested on any machine.
#ifndef RINGLET_NN_OPS_CUDA_LIBRARY_LIMITS_H_
#define RINGLET_NN_OPS_CUDA_LIBRARY_LIMITS_H_

#include <cstdint>

namespace ringlet::nn::cuda_ops {

// Elements in one tensor cuDNN's legacy descriptors describe.
inline constexpr int64_t kMaxCudnnElements = (int64_t{1} << 31) - 1;

// Throws ShapeError unless cuDNN can describe an [n, c, h, w] tensor: each
// size is non-negative and the elements are at most kMaxCudnnElements. The
// message names the shape and the largest n (samples per GPU) that fits.
void CheckCudnnTensor(int64_t n, int64_t c, int64_t h, int64_t w);

// Throws ShapeError unless every dimension of a cuBLAS product fits an
// int: an [n, in] x [in, out] linear layer.
void CheckCublasProduct(int64_t n, int64_t in, int64_t out);

}  // namespace ringlet::nn::cuda_ops

#endif  // RINGLET_NN_OPS_CUDA_LIBRARY_LIMITS_H_
