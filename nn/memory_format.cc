#include "nn/memory_format.h"

#include <stdexcept>

#include "nn/compute_options.h"

namespace ringlet::nn {
const char* ToString(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "channels-last" : "contiguous";
}

MemoryFormat ParseLayout(const std::string& name) {
  if (name == "nchw") return MemoryFormat::kContiguous;
  if (name == "nhwc") return MemoryFormat::kChannelsLast;
  throw std::invalid_argument("unknown layout '" + name +
                              "'; use nchw or nhwc");
}

const char* LayoutName(MemoryFormat format) {
  return format == MemoryFormat::kChannelsLast ? "nhwc" : "nchw";
}

MemoryFormat gpu_activation_format() {
  return CurrentComputeOptions().gpu_layout;
}

MemoryFormat GpuConvolutionFormat(MemoryFormat input) {
  return gpu_activation_format() == MemoryFormat::kChannelsLast
             ? MemoryFormat::kChannelsLast
             : input;
}

}  // namespace ringlet::nn
