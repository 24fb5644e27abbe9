// A sanitizer canary: the smallest program with one more piece of
// ringlet's build than the last, run under compute-sanitizer by the GPU
// bundle (run_all.py canaries) so that one GPU call names the piece that
// makes the sanitizer crash before main. Each prints "canary ok" after a
// stream, an event and a copy on the GPU; without one it says so and
// exits 0 (there is nothing to check).
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "gpu/canaries/canary_piece.h"

int main() {
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) {
    std::printf("canary: no GPU\n");
    return 0;
  }
  if (!ringlet::gpu::canaries::PieceWorks()) {
    std::printf("canary: the piece failed\n");
    return 1;
  }
  cudaStream_t stream = nullptr;
  cudaEvent_t event = nullptr;
  void* device = nullptr;
  std::vector<float> host(1024, 1.0f);
  const bool ok =
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) ==
          cudaSuccess &&
      cudaEventCreateWithFlags(&event, cudaEventDisableTiming) == cudaSuccess &&
      cudaMalloc(&device, host.size() * sizeof(float)) == cudaSuccess &&
      cudaMemcpyAsync(device, host.data(), host.size() * sizeof(float),
                      cudaMemcpyHostToDevice, stream) == cudaSuccess &&
      cudaEventRecord(event, stream) == cudaSuccess &&
      cudaEventSynchronize(event) == cudaSuccess;
  cudaFree(device);
  cudaEventDestroy(event);
  cudaStreamDestroy(stream);
  std::printf(ok ? "canary ok\n" : "canary: a CUDA call failed\n");
  return ok ? 0 : 1;
}
