// How a rank-4 tensor of shape [N, C, H, W] orders its elements in memory:
// kContiguous is NCHW (every tensor's unless converted); kChannelsLast is
// NHWC, a pixel's channels side by side, the order cuDNN's tensor-core
// kernels read. Shapes, and every op's arguments and results, stay
// [N, C, H, W] in both (PyTorch's memory_format). Channels-last tensors
// are for GPU ops; CPU ops refuse them (nn/ops/dispatch.h).
#ifndef RINGLET_NN_MEMORY_FORMAT_H_
#define RINGLET_NN_MEMORY_FORMAT_H_

#include <string>

namespace ringlet::nn {

enum class MemoryFormat { kContiguous, kChannelsLast };

// "contiguous" or "channels-last".
const char* ToString(MemoryFormat format);

// The activations' memory format of models on GPUs, as the trainers'
// --layout: "nchw" (contiguous, the default) or "nhwc" (channels-last);
// throws std::invalid_argument naming the choices.
MemoryFormat ParseLayout(const std::string& name);
const char* LayoutName(MemoryFormat format);

// The calling thread's activations' format on GPUs
// (ComputeOptions::gpu_layout), read by the GPU's convolutions: under
// kChannelsLast a contiguous input is converted once, at the model's first
// convolution, and every activation after it stays channels-last (each op
// keeps its input's format). CPU devices ignore it.
MemoryFormat gpu_activation_format();
// The format a GPU convolution of an input in `input` runs in:
// channels-last when the input is, or when the setting asks for it.
MemoryFormat GpuConvolutionFormat(MemoryFormat input);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_MEMORY_FORMAT_H_
