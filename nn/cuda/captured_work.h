// A step recorded once as a CUDA graph (GpuBackend::Capture).
#ifndef RINGLET_NN_CUDA_CAPTURED_WORK_H_
#define RINGLET_NN_CUDA_CAPTURED_WORK_H_

#include <functional>
#include <memory>

#include "nn/gpu_backend.h"

namespace ringlet::nn::cuda {

std::unique_ptr<GpuCapturedWork> CaptureWork(int device,
                                             const std::function<void()>& work);

}  // namespace ringlet::nn::cuda

#endif  // RINGLET_NN_CUDA_CAPTURED_WORK_H_
