#include "trainers/common/outputs/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "data/safetensors.h"

namespace ringlet::trainers {
namespace {

Safetensors Sample() {
  Safetensors file;
  file.metadata = {{"format", "pt"}};
  file.f32 = {{"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6.5f}},
              {"a.bias", {2}, {-0.0f, 1e-30f}}};
  file.i64_shapes = {{"a.num_batches_tracked", {}}};
  file.i64_values = {{7}};
  return file;
}

std::string ErrorOf(const std::string& bytes) {
  try {
    DecodeSafetensors(bytes, "f.safetensors");
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripsAndLaysOutAsTheFormatSays) {
  const std::string bytes = EncodeSafetensors(Sample());
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  EXPECT_EQ(header_bytes % 8, 0u) << "the header is padded to 8 bytes";
  const std::string header = bytes.substr(8, header_bytes);
  EXPECT_NE(header.find("\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                        "\"data_offsets\":[0,24]}"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("\"a.num_batches_tracked\":{\"dtype\":\"I64\","
                        "\"shape\":[],\"data_offsets\":[32,40]}"),
            std::string::npos)
      << header;
  EXPECT_EQ(bytes.size(), 8 + header_bytes + 40);
  const Safetensors back = DecodeSafetensors(bytes, "f");
  ASSERT_EQ(back.f32.size(), 2u);
  // Read in name order.
  EXPECT_EQ(back.f32[1].name, "a.weight");
  EXPECT_EQ(back.f32[1].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(back.f32[1].values, Sample().f32[0].values);
  EXPECT_EQ(back.f32[0].values[1], 1e-30f);
  ASSERT_EQ(back.i64_values.size(), 1u);
  EXPECT_EQ(back.i64_values[0], std::vector<int64_t>{7});
  EXPECT_EQ(back.metadata.at("format"), "pt");
}

// The format's own checks are data's (data/safetensors_test.cc); a
// parameter file holds F32 tensors and I64 scalars only.
TEST(Safetensors, ParameterFilesHoldF32AndI64Only) {
  data::Array ids;
  ids.type = data::ElementType::kInt32;
  ids.dims = {2};
  ids.bytes.assign(8, 0);
  EXPECT_NE(ErrorOf(data::EncodeSafetensors({{{"x", ids}}, {}}))
                .find("f.safetensors: tensor x is int32; parameter files "
                      "hold float32 (F32) and int64 (I64)"),
            std::string::npos);
  EXPECT_NE(ErrorOf("abc").find("shorter than its 8-byte header length"),
            std::string::npos);
}

}  // namespace
}  // namespace ringlet::trainers
