#include "nn/tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/device_probe.h"
#include "nn/gpu_backend.h"
#include "nn/memory_format.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

TEST(Tensor, ZerosWithShape) {
  Tensor t({2, 3, 4});
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.rank(), 3);
  EXPECT_EQ(t.dim(1), 3);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(t.data()[i], 0.0f);
  EXPECT_EQ(t.device(), Device::Cpu());
}

TEST(Tensor, ViewsShareStorageClonesDoNot) {
  Tensor t = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor v = t.View({3, 2});
  v.data()[0] = 9;
  EXPECT_EQ(t.data()[0], 9);
  EXPECT_TRUE(v.SharesStorageWith(t));
  Tensor c = t.Clone();
  c.data()[1] = 7;
  EXPECT_EQ(t.data()[1], 2);
  EXPECT_FALSE(c.SharesStorageWith(t));
}

TEST(Tensor, ViewAtIsAWindowThatKeepsTheStorageAlive) {
  Tensor window;
  {
    Tensor t = Tensor::FromVector({6}, {1, 2, 3, 4, 5, 6});
    window = t.ViewAt(2, {2, 2});
    window.data()[0] = 9;
    EXPECT_EQ(t.data()[2], 9);
    EXPECT_EQ(window.data(), t.data() + 2);
    EXPECT_EQ(t.ViewAt(6, {0}).numel(), 0);
    EXPECT_THROW(t.ViewAt(3, {4}), ShapeError);
    EXPECT_THROW(t.ViewAt(-1, {1}), ShapeError);
    EXPECT_THROW(Tensor().ViewAt(0, {1}), ShapeError);
  }
  // The first tensor's handle is gone; the window still owns the storage.
  EXPECT_EQ(window.data()[3], 6);
}

TEST(Tensor, BadShapesAreNamed) {
  Tensor t({2, 3});
  try {
    t.View({4, 2});
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot view shape [2, 3] as [4, 2]"));
  }
  EXPECT_THROW(Tensor({2, -1}), ShapeError);
  EXPECT_THROW(Tensor::FromVector({2, 2}, {1, 2, 3}), ShapeError);
  try {
    ExpectShape("linear", "input", t, {-1, 4});
    ADD_FAILURE();
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("linear: input has shape [2, 3], expected [*, 4]"));
  }
  EXPECT_NO_THROW(ExpectShape("linear", "input", t, {-1, 3}));
}

// The CUDA library registers nn's GPU backend exactly when the build has
// CUDA (a linker that dropped it would leave GPU builds without GPUs).
TEST(Tensor, TheGpuBackendIsRegisteredInBuildsWithCuda) {
  EXPECT_EQ(RegisteredGpuBackend() != nullptr,
            gpu::ProbeCudaDevices().compiled_with_cuda);
}

// A GPU that is not there: with CUDA in the build the device context says
// so, without it the storage says the build has no CUDA.
TEST(Tensor, AMissingGpuIsAClearError) {
  try {
    Tensor({2}, Device::Cuda(99));
    FAIL() << "expected a DeviceError";
  } catch (const DeviceError& e) {
    const std::string what = e.what();
    EXPECT_NE(
        what.find(RegisteredGpuBackend() != nullptr ? "cuda:99 does not exist"
                                                    : "needs CUDA"),
        std::string::npos)
        << what;
  }
  EXPECT_THROW(Tensor::FromVector({1}, {1.0f}).To(Device::Cuda(99)),
               DeviceError);
  // And cuda:0 itself on a machine without a GPU (every machine here).
  if (gpu::ProbeCudaDevices().usable.empty()) {
    EXPECT_THROW(Tensor({2}, Device::Cuda(0)), DeviceError);
  }
}

TEST(Tensor, CopyElementsMovesARangeAndChecksIt) {
  const Tensor src = Tensor::FromVector({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor dst({8});
  CopyElements(src, 2, dst, 5, 3);  // 3, 4, 5 to the last three places.
  EXPECT_EQ(std::vector<float>(dst.data(), dst.data() + 8),
            (std::vector<float>{0, 0, 0, 0, 0, 3, 4, 5}));
  EXPECT_THROW(CopyElements(src, 4, dst, 0, 3), std::out_of_range);
  EXPECT_THROW(CopyElements(src, 0, dst, 6, 3), std::out_of_range);
  EXPECT_THROW(CopyElements(src, -1, dst, 0, 1), std::out_of_range);
  std::vector<float> back(6, 0.0f);
  CopyToHost(src, back.data());
  EXPECT_EQ(back, (std::vector<float>{1, 2, 3, 4, 5, 6}));
  const std::vector<float> in = {9, 8, 7, 6, 5, 4};
  Tensor t({6});
  CopyFromHost(in.data(), t);
  EXPECT_EQ(std::vector<float>(t.data(), t.data() + 6), in);
}

TEST(Tensor, Bf16TensorsHoldHalfTheBytesAndConvert) {
  const Tensor f = Tensor::FromVector(
      {2, 3}, {1, -2.5f, 3.0f + 1.0f / 256, 0.1f, 65504, -0.0f});
  const Tensor b = f.To(DType::kBFloat16);
  EXPECT_EQ(b.dtype(), DType::kBFloat16);
  EXPECT_EQ(b.shape(), f.shape());
  EXPECT_EQ(b.nbytes(), 12);
  EXPECT_EQ(f.nbytes(), 24);
  EXPECT_TRUE(f.To(DType::kFloat32).SharesStorageWith(f));
  const Tensor back = b.To(DType::kFloat32);
  const std::vector<float> got(back.data(), back.data() + 6);
  // 3 + 2^-8 lies a quarter of the way from 3 to bfloat16's next value.
  EXPECT_EQ(got, (std::vector<float>{1, -2.5f, 3, 0.10009765625f, 65536, 0}));
  EXPECT_EQ(back.data()[5], 0.0f);
  // Views, clones, copies and fills work in elements of the type.
  const Tensor tail = b.ViewAt(3, {3});
  EXPECT_EQ(tail.bf16_data(), b.bf16_data() + 3);
  Tensor copy({4}, Device::Cpu(), DType::kBFloat16);
  CopyElements(b, 1, copy, 0, 2);
  EXPECT_EQ(copy.bf16_data()[0], b.bf16_data()[1]);
  EXPECT_EQ(copy.bf16_data()[3], 0);
  const Tensor clone = b.Clone();
  EXPECT_FALSE(clone.SharesStorageWith(b));
  EXPECT_EQ(clone.bf16_data()[2], b.bf16_data()[2]);
  copy.Fill(1.0f);
  EXPECT_EQ(copy.To(DType::kFloat32).data()[3], 1.0f);
}

// A float32 reader of bfloat16 storage (and the other way) is an error
// that says how to convert, not a reinterpretation of the bits.
TEST(Tensor, ReadingAsTheWrongTypeIsAClearError) {
  Tensor b({4}, Device::Cpu(), DType::kBFloat16);
  try {
    b.data();
    FAIL() << "data() read bfloat16 storage as float32";
  } catch (const DTypeError& e) {
    EXPECT_NE(std::string(e.what()).find("a bfloat16 tensor (shape [4]) was "
                                         "read as float32; convert it with "
                                         "To(DType::kFloat32)"),
              std::string::npos)
        << e.what();
  }
  Tensor f({4});
  EXPECT_THROW(f.bf16_data(), DTypeError);
  EXPECT_THROW(CopyElements(f, 0, b, 0, 1), DTypeError);
  std::vector<float> host(4);
  EXPECT_THROW(CopyToHost(b, host.data()), DTypeError);
  EXPECT_THROW(CopyFromHost(host.data(), b), DTypeError);
}

// [N, C, H, W] values 0, 1, 2, ... in NCHW order.
Tensor Iota(const Shape& shape) {
  std::vector<float> values(NumElements(shape));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return Tensor::FromVector(shape, values);
}

// Channels-last storage is NHWC: element (n, c, h, w) at ((n H + h) W + w)
// C + c; converting back restores NCHW exactly, in both types.
TEST(MemoryFormat, ChannelsLastStoresAPixelsChannelsSideBySide) {
  const Shape shape = {2, 3, 4, 5};
  const Tensor nchw = Iota(shape);
  const Tensor nhwc = nchw.ToMemoryFormat(MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.shape(), shape);
  EXPECT_TRUE(nhwc.StoredChannelsLast());
  EXPECT_FALSE(nhwc.SharesStorageWith(nchw));
  for (int64_t n = 0; n < 2; ++n) {
    for (int64_t c = 0; c < 3; ++c) {
      for (int64_t h = 0; h < 4; ++h) {
        for (int64_t w = 0; w < 5; ++w) {
          ASSERT_EQ(nhwc.data()[((n * 4 + h) * 5 + w) * 3 + c],
                    nchw.data()[((n * 3 + c) * 4 + h) * 5 + w]);
        }
      }
    }
  }
  const Tensor back = nhwc.ToMemoryFormat(MemoryFormat::kContiguous);
  EXPECT_EQ(back.memory_format(), MemoryFormat::kContiguous);
  EXPECT_EQ(std::vector<float>(back.data(), back.data() + back.numel()),
            std::vector<float>(nchw.data(), nchw.data() + nchw.numel()));
  EXPECT_TRUE(
      nhwc.ToMemoryFormat(MemoryFormat::kChannelsLast).SharesStorageWith(nhwc));

  const Tensor b = nchw.To(DType::kBFloat16);
  const Tensor b_last = b.ToMemoryFormat(MemoryFormat::kChannelsLast);
  EXPECT_EQ(b_last.dtype(), DType::kBFloat16);
  EXPECT_EQ(b_last.bf16_data()[1], b.bf16_data()[20]);  // (0,1,0,0).
  const Tensor b_back = b_last.ToMemoryFormat(MemoryFormat::kContiguous);
  EXPECT_EQ(std::vector<uint16_t>(b_back.bf16_data(), b_back.bf16_data() + 120),
            std::vector<uint16_t>(b.bf16_data(), b.bf16_data() + 120));
}

// Tiles of 32 with ragged edges and more images than one pass.
TEST(MemoryFormat, LargeAndRaggedShapesRoundTrip) {
  const Shape shape = {3, 70, 9, 11};
  const Tensor nchw = Iota(shape);
  const Tensor nhwc = nchw.ToMemoryFormat(MemoryFormat::kChannelsLast);
  // Image 0, channel 69, the last pixel (98).
  EXPECT_EQ(nhwc.data()[98 * 70 + 69], nchw.data()[69 * 99 + 98]);
  const Tensor back = nhwc.ToMemoryFormat(MemoryFormat::kContiguous);
  EXPECT_EQ(std::vector<float>(back.data(), back.data() + back.numel()),
            std::vector<float>(nchw.data(), nchw.data() + nchw.numel()));
}

// One channel, or one pixel: the two orders are the same bytes, so the
// conversion is a relabel sharing storage, and views work.
TEST(MemoryFormat, WhereOrdersAgreeTheStorageIsShared) {
  const Tensor gray = Iota({4, 1, 28, 28});
  const Tensor gray_last = gray.ToMemoryFormat(MemoryFormat::kChannelsLast);
  EXPECT_TRUE(gray_last.SharesStorageWith(gray));
  EXPECT_EQ(gray_last.memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_FALSE(gray_last.StoredChannelsLast());
  const Tensor pooled =
      Iota({4, 8, 1, 1}).ToMemoryFormat(MemoryFormat::kChannelsLast);
  const Tensor flat = pooled.View({4, 8});
  EXPECT_EQ(flat.memory_format(), MemoryFormat::kContiguous);
  EXPECT_EQ(flat.data()[9], 9.0f);
}

// Code that reads the flat storage cannot mistake NHWC for NCHW: views
// refuse, copies to and from the host speak NCHW, CPU ops refuse.
TEST(MemoryFormat, ChannelsLastIsNeverReadAsNchw) {
  const Tensor nchw = Iota({2, 3, 2, 2});
  Tensor nhwc = nchw.ToMemoryFormat(MemoryFormat::kChannelsLast);
  try {
    nhwc.View({2, 12});
    FAIL() << "a channels-last view";
  } catch (const ShapeError& e) {
    EXPECT_THAT(e.what(), HasSubstr("view as [2, 12]: the channels-last tensor "
                                    "of shape [2, 3, 2, 2]"));
    EXPECT_THAT(e.what(),
                HasSubstr("ToMemoryFormat(MemoryFormat::kContiguous)"));
  }
  EXPECT_THROW(nhwc.ViewAt(0, {4}), ShapeError);
  std::vector<float> host(24);
  CopyToHost(nhwc, host.data());
  EXPECT_EQ(host, std::vector<float>(nchw.data(), nchw.data() + 24));
  std::vector<float> reversed(host.rbegin(), host.rend());
  CopyFromHost(reversed.data(), nhwc);
  CopyToHost(nhwc, host.data());
  EXPECT_EQ(host, reversed);
  EXPECT_THROW(CopyFromHostAsync(reversed.data(), nhwc), ShapeError);
  EXPECT_EQ(nhwc.Clone().memory_format(), MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.To(DType::kBFloat16).memory_format(),
            MemoryFormat::kChannelsLast);
  EXPECT_EQ(nhwc.To(Device::Cpu(1)).memory_format(),
            MemoryFormat::kChannelsLast);
  EXPECT_THROW(Tensor({6}).ToMemoryFormat(MemoryFormat::kChannelsLast),
               ShapeError);
  EXPECT_THROW(Tensor::Uninitialized({6}, Device::Cpu(), DType::kFloat32,
                                     MemoryFormat::kChannelsLast),
               ShapeError);
}

TEST(MemoryFormat, LayoutNamesParse) {
  EXPECT_EQ(ParseLayout("nhwc"), MemoryFormat::kChannelsLast);
  EXPECT_EQ(ParseLayout("nchw"), MemoryFormat::kContiguous);
  EXPECT_STREQ(LayoutName(MemoryFormat::kChannelsLast), "nhwc");
  EXPECT_STREQ(ToString(MemoryFormat::kChannelsLast), "channels-last");
  try {
    ParseLayout("NHWC");
    FAIL() << "an unknown layout";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("use nchw or nhwc"));
  }
}

class CudaTensorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
    if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
    gpu_ = Device::Cuda(report.usable[0]);
  }
  static std::vector<float> Values(const Tensor& t) {
    const Tensor host = t.To(Device::Cpu());
    return std::vector<float>(host.data(), host.data() + host.numel());
  }
  Device gpu_;
};

TEST_F(CudaTensorTest, ValuesSurviveTheRoundTrip) {
  const std::vector<float> values = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  const Tensor host = Tensor::FromVector({2, 3}, values);
  const Tensor gpu = host.To(gpu_);
  EXPECT_EQ(gpu.device(), gpu_);
  EXPECT_EQ(gpu.shape(), host.shape());
  EXPECT_EQ(Values(gpu), values);
  EXPECT_EQ(Values(gpu.Clone()), values);
  EXPECT_FALSE(gpu.Clone().SharesStorageWith(gpu));
  EXPECT_TRUE(gpu.To(gpu_).SharesStorageWith(gpu));
}

// Host code cannot read device memory by mistake: data() says so, naming
// the device and the way out; device_data() is for GPU code.
TEST_F(CudaTensorTest, HostAccessToGpuStorageIsAClearError) {
  Tensor t({3, 4}, gpu_);
  try {
    t.data();
    FAIL() << "data() handed out a device pointer";
  } catch (const DeviceError& e) {
    EXPECT_NE(std::string(e.what()).find(ToString(gpu_)), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("To(Device::Cpu())"),
              std::string::npos);
  }
  EXPECT_NE(t.device_data(), nullptr);
  const Tensor host({2});
  EXPECT_EQ(host.data(), host.device_data());  // The same on a CPU.
}

TEST_F(CudaTensorTest, CopyElementsAndHostCopiesOnTheGpu) {
  const Tensor src = Tensor::FromVector({6}, {1, 2, 3, 4, 5, 6}).To(gpu_);
  Tensor dst({8}, gpu_);
  CopyElements(src, 2, dst, 5, 3);
  EXPECT_EQ(Values(dst), (std::vector<float>{0, 0, 0, 0, 0, 3, 4, 5}));
  Tensor host({8});
  EXPECT_THROW(CopyElements(src, 0, host, 0, 1), DeviceError);
  const std::vector<float> in = {9, 8, 7, 6, 5, 4, 3, 2};
  CopyFromHost(in.data(), dst);
  std::vector<float> out(8, 0.0f);
  CopyToHost(dst, out.data());
  EXPECT_EQ(out, in);
}

// The GPU's conversions are the CPU's, bit for bit (both round to nearest
// even), and bfloat16 storage moves between host and device unchanged.
TEST_F(CudaTensorTest, Bf16ConvertsAsOnTheCpu) {
  std::vector<float> values(1003);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = std::ldexp(static_cast<float>(i) - 500.0f, -7) / 3.0f;
  }
  const Tensor host = Tensor::FromVector({1003}, values);
  const Tensor on_cpu = host.To(DType::kBFloat16);
  const Tensor on_gpu = host.To(gpu_).To(DType::kBFloat16);
  EXPECT_EQ(on_gpu.dtype(), DType::kBFloat16);
  const Tensor gpu_bits = on_gpu.To(Device::Cpu());
  EXPECT_EQ(
      std::vector<uint16_t>(gpu_bits.bf16_data(), gpu_bits.bf16_data() + 1003),
      std::vector<uint16_t>(on_cpu.bf16_data(), on_cpu.bf16_data() + 1003));
  EXPECT_EQ(Values(on_gpu.To(DType::kFloat32)),
            Values(on_cpu.To(DType::kFloat32)));
  Tensor filled({5}, gpu_, DType::kBFloat16);
  EXPECT_EQ(Values(filled.To(DType::kFloat32)), std::vector<float>(5, 0.0f));
  filled.Fill(-3.0f);
  EXPECT_EQ(Values(filled.To(DType::kFloat32)), std::vector<float>(5, -3.0f));
  Tensor window({3}, gpu_, DType::kBFloat16);
  CopyElements(on_gpu, 10, window, 0, 3);
  const Tensor window_host = window.To(Device::Cpu());
  EXPECT_EQ(window_host.bf16_data()[2], on_cpu.bf16_data()[12]);
}

// The GPU's transpose kernel against the host's, both ways, both types,
// on shapes with ragged tiles and more images than a grid's z extent
// covers in one pass is too large to test here (it loops).
TEST_F(CudaTensorTest, MemoryFormatConversionsMatchTheHost) {
  for (const Shape& shape : {Shape{2, 3, 4, 5}, Shape{3, 70, 9, 11},
                             Shape{5, 64, 28, 28}, Shape{1, 33, 1, 65}}) {
    const Tensor nchw = Iota(shape);
    const Tensor on_host = nchw.ToMemoryFormat(MemoryFormat::kChannelsLast);
    for (const DType dtype : {DType::kFloat32, DType::kBFloat16}) {
      const Tensor on_gpu =
          nchw.To(dtype).To(gpu_).ToMemoryFormat(MemoryFormat::kChannelsLast);
      EXPECT_EQ(on_gpu.memory_format(), MemoryFormat::kChannelsLast);
      const Tensor stored = on_gpu.To(DType::kFloat32).To(Device::Cpu());
      ASSERT_EQ(stored.memory_format(), MemoryFormat::kChannelsLast);
      const Tensor want = on_host.To(dtype).To(DType::kFloat32);
      EXPECT_EQ(std::vector<float>(stored.data(), stored.data() + want.numel()),
                std::vector<float>(want.data(), want.data() + want.numel()))
          << ToString(shape) << " " << ToString(dtype);
      const Tensor back =
          on_gpu.ToMemoryFormat(MemoryFormat::kContiguous).To(DType::kFloat32);
      EXPECT_EQ(Values(back), Values(nchw.To(dtype).To(DType::kFloat32)))
          << ToString(shape) << " " << ToString(dtype);
    }
  }
}

TEST_F(CudaTensorTest, NewTensorsAreZerosAndFillWrites) {
  Tensor t({1000}, gpu_);
  EXPECT_EQ(Values(t), std::vector<float>(1000, 0.0f));
  t.Fill(4.5f);
  EXPECT_EQ(Values(t), std::vector<float>(1000, 4.5f));
  EXPECT_TRUE(Tensor({0}, gpu_).defined());
}

}  // namespace
}  // namespace ringlet::nn

namespace ringlet::nn {
namespace {

// Kernels' results must not depend on where a tensor happens to sit.
TEST(Tensor, StorageIs64ByteAligned) {
  for (int64_t n : {1, 3, 17, 1000, 1 << 20}) {
    for (const Tensor& t : {Tensor({n}), Tensor::Uninitialized({n}),
                            Tensor::FromVector({2}, {1.0f, 2.0f})}) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data()) % 64, 0u) << n;
    }
  }
}

}  // namespace
}  // namespace ringlet::nn
