#include "nn/experimental/captured_step.h"

#include "nn/gpu_backend.h"

namespace ringlet::nn {

CapturedStep::CapturedStep(Device device, const std::function<void()>& step)
    : device_(device) {
  if (!device.is_cuda()) {
    throw DeviceError(
        "a captured step (CUDA graph) needs a GPU; " + ToString(device) +
        " runs each op as it is called: " + "call the step itself");
  }
  captured_ = GpuBackendFor(device).Capture(device.index, step);
}

void CapturedStep::Replay() { captured_->Replay(); }

}  // namespace ringlet::nn
