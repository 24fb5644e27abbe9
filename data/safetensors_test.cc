#include "data/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "data/data_error.h"
#include "data/testing/idx_writer.h"

namespace ringlet::data {
namespace {

Array Of(ElementType type, std::vector<int64_t> dims, uint8_t fill) {
  Array a;
  a.type = type;
  a.dims = std::move(dims);
  a.bytes.assign(a.elements() * ElementSize(type), fill);
  return a;
}

// "[len u64][header JSON][data]" with the header patched as `edit` says.
std::string WithHeader(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string ErrorOf(const std::string& bytes) {
  try {
    DecodeSafetensors(bytes, "f.safetensors");
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

// Every element type, laid out in the order given, read back in name
// order with the metadata; from a file, plain or gzip-compressed.
TEST(Safetensors, EveryTypeRoundTripsThroughAFile) {
  SafetensorsFile file;
  file.metadata = {{"format", "np"}};
  file.tensors = {{"z", Of(ElementType::kFloat64, {2}, 1)},
                  {"a", Of(ElementType::kUint8, {3, 1}, 2)},
                  {"m", Of(ElementType::kInt8, {}, 3)},
                  {"b", Of(ElementType::kInt16, {0, 4}, 4)},
                  {"c", Of(ElementType::kInt32, {1}, 5)},
                  {"d", Of(ElementType::kInt64, {2, 2}, 6)},
                  {"e", Of(ElementType::kFloat32, {5}, 7)}};
  const std::string bytes = EncodeSafetensors(file);
  uint64_t header_bytes;
  std::memcpy(&header_bytes, bytes.data(), 8);
  EXPECT_EQ(header_bytes % 8, 0u) << "the header is padded to 8 bytes";
  EXPECT_NE(
      bytes.find(R"("z":{"dtype":"F64","shape":[2],"data_offsets":[0,16]})"),
      std::string::npos);
  const std::string dir = testing::MakeTempDir("safetensors_test");
  for (const bool gzip : {false, true}) {
    const std::string path = dir + "/t.safetensors";
    testing::WriteFile(path, gzip ? testing::Gzip(bytes) : bytes);
    const SafetensorsFile back = ReadSafetensors(path);
    EXPECT_EQ(back.metadata, file.metadata);
    ASSERT_EQ(back.tensors.size(), file.tensors.size());
    const std::map<std::string, Array> arrays = ArraysByName(back);
    EXPECT_EQ(arrays.begin()->first, "a");
    for (const auto& [name, array] : file.tensors) {
      const Array& got = arrays.at(name);
      EXPECT_EQ(got.type, array.type) << name;
      EXPECT_EQ(got.dims, array.dims) << name;
      EXPECT_EQ(got.bytes, array.bytes) << name;
    }
  }
  EXPECT_THROW(ReadSafetensors(dir + "/t.safetensors", 64), DataError);
  EXPECT_THROW(ReadSafetensors(dir + "/none.safetensors"), DataError);
}

TEST(Safetensors, WritingRefusesWhatTheFormatCannotHold) {
  SafetensorsFile twice;
  twice.tensors = {{"w", Of(ElementType::kFloat32, {1}, 0)},
                   {"w", Of(ElementType::kFloat32, {1}, 0)}};
  EXPECT_THROW(EncodeSafetensors(twice), std::invalid_argument);
  SafetensorsFile reserved;
  reserved.tensors = {{"__metadata__", Of(ElementType::kFloat32, {1}, 0)}};
  EXPECT_THROW(EncodeSafetensors(reserved), std::invalid_argument);
  SafetensorsFile short_bytes;
  short_bytes.tensors = {{"w", Of(ElementType::kFloat32, {2}, 0)}};
  short_bytes.tensors[0].second.bytes.pop_back();
  EXPECT_THROW(EncodeSafetensors(short_bytes), std::invalid_argument);
}

TEST(Safetensors, BadFilesAreClearErrorsNeverReadsPastTheEnd) {
  const std::string data(8, '\0');
  EXPECT_NE(ErrorOf("abc").find("shorter than its 8-byte header length"),
            std::string::npos);
  std::string huge(8, '\xff');
  EXPECT_NE(ErrorOf(huge + "{}").find("a header of"), std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader("{nope", "")).find("header:"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[4],)"
                               R"("data_offsets":[0,16]}})",
                               data))
                .find("data_offsets lie outside the data"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[3],)"
                               R"("data_offsets":[0,8]}})",
                               data))
                .find("shape does not fit its 8 bytes"),
            std::string::npos);
  // A shape whose element count passes int64.
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[)"
                               R"(4611686018427387904,4],)"
                               R"("data_offsets":[0,8]}})",
                               data))
                .find("shape does not fit"),
            std::string::npos);
  // Sizes that are not integers (a float past int64 would be an undefined
  // conversion).
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[1e300],)"
                               R"("data_offsets":[0,8]}})",
                               data))
                .find("x's shape holds 1e+300, not an integer"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[2],)"
                               R"("data_offsets":[0,8.5]}})",
                               data))
                .find("x's data_offsets holds 8.5, not an integer"),
            std::string::npos);
  EXPECT_NE(
      ErrorOf(WithHeader(R"({"x":{"dtype":"BF16","shape":[4],)"
                         R"("data_offsets":[0,8]}})",
                         data))
          .find("is BF16; ringlet reads U8, I8, I16, I32, I64, F32 and F64"),
      std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[1],)"
                               R"("data_offsets":[0,4]},"y":{"dtype":"F32",)"
                               R"("shape":[1],"data_offsets":[0,4]}})",
                               data))
                .find("two tensors share bytes"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithHeader(R"({"x":{"dtype":"F32","shape":[1],)"
                               R"("data_offsets":[4,8]}})",
                               data))
                .find("bytes no tensor owns"),
            std::string::npos);
}

}  // namespace
}  // namespace ringlet::data
