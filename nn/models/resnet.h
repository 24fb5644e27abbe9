// d2l's ResNet-18 for 1x28x28 Fashion-MNIST ("Concise Implementation for
// Multiple GPUs"): a 3x3 stem (stride 1, padding 1), batch norm and ReLU,
// no max-pool; four stages of two Residual units (64, 128, 256, 512
// channels, the later stages halving the resolution with a 1x1 shortcut);
// global average pooling; Flatten; Linear(512, classes).
// 11,175,818 trainable parameters (convolutions with bias) and 7,808
// running-statistic values. The 17 convolutions that feed a batch norm
// leave their bias to it (FoldConvBiasesIntoBatchNorms): the same numbers
// up to rounding, without adding the bias or summing its gradient.
#ifndef RINGLET_NN_MODELS_RESNET_H_
#define RINGLET_NN_MODELS_RESNET_H_

#include <memory>

#include "nn/layers/containers.h"

namespace ringlet::nn {

// d2l's ResNet-18. The biases of the 17 convolutions that feed a batch norm
// are folded into it (FoldConvBiasesIntoBatchNorms): the same numbers, no
// bias add or bias gradient for them.
std::unique_ptr<Sequential> MakeResNet18(int num_classes = 10,
                                         int in_channels = 1);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_MODELS_RESNET_H_
