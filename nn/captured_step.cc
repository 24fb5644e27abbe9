#include "nn/captured_step.h"

#include "nn/cuda/storage.h"

namespace ringlet::nn {

CapturedStep::CapturedStep(Device device, const std::function<void()>& step)
    : device_(device) {
  if (!device.is_cuda()) {
    throw DeviceError(
        "a captured step (CUDA graph) needs a GPU; " + ToString(device) +
        " runs each op as it is called: " + "call the step itself");
  }
  captured_ = cuda::CaptureWork(device.index, step);
}

void CapturedStep::Replay() { cuda::ReplayWork(captured_.get()); }

}  // namespace ringlet::nn
