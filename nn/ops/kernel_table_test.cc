// The dispatch: every op's table holds a CPU kernel, and a CUDA kernel
// exactly when the build has CUDA (so a CUDA library that is not linked
// whole, and so never registers, fails here); a missing kernel is a clear
// error naming the op and the device.
#include "nn/ops/kernel_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "nn/ops/activation.h"
#include "nn/ops/autocast.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/linear.h"
#include "nn/ops/loss.h"
#include "nn/ops/non_finite.h"
#include "nn/ops/optimizer_updates.h"
#include "nn/ops/pooling.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

// Each table's op name and whether it has each device type's kernel.
struct Entry {
  const char* op;
  bool cpu, cuda;
};

template <typename Fn>
Entry Of(const KernelTable<Fn>& table) {
  return {table.op(), table.Has(DeviceType::kCpu),
          table.Has(DeviceType::kCuda)};
}

TEST(KernelTable, EveryOpHasACpuKernelAndACudaOneExactlyWhenBuilt) {
  const Entry entries[] = {
      Of(kernels::relu_forward),
      Of(kernels::relu_backward),
      Of(kernels::add),
      Of(kernels::add_in_place),
      Of(kernels::add_relu_in_place),
      Of(kernels::add_scaled_in_place),
      Of(kernels::divide_in_place),
      Of(kernels::scale_in_place),
      Of(kernels::sum_of_squares),
      Of(kernels::zero_all),
      Of(kernels::count_non_finite),
      Of(kernels::conv2d_forward),
      Of(kernels::conv2d_backward),
      Of(kernels::conv2d_compute_weight),
      Of(kernels::linear_forward),
      Of(kernels::linear_backward),
      Of(kernels::avg_pool2d_forward),
      Of(kernels::avg_pool2d_backward),
      Of(kernels::global_avg_pool_forward),
      Of(kernels::global_avg_pool_backward),
      Of(kernels::batch_norm2d_train_forward),
      Of(kernels::batch_norm2d_eval_forward),
      Of(kernels::batch_norm2d_backward),
      Of(kernels::softmax_cross_entropy),
      Of(kernels::sgd_update),
      Of(kernels::sgd_update_all),
      Of(kernels::adam_update_all),
      Of(kernels::as_dtype),
  };
  for (const Entry& e : entries) {
    EXPECT_TRUE(e.cpu) << e.op << " has no CPU kernel";
    EXPECT_EQ(e.cuda, RINGLET_EXPECT_CUDA == 1)
        << e.op << (e.cuda ? " has" : " has no") << " CUDA kernel";
  }
}

Tensor Negate(const Tensor& x) {
  Tensor y = x.Clone();
  for (int64_t i = 0; i < y.numel(); ++i) y.data()[i] = -y.data()[i];
  return y;
}

TEST(KernelTable, CallsTheKernelOfTheDevicesType) {
  KernelTable<Tensor(const Tensor&)> table("negate");
  EXPECT_FALSE(table.Has(DeviceType::kCpu));
  table.Register(DeviceType::kCpu, Negate);
  Tensor x({2}, Device::Cpu(1));
  x.data()[0] = 1.0f;
  x.data()[1] = -2.0f;
  const Tensor y = table.For(x.device())(x);
  EXPECT_EQ(y.data()[0], -1.0f);
  EXPECT_EQ(y.data()[1], 2.0f);
  try {
    table.For(Device::Cuda(0));
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("negate on cuda:0"));
  }
}

TEST(KernelTable, ABuildWithoutCudaNamesTheOpAndWhatToDo) {
  if (RINGLET_EXPECT_CUDA == 1) GTEST_SKIP() << "this build has CUDA";
  try {
    kernels::relu_forward.For(Device::Cuda(0));
    FAIL() << "a build without CUDA registered a CUDA kernel";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), HasSubstr("relu on cuda:0: nn's GPU ops are not in "
                                    "this build"));
  }
}

TEST(KernelTable, CpuTensorsRunTheCpuKernels) {
  Tensor x({2}, Device::Cpu());
  x.data()[0] = -1.0f;
  x.data()[1] = 2.0f;
  const Tensor y = ReluForward(x);
  EXPECT_EQ(y.data()[0], 0.0f);
  EXPECT_EQ(y.data()[1], 2.0f);
}

}  // namespace
}  // namespace ringlet::nn
