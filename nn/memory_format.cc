#include "nn/memory_format.h"

#include <atomic>
#include <stdexcept>

namespace ringlet::nn {
namespace {

std::atomic<MemoryFormat>& GpuSetting() {
  static std::atomic<MemoryFormat> setting{MemoryFormat::kContiguous};
  return setting;
}

}  // namespace

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

void SetGpuActivationFormat(MemoryFormat format) { GpuSetting() = format; }

MemoryFormat gpu_activation_format() { return GpuSetting(); }

MemoryFormat GpuConvolutionFormat(MemoryFormat input) {
  return GpuSetting() == MemoryFormat::kChannelsLast
             ? MemoryFormat::kChannelsLast
             : input;
}

}  // namespace ringlet::nn
