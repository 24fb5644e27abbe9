#include "nn/state_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/safetensors.h"
#include "gpu/device_probe.h"
#include "nn/layers/containers.h"
#include "nn/layers/init.h"
#include "nn/layers/layers.h"

namespace ringlet::nn {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Sequential> Model(uint64_t seed) {
  auto net = std::make_unique<Sequential>();
  net->Add(std::make_unique<Conv2d>(1, 2, 3, 1, 1));
  net->Add(std::make_unique<BatchNorm2d>(2));
  net->Add(std::make_unique<GlobalAvgPool>());
  net->Add(std::make_unique<Linear>(2, 3));
  InitParameters(*net, InitScheme::kKaimingNormal, seed);
  for (Buffer* b : net->Buffers()) {  // Statistics not at their start.
    for (int64_t i = 0; i < b->value.numel(); ++i) {
      b->value.data()[i] = 0.5f + static_cast<float>(seed % 7) + i;
    }
  }
  return net;
}

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::vector<float> Values(const Tensor& t) {
  const Tensor host = t.To(Device::Cpu());
  return std::vector<float>(host.data(), host.data() + host.numel());
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// PyTorch's names and layouts: Linear's weight [out, in], batch norm's
// weight and bias, and its count; a model loaded from the file holds the
// same state.
TEST(StateFile, WritesPyTorchsStateDictAndLoadsItBack) {
  auto saved = Model(1);
  const std::string path = TempPath("model.safetensors");
  SaveStateFile(*saved, path, {{"format", "pt"}});
  const data::SafetensorsFile file = data::ReadSafetensors(path);
  EXPECT_EQ(file.metadata.at("format"), "pt");
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& [name, array] : file.tensors) dims[name] = array.dims;
  const std::map<std::string, std::vector<int64_t>> want = {
      {"0.weight", {2, 1, 3, 3}},
      {"0.bias", {2}},
      {"1.weight", {2}},
      {"1.bias", {2}},
      {"1.running_mean", {2}},
      {"1.running_var", {2}},
      {"1.num_batches_tracked", {}},
      {"3.weight", {3, 2}},
      {"3.bias", {3}}};
  EXPECT_EQ(dims, want);
  // [in, out] here, [out, in] there.
  const Tensor& w = saved->Parameters()[4]->value;
  ASSERT_EQ(w.shape(), (Shape{2, 3}));
  const std::map<std::string, data::Array> arrays = data::ArraysByName(file);
  const data::Array& fc = arrays.at("3.weight");
  const float* stored = reinterpret_cast<const float*>(fc.bytes.data());
  EXPECT_EQ(stored[1 * 2 + 0], w.data()[0 * 3 + 1]);

  auto loaded = Model(2);
  LoadStateFile(*loaded, path);
  const std::vector<Parameter*> a = saved->Parameters(),
                                b = loaded->Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(Values(b[i]->value), Values(a[i]->value)) << a[i]->name;
  }
  const std::vector<Buffer*> x = saved->Buffers(), y = loaded->Buffers();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(Values(y[i]->value), Values(x[i]->value)) << x[i]->name;
  }
}

// As load_state_dict(strict=True): a missing, misshapen or unknown tensor
// is an error, and nothing is loaded.
TEST(StateFile, LoadingIsStrictAndAllOrNothing) {
  auto saved = Model(1);
  const std::string path = TempPath("strict.safetensors");
  SaveStateFile(*saved, path);
  data::SafetensorsFile file = data::ReadSafetensors(path);
  auto write = [&](const data::SafetensorsFile& f) {
    data::SafetensorsFile copy = f;
    const std::string bytes = data::EncodeSafetensors(copy);
    FILE* out = std::fopen(path.c_str(), "wb");
    std::fwrite(bytes.data(), 1, bytes.size(), out);
    std::fclose(out);
  };
  auto target = Model(3);
  const std::vector<float> before = Values(target->Parameters()[0]->value);
  auto error = [&]() -> std::string {
    try {
      LoadStateFile(*target, path);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  data::SafetensorsFile missing = file;
  missing.tensors.pop_back();  // In name order: 3.weight.
  write(missing);
  EXPECT_THAT(error(), HasSubstr("no tensor 3.weight (the model holds it)"));
  data::SafetensorsFile extra = file;
  extra.tensors.push_back(extra.tensors.front());
  extra.tensors.back().first = "4.weight";
  write(extra);
  EXPECT_THAT(error(), HasSubstr("tensor 4.weight is not the model's"));
  data::SafetensorsFile misshapen = file;
  for (auto& [name, array] : misshapen.tensors) {
    if (name == "3.weight") array.dims = {2, 3};
  }
  write(misshapen);
  EXPECT_THAT(error(), HasSubstr("tensor 3.weight is float32 [2, 3]; the "
                                 "model holds float32 [3, 2]"));
  EXPECT_EQ(Values(target->Parameters()[0]->value), before);
}

}  // namespace
}  // namespace ringlet::nn

namespace ringlet::nn {
namespace {

// A model on a GPU writes the CPU's file byte for byte, and loads a file
// into its device tensors. Skipped without a GPU (the bundle runs it).
TEST(StateFile, AModelOnAGpuSavesAndLoadsTheCpusFile) {
  const gpu::CudaDeviceReport report = gpu::ProbeCudaDevices();
  if (report.usable.empty()) GTEST_SKIP() << "needs a GPU; " << report.reason;
  const Device gpu = Device::Cuda(report.usable[0]);
  auto cpu_model = Model(3);
  const std::string cpu_path = TempPath("cpu.safetensors");
  SaveStateFile(*cpu_model, cpu_path);
  auto gpu_model = Model(3);
  gpu_model->To(gpu);
  const std::string gpu_path = TempPath("gpu.safetensors");
  SaveStateFile(*gpu_model, gpu_path);
  EXPECT_EQ(FileBytes(gpu_path), FileBytes(cpu_path));

  auto loaded = Model(4);
  loaded->To(gpu);
  LoadStateFile(*loaded, cpu_path);
  const std::vector<Parameter*> a = cpu_model->Parameters(),
                                b = loaded->Parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(b[i]->value.device().is_cuda()) << a[i]->name;
    EXPECT_EQ(Values(b[i]->value), Values(a[i]->value)) << a[i]->name;
  }
  const Tensor x =
      Tensor::FromVector({1, 1, 3, 3}, std::vector<float>(9, 0.5f));
  cpu_model->SetTraining(false);
  loaded->SetTraining(false);
  const std::vector<float> want = Values(cpu_model->Forward(x));
  const std::vector<float> got = Values(loaded->Forward(x.To(gpu)));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4);
}

}  // namespace
}  // namespace ringlet::nn
