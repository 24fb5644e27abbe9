// Every layer's Forward and Backward on a GPU against the CPU, one layer at
// a time (the op-level contracts in //nn/ops/cuda do not cover the layers'
// own bookkeeping: the first GPU run found BatchNorm2d's backward asking for
// a cache only the CPU forward filled), and ResNet-18 walked unit by unit,
// printing where the GPU first departs from the CPU. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/layers/containers.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"
#include "nn/models/resnet.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::RandomTensor;

// max |gpu - cpu| / max |cpu|, the GPU tensor read back first.
double RelativeDifference(const Tensor& gpu, const Tensor& cpu) {
  const Tensor host = gpu.To(Device::Cpu());
  if (host.shape() != cpu.shape()) return INFINITY;
  double largest = 0, worst = 0;
  for (int64_t i = 0; i < cpu.numel(); ++i) {
    largest = std::max(largest, std::abs(double{cpu.data()[i]}));
    worst = std::max(worst,
                     std::abs(double{host.data()[i]} - double{cpu.data()[i]}));
  }
  return largest > 0 ? worst / largest : worst;
}

class LayersOnCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // RINGLET_GPU_TEST_ON_CPU=1 runs the harness CPU against CPU (every
    // difference 0), so the comparisons themselves are tested without a GPU.
    const char* on_cpu = std::getenv("RINGLET_GPU_TEST_ON_CPU");
    if (on_cpu != nullptr && std::string(on_cpu) == "1") {
      gpu_ = Device::Cpu();
      return;
    }
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }

  // Builds the layer twice with the same initial values, moves one to the
  // GPU, runs Forward and Backward on both with the same input and output
  // gradient, and compares the output, the input gradient, every parameter
  // gradient and every buffer (batch norm's running statistics).
  void CompareLayer(const std::string& what,
                    const std::function<std::unique_ptr<Module>()>& make,
                    const Shape& input_shape, double tolerance = 1e-4) {
    std::unique_ptr<Module> cpu = make(), gpu = make();
    InitParameters(*cpu, InitScheme::kKaimingNormal, 5);
    InitParameters(*gpu, InitScheme::kKaimingNormal, 5);
    gpu->To(gpu_);
    const Tensor x = RandomTensor(input_shape, 6, -1.0f, 1.0f);
    const Tensor y_cpu = cpu->Forward(x);
    const Tensor y_gpu = gpu->Forward(x.To(gpu_));
    EXPECT_LE(RelativeDifference(y_gpu, y_cpu), tolerance) << what << " output";
    const Tensor dy = RandomTensor(y_cpu.shape(), 7, -1.0f, 1.0f);
    const Tensor dx_cpu = cpu->Backward(dy);
    const Tensor dx_gpu = gpu->Backward(dy.To(gpu_));
    EXPECT_LE(RelativeDifference(dx_gpu, dx_cpu), tolerance) << what << " dx";
    const std::vector<Parameter*> pc = cpu->Parameters(),
                                  pg = gpu->Parameters();
    ASSERT_EQ(pc.size(), pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      EXPECT_LE(RelativeDifference(pg[i]->grad, pc[i]->grad), tolerance)
          << what << " gradient of " << pc[i]->name;
    }
    const std::vector<Buffer*> bc = cpu->Buffers(), bg = gpu->Buffers();
    for (size_t i = 0; i < bc.size(); ++i) {
      EXPECT_LE(RelativeDifference(bg[i]->value, bc[i]->value), tolerance)
          << what << " buffer " << bc[i]->name;
    }
  }

  Device gpu_;
};

TEST_F(LayersOnCudaTest, ConvolutionsIncludingOddSizesAndStrideTwo) {
  CompareLayer("conv 3x3",
               [] { return std::make_unique<Conv2d>(3, 8, 3, 1, 1); },
               {4, 3, 9, 9});
  // ResNet-18's late layers: stride 2 on odd sizes, and the 1x1 shortcut.
  CompareLayer("conv 3x3 stride 2 on 7x7",
               [] { return std::make_unique<Conv2d>(8, 16, 3, 2, 1); },
               {4, 8, 7, 7});
  CompareLayer("conv 1x1 stride 2 on 7x7",
               [] { return std::make_unique<Conv2d>(8, 16, 1, 2, 0); },
               {4, 8, 7, 7});
  CompareLayer("conv without bias",
               [] { return std::make_unique<Conv2d>(4, 4, 3, 1, 1, false); },
               {2, 4, 5, 5});
}

TEST_F(LayersOnCudaTest, BatchNormInTrainingMode) {
  CompareLayer("batch norm", [] { return std::make_unique<BatchNorm2d>(6); },
               {8, 6, 5, 5});
  CompareLayer("batch norm on 1x1 maps",
               [] { return std::make_unique<BatchNorm2d>(16); }, {8, 16, 1, 1});
}

TEST_F(LayersOnCudaTest, ActivationsPoolingAndLinear) {
  CompareLayer("relu", [] { return std::make_unique<ReLU>(); }, {4, 3, 6, 6});
  CompareLayer("avg pool", [] { return std::make_unique<AvgPool2d>(2, 2); },
               {4, 3, 8, 8});
  CompareLayer("global avg pool",
               [] { return std::make_unique<GlobalAvgPool>(); }, {4, 5, 7, 7});
  CompareLayer("linear", [] { return std::make_unique<Linear>(20, 10); },
               {8, 20});
  CompareLayer("flatten", [] { return std::make_unique<Flatten>(); },
               {4, 2, 3, 3});
}

TEST_F(LayersOnCudaTest, ResidualUnitsWithAndWithoutTheShortcut) {
  CompareLayer("residual",
               [] { return std::make_unique<Residual>(8, 8, false, 1); },
               {4, 8, 7, 7});
  CompareLayer("residual 1x1 stride 2 on 7x7",
               [] { return std::make_unique<Residual>(8, 16, true, 2); },
               {4, 8, 7, 7});
}

// The leaves of nested Sequentials, in order (Residual units stay whole).
std::vector<Module*> Units(Module& root) {
  std::vector<Module*> out;
  for (Module* child : root.Children()) {
    if (child->kind() == "sequential") {
      for (Module* m : Units(*child)) out.push_back(m);
    } else {
      out.push_back(child);
    }
  }
  return out;
}

// ResNet-18 unit by unit: each unit's output forward, then each unit's
// input gradient and parameter gradients backward, printed as a table so a
// GPU run shows where the two first part. The bound is loose (1e-3): a
// deep network amplifies float32 rounding; the table is the finding.
TEST_F(LayersOnCudaTest, ResNet18UnitByUnit) {
  auto cpu = MakeResNet18();
  auto gpu = MakeResNet18();
  InitParameters(*cpu, InitScheme::kNormal001, 3);
  InitParameters(*gpu, InitScheme::kNormal001, 3);
  gpu->To(gpu_);
  const std::vector<Module*> cc = Units(*cpu), gc = Units(*gpu);
  // Full names ("resnet_block3.0.conv1.weight"), read before a unit's own
  // Parameters() names them relative to the unit.
  std::map<const Parameter*, std::string> full_name;
  for (const Parameter* p : cpu->Parameters()) full_name[p] = p->name;
  ASSERT_EQ(cc.size(), gc.size());
  Tensor x_cpu = RandomTensor({8, 1, 28, 28}, 4, 0.0f, 1.0f);
  Tensor x_gpu = x_cpu.To(gpu_);
  std::printf("%-4s %-16s %-30s %10s %10s %10s\n", "#", "kind",
              "first parameter", "output", "dx", "worst grad");
  std::vector<double> forward(cc.size());
  for (size_t i = 0; i < cc.size(); ++i) {
    x_cpu = cc[i]->Forward(x_cpu);
    x_gpu = gc[i]->Forward(x_gpu);
    forward[i] = RelativeDifference(x_gpu, x_cpu);
  }
  // The walk is the model: a third copy's whole Forward gives the same
  // output as the units one by one.
  auto whole = MakeResNet18();
  InitParameters(*whole, InitScheme::kNormal001, 3);
  EXPECT_EQ(
      RelativeDifference(
          whole->Forward(RandomTensor({8, 1, 28, 28}, 4, 0.0f, 1.0f)), x_cpu),
      0.0)
      << "walking the units differs from the model's Forward";
  Tensor dy_cpu = RandomTensor(x_cpu.shape(), 9, -1.0f, 1.0f);
  Tensor dy_gpu = dy_cpu.To(gpu_);
  bool all_close = true;
  for (size_t k = cc.size(); k-- > 0;) {
    dy_cpu = cc[k]->Backward(dy_cpu);
    dy_gpu = gc[k]->Backward(dy_gpu);
    const double dx = RelativeDifference(dy_gpu, dy_cpu);
    double worst_grad = 0;
    const std::vector<Parameter*> pc = cc[k]->Parameters(),
                                  pg = gc[k]->Parameters();
    for (size_t p = 0; p < pc.size(); ++p) {
      worst_grad =
          std::max(worst_grad, RelativeDifference(pg[p]->grad, pc[p]->grad));
    }
    std::printf("%-4zu %-16s %-30s %10.3g %10.3g %10.3g\n", k,
                cc[k]->kind().c_str(),
                pc.empty() ? "-" : full_name[pc[0]].c_str(), forward[k], dx,
                worst_grad);
    all_close =
        all_close && forward[k] <= 1e-3 && dx <= 1e-3 && worst_grad <= 1e-3;
  }
  EXPECT_TRUE(all_close) << "see the table above for the first unit that "
                            "departs";
}

}  // namespace
}  // namespace ringlet::nn
