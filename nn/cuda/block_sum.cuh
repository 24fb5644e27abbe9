// A block's sum of one double per thread, for nn's reduction kernels
// (batch-norm sums, bias gradients, sums of squares). A fixed tree, so the
// order of additions, and the result's bits, never change from run to run.
#ifndef RINGLET_NN_CUDA_BLOCK_SUM_CUH_
#define RINGLET_NN_CUDA_BLOCK_SUM_CUH_

namespace ringlet::nn::cuda {

// Every thread of a block of kThreads passes its value and `shared`, a
// __shared__ double[kThreads]; every thread gets the total. `shared` may be
// reused as soon as it returns.
template <int kThreads>
__device__ double BlockSum(double value, double* shared) {
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) shared[threadIdx.x] += shared[threadIdx.x + half];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_BLOCK_SUM_CUH_
