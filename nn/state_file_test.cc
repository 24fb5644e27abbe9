#include "nn/state_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "data/safetensors.h"
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
  return std::vector<float>(t.data(), t.data() + t.numel());
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
