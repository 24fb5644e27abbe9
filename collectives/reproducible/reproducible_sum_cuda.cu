// The device sum's CUDA half (reproducible_sum_device.h): kernels over the
// grid arithmetic the host uses, registered when linked in.
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "collectives/reproducible/call_checks.h"
#include "collectives/reproducible/grid_arithmetic.h"
#include "collectives/reproducible/reproducible_sum.h"
#include "collectives/reproducible/reproducible_sum_device.h"
#include "gpu/cuda_check.h"
#include "gpu/device_guard.h"
#include "gpu/stream.h"

namespace ringlet::collectives {
namespace {

// One CUDA block per block of the grid in the maxima kernel.
constexpr int kThreads = 256;
static_assert(kReproducibleBlock == kThreads);

template <bool kBFloat16>
__device__ float LoadValue(const void* x, size_t i) {
  if constexpr (kBFloat16) {
    return grid::BFloat16Value(static_cast<const uint16_t*>(x)[i]);
  } else {
    return static_cast<const float*>(x)[i];
  }
}

// maxima[b] = max(maxima[b], the largest finite magnitude's bits in block b
// of x[0, count)).
template <bool kBFloat16>
__global__ void block_maxima_kernel(const void* x, size_t count,
                                    int32_t* maxima) {
  __shared__ int32_t warp_maxima[kThreads / 32];
  const size_t blocks = (count + kThreads - 1) / kThreads;
  for (size_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const size_t i = b * kThreads + threadIdx.x;
    int32_t m =
        i < count ? grid::FiniteMagnitudeBits(LoadValue<kBFloat16>(x, i)) : 0;
    for (int offset = 16; offset > 0; offset /= 2) {
      m = max(m, __shfl_down_sync(0xffffffffu, m, offset));
    }
    if (threadIdx.x % 32 == 0) warp_maxima[threadIdx.x / 32] = m;
    __syncthreads();
    if (threadIdx.x == 0) {
      int32_t all = maxima[b];
      for (int w = 0; w < kThreads / 32; ++w) all = max(all, warp_maxima[w]);
      maxima[b] = all;
    }
    __syncthreads();
  }
}

// words[i] = (add ? words[i] : 0) + x[i] on its block's grid.
template <bool kBFloat16>
__global__ void to_words_kernel(const void* x, size_t count,
                                const int32_t* maxima, double* words,
                                bool add) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const grid::Grid g = grid::GridFor(maxima[i / kThreads]);
    const double word = grid::ToWord(LoadValue<kBFloat16>(x, i), g.scale);
    words[i] = add ? words[i] + word : word;
  }
}

// out[i] = words[i] finished on its block's grid.
template <bool kBFloat16>
__global__ void finish_kernel(const double* words, size_t count,
                              const int32_t* maxima, void* out) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
       i < count; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const grid::Grid g = grid::GridFor(maxima[i / kThreads]);
    if constexpr (kBFloat16) {
      static_cast<uint16_t*>(out)[i] = grid::FinishBFloat16(words[i], g.unit);
    } else {
      static_cast<uint32_t*>(out)[i] = grid::FinishFloat32(words[i], g.unit);
    }
  }
}

unsigned GridSize(size_t items) {
  const size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65535 ? (blocks > 0 ? blocks : 1)
                                              : 65535);
}

// What the calls of one thread on one GPU reuse: a stream, and the words
// and maxima grown to the largest call (cudaMalloc and cudaFree each
// synchronise the device; a training step makes one call per step).
class Scratch {
 public:
  explicit Scratch(int device) : device_(device), stream_(device) {}
  ~Scratch() {
    // At a thread's end; errors (a runtime already torn down) are moot.
    cudaSetDevice(device_);
    cudaFree(words_);
    cudaFree(small_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  int device() const { return device_; }
  const gpu::Stream& stream() const { return stream_; }
  int32_t* Small(size_t count) {
    return static_cast<int32_t*>(Grow(&small_, &small_bytes_, count * 4));
  }
  double* Words(size_t count) {
    return static_cast<double*>(Grow(&words_, &words_bytes_, count * 8));
  }

 private:
  void* Grow(void** buffer, size_t* capacity, size_t bytes) {
    if (bytes > *capacity) {
      stream_.Synchronize();  // Nothing of ours still uses the old one.
      RINGLET_CUDA_CHECK(cudaFree(*buffer));
      *buffer = nullptr;
      *capacity = 0;
      RINGLET_CUDA_CHECK(cudaMalloc(buffer, bytes));
      *capacity = bytes;
    }
    return *buffer;
  }

  const int device_;
  gpu::Stream stream_;
  void* small_ = nullptr;
  size_t small_bytes_ = 0;
  void* words_ = nullptr;
  size_t words_bytes_ = 0;
};

Scratch& ScratchFor(int device) {
  thread_local std::vector<std::unique_ptr<Scratch>> scratches;
  for (const auto& s : scratches) {
    if (s->device() == device) return *s;
  }
  scratches.push_back(std::make_unique<Scratch>(device));
  return *scratches.back();
}

void RequireOnDevice(const void* p, int device, const char* what) {
  cudaPointerAttributes attributes{};
  const cudaError_t rc = cudaPointerGetAttributes(&attributes, p);
  cudaGetLastError();
  const bool on_device = rc == cudaSuccess && attributes.device == device &&
                         (attributes.type == cudaMemoryTypeDevice ||
                          attributes.type == cudaMemoryTypeManaged);
  if (!on_device) {
    throw std::invalid_argument(
        std::string("reproducible allreduce on GPU ") + std::to_string(device) +
        ": " + what +
        " is not in that GPU's memory; pass device buffers, or host buffers "
        "to ReproducibleAllReduce");
  }
}

void SumOnDevice(Communicator& comm, const std::vector<const void*>& summands,
                 void* recv, size_t count, DataType type, int device,
                 const CallOptions& options) {
  CheckReproducibleCall(summands, recv, count, type);
  if (count == 0) return;
  gpu::DeviceGuard guard(device);
  RequireOnDevice(recv, device, "recv");
  for (const void* summand : summands) {
    RequireOnDevice(summand, device, "a summand");
  }
  const bool bf16 = type == DataType::kBFloat16;
  const size_t blocks = (count + kThreads - 1) / kThreads;
  Scratch& scratch = ScratchFor(device);
  const gpu::Stream& stream = scratch.stream();
  int32_t* const held = scratch.Small(2 + blocks);
  double* const w = scratch.Words(count);
  int32_t* const maxima = held + 2;

  // The job's most and least summands on one rank (the host's check).
  int32_t counts[2] = {static_cast<int32_t>(summands.size()),
                       -static_cast<int32_t>(summands.size())};
  RINGLET_CUDA_CHECK(
      cudaMemcpy(held, counts, sizeof counts, cudaMemcpyHostToDevice));
  comm.AllReduce(held, held, 2, DataType::kInt32, ReduceOp::kMax, options);
  RINGLET_CUDA_CHECK(
      cudaMemcpy(counts, held, sizeof counts, cudaMemcpyDeviceToHost));
  CheckSummandsFit(counts[0], comm.size());

  RINGLET_CUDA_CHECK(
      cudaMemsetAsync(maxima, 0, blocks * sizeof(int32_t), stream.get()));
  for (const void* summand : summands) {
    if (bf16) {
      block_maxima_kernel<true><<<GridSize(count), kThreads, 0, stream.get()>>>(
          summand, count, maxima);
    } else {
      block_maxima_kernel<false>
          <<<GridSize(count), kThreads, 0, stream.get()>>>(summand, count,
                                                           maxima);
    }
    RINGLET_CUDA_CHECK_LAUNCH();
  }
  stream.Synchronize();
  // Non-negative int32 bits order as the magnitudes do.
  comm.AllReduce(maxima, maxima, blocks, DataType::kInt32, ReduceOp::kMax,
                 options);

  if (summands.empty()) {
    RINGLET_CUDA_CHECK(
        cudaMemsetAsync(w, 0, count * sizeof(double), stream.get()));
  }
  for (size_t s = 0; s < summands.size(); ++s) {
    if (bf16) {
      to_words_kernel<true><<<GridSize(count), kThreads, 0, stream.get()>>>(
          summands[s], count, maxima, w, s > 0);
    } else {
      to_words_kernel<false><<<GridSize(count), kThreads, 0, stream.get()>>>(
          summands[s], count, maxima, w, s > 0);
    }
    RINGLET_CUDA_CHECK_LAUNCH();
  }
  stream.Synchronize();
  comm.AllReduce(w, w, count, DataType::kFloat64, ReduceOp::kSum, options);

  if (bf16) {
    finish_kernel<true><<<GridSize(count), kThreads, 0, stream.get()>>>(
        w, count, maxima, recv);
  } else {
    finish_kernel<false><<<GridSize(count), kThreads, 0, stream.get()>>>(
        w, count, maxima, recv);
  }
  RINGLET_CUDA_CHECK_LAUNCH();
  stream.Synchronize();
}

const bool registered = [] {
  RegisterReproducibleOnDevice(&SumOnDevice);
  return true;
}();

}  // namespace
}  // namespace ringlet::collectives
