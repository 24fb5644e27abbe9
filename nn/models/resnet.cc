#include "nn/models/resnet.h"

namespace ringlet::nn {
namespace {

std::unique_ptr<Sequential> ResnetBlock(int64_t in_channels,
                                        int64_t out_channels, int residuals,
                                        bool first_block) {
  auto block = std::make_unique<Sequential>();
  for (int i = 0; i < residuals; ++i) {
    if (i == 0 && !first_block) {
      block->Add(std::make_unique<Residual>(in_channels, out_channels,
                                            /*use_1x1conv=*/true, 2));
    } else {
      block->Add(
          std::make_unique<Residual>(out_channels, out_channels, false, 1));
    }
  }
  return block;
}

}  // namespace

std::unique_ptr<Sequential> MakeResNet18(int num_classes, int in_channels) {
  auto net = std::make_unique<Sequential>();
  net->Add(std::make_unique<Conv2d>(in_channels, 64, 3, 1, 1));
  net->Add(std::make_unique<BatchNorm2d>(64, /*relu=*/true));
  net->Add(ResnetBlock(64, 64, 2, true), "resnet_block1");
  net->Add(ResnetBlock(64, 128, 2, false), "resnet_block2");
  net->Add(ResnetBlock(128, 256, 2, false), "resnet_block3");
  net->Add(ResnetBlock(256, 512, 2, false), "resnet_block4");
  net->Add(std::make_unique<GlobalAvgPool>(), "global_avg_pool");
  auto fc = std::make_unique<Sequential>();
  fc->Add(std::make_unique<Flatten>());
  fc->Add(std::make_unique<Linear>(512, num_classes));
  net->Add(std::move(fc), "fc");
  // The stem's and every residual unit's convolutions feed batch norms.
  FoldConvBiasesIntoBatchNorms(*net);
  return net;
}

}  // namespace ringlet::nn
