// The C++ half of state_file_interop_test.py: a small model of nn's layers
// (the Python side builds the same one in PyTorch), in evaluation mode.
//   state_file_interop write DIR  its state to DIR/model.safetensors, and
//                                 a fixed input and its output to
//                                 DIR/io.safetensors
//   state_file_interop read DIR   loads DIR/torch.safetensors (PyTorch's
//                                 state_dict), writes its output on the
//                                 same input to DIR/back.safetensors
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "data/safetensors.h"
#include "nn/layers/containers.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "nn/state_file.h"

namespace nn = ringlet::nn;
namespace data = ringlet::data;

namespace {

std::unique_ptr<nn::Sequential> Model() {
  auto net = std::make_unique<nn::Sequential>();
  net->Add(std::make_unique<nn::Conv2d>(1, 2, 3, 1, 1));
  net->Add(std::make_unique<nn::BatchNorm2d>(2));
  net->Add(std::make_unique<nn::GlobalAvgPool>());
  net->Add(std::make_unique<nn::Linear>(2, 3));
  nn::InitParameters(*net, nn::InitScheme::kKaimingNormal, 1);
  for (nn::Buffer* b : net->Buffers()) {  // Statistics not at their start.
    for (int64_t i = 0; i < b->value.numel(); ++i) {
      b->value.data()[i] = 0.25f + 0.5f * static_cast<float>(i);
    }
  }
  net->SetTraining(false);
  return net;
}

data::Array ArrayOf(const nn::Tensor& t) {
  data::Array a;
  a.type = data::ElementType::kFloat32;
  a.dims.assign(t.shape().begin(), t.shape().end());
  const auto* bytes = reinterpret_cast<const uint8_t*>(t.data());
  a.bytes.assign(bytes, bytes + t.numel() * sizeof(float));
  return a;
}

void Write(const std::string& path, const data::SafetensorsFile& file) {
  const std::string bytes = data::EncodeSafetensors(file);
  std::ofstream(path, std::ios::binary).write(bytes.data(), bytes.size());
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 3) {
    std::fprintf(stderr, "usage: state_file_interop write|read DIR\n");
    return 2;
  }
  const std::string mode = argv[1], dir = argv[2];
  std::vector<float> x(2 * 1 * 5 * 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * (i % 7) - 0.3f;
  const nn::Tensor input = nn::Tensor::FromVector({2, 1, 5, 5}, x);
  auto net = Model();
  if (mode == "write") {
    nn::SaveStateFile(*net, dir + "/model.safetensors");
    Write(dir + "/io.safetensors", {{{"input", ArrayOf(input)},
                                     {"output", ArrayOf(net->Forward(input))}},
                                    {}});
  } else {
    nn::LoadStateFile(*net, dir + "/torch.safetensors");
    Write(dir + "/back.safetensors",
          {{{"output", ArrayOf(net->Forward(input))}}, {}});
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "state_file_interop: %s\n", e.what());
  return 1;
}
