// Streams: several threads driving one GPU, each on a stream of its own. The
// GPU cases skip, with the runtime's reason, where there is no GPU.
#include "nn/device_stream.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "gpu/device_probe.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/linear.h"
#include "nn/tensor.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::nn {
namespace {

using testing::RandomTensor;

TEST(DeviceStreamTest, ACpuLaneChangesNothing) {
  const DeviceStream stream(Device::Cpu(0));
  const DeviceStream::Use use(stream);
  const Tensor y = Conv2dForward(RandomTensor({1, 1, 4, 4}, 1),
                                 RandomTensor({2, 1, 3, 3}, 2),
                                 RandomTensor({2}, 3), {1, 1});
  stream.Synchronize();
  EXPECT_EQ(y.shape(), (Shape{1, 2, 4, 4}));
}

TEST(DeviceStreamTest, AGpuThatDoesNotExistIsAClearError) {
  const int gpus = gpu::CountCudaDevices();
  try {
    DeviceStream stream(Device::Cuda(gpus));
    FAIL() << "expected a DeviceError for cuda:" << gpus;
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    // "does not exist" with CUDA built in, "needs CUDA" without.
    EXPECT_TRUE(what.find("does not exist") != std::string::npos ||
                what.find("needs CUDA") != std::string::npos)
        << what;
  }
}

class DeviceStreamOnGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  Device gpu_;
};

// One thread's work: a convolution (cuDNN) forward and backward and a
// linear layer (cuBLAS), read back to the host.
std::vector<float> Work(Device device, uint64_t seed) {
  const Tensor x = RandomTensor({4, 3, 9, 9}, seed).To(device);
  const Tensor w = RandomTensor({8, 3, 3, 3}, seed + 1).To(device);
  const Tensor b = RandomTensor({8}, seed + 2).To(device);
  const Conv2dParams params{2, 1};
  const Tensor y = Conv2dForward(x, w, b, params);
  const Conv2dGrads g = Conv2dBackward(x, w, true, y, params);
  const Tensor flat = y.View({4, 8 * 5 * 5});
  const Tensor lw =
      RandomTensor({8 * 5 * 5, 10}, seed + 3).To(device);  // [in, out]
  const Tensor z = LinearForward(flat, lw, RandomTensor({10}, 4).To(device));
  std::vector<float> out;
  for (const Tensor* t : {&y, &g.dx, &g.dw, &g.db, &z}) {
    const Tensor host = t->To(Device::Cpu());
    out.insert(out.end(), host.data(), host.data() + host.numel());
  }
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i])))
        << what << ", value " << i;
  }
}

// The case streams exist for: replicas sharing a GPU, each thread with its
// own cuDNN and cuBLAS handles, working at the same time.
TEST_F(DeviceStreamOnGpuTest, ThreadsOnLanesOfOneGpuWorkAtOnce) {
  constexpr int kThreads = 3, kRounds = 20;
  std::vector<std::vector<float>> want;
  for (int t = 0; t < kThreads; ++t) want.push_back(Work(gpu_, 100 * t));
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        const DeviceStream stream(gpu_);
        const DeviceStream::Use use(stream);
        for (int round = 0; round < kRounds; ++round) {
          const std::vector<float> got = Work(gpu_, 100 * t);
          for (size_t i = 0; i < got.size(); ++i) {
            if (std::fabs(got[i] - want[t][i]) >
                1e-4 * (1 + std::fabs(want[t][i]))) {
              failures[t] = "round " + std::to_string(round) + ", value " +
                            std::to_string(i) + ": " + std::to_string(got[i]) +
                            " vs " + std::to_string(want[t][i]);
              return;
            }
          }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], "") << "thread " << t;
  }
}

// A tensor made on a stream keeps the stream's memory pool alive: it is read
// after the stream (and its binding) are gone.
TEST_F(DeviceStreamOnGpuTest, TensorsOutliveTheirLane) {
  Tensor kept;
  {
    const DeviceStream stream(gpu_);
    const DeviceStream::Use use(stream);
    kept = Tensor({1000}, gpu_);
    kept.Fill(2.5f);
    stream.Synchronize();
  }
  const Tensor host = kept.To(Device::Cpu());
  for (int64_t i = 0; i < host.numel(); ++i) {
    ASSERT_EQ(host.data()[i], 2.5f) << i;
  }
}

TEST_F(DeviceStreamOnGpuTest, WorkAfterTheScopeGoesBackToTheSharedQueue) {
  const std::vector<float> before = Work(gpu_, 7);
  {
    const DeviceStream stream(gpu_);
    const DeviceStream::Use use(stream);
    ExpectNear(Work(gpu_, 7), before, "on the stream");
  }
  ExpectNear(Work(gpu_, 7), before, "after the stream");
}

}  // namespace
}  // namespace ringlet::nn
