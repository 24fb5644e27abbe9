#include "nn/ops/kernel_table.h"

#include <string>

namespace ringlet::nn {

void ThrowNoKernel(const char* op, Device device) {
  if (device.is_cuda()) {
    throw DeviceError(
        std::string(op) + " on " + ToString(device) +
        ": nn's GPU ops are not in this build (no CUDA toolkit was found, or "
        "--config=cpu_only), or this op has no CUDA implementation; use a "
        "CPU device, or rebuild where CUDA is installed");
  }
  throw DeviceError(std::string(op) + " on " + ToString(device) +
                    ": no CPU implementation is linked (a target that calls "
                    "nn's ops depends on //nn/ops)");
}

}  // namespace ringlet::nn
