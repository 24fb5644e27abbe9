#include "data/array.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ringlet::data {

size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
    case ElementType::kInt8:
      return 1;
    case ElementType::kInt16:
      return 2;
    case ElementType::kInt32:
    case ElementType::kFloat32:
      return 4;
    case ElementType::kInt64:
    case ElementType::kFloat64:
      return 8;
  }
  return 0;
}

const char* ToString(ElementType type) {
  switch (type) {
    case ElementType::kUint8:
      return "uint8";
    case ElementType::kInt8:
      return "int8";
    case ElementType::kInt16:
      return "int16";
    case ElementType::kInt32:
      return "int32";
    case ElementType::kInt64:
      return "int64";
    case ElementType::kFloat32:
      return "float32";
    case ElementType::kFloat64:
      return "float64";
  }
  return "?";
}

int64_t ElementsOf(const std::vector<int64_t>& dims, int64_t most) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > most) return -1;
  }
  return n;
}

void SwapBytes(void* p, int64_t elements, size_t size) {
  if (size < 2) return;
  auto* bytes = static_cast<uint8_t*>(p);
  for (int64_t i = 0; i < elements; ++i, bytes += size) {
    std::reverse(bytes, bytes + size);
  }
}

int64_t SampleSpec::elements() const { return ElementsOf(shape, INT64_MAX); }

int64_t SampleSpec::bytes() const {
  return elements() * static_cast<int64_t>(ElementSize(type));
}

std::string SampleSpec::Describe() const {
  return std::string(ToString(type)) + " " + DimsString(shape);
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string out = "{";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return out + "}";
}

int64_t IntegerAt(const void* data, ElementType type, int64_t i) {
  const auto* p = static_cast<const uint8_t*>(data);
  switch (type) {
    case ElementType::kUint8:
      return p[i];
    case ElementType::kInt8:
      return static_cast<int8_t>(p[i]);
    case ElementType::kInt16: {
      int16_t v;
      std::memcpy(&v, p + 2 * i, 2);
      return v;
    }
    case ElementType::kInt32: {
      int32_t v;
      std::memcpy(&v, p + 4 * i, 4);
      return v;
    }
    case ElementType::kInt64: {
      int64_t v;
      std::memcpy(&v, p + 8 * i, 8);
      return v;
    }
    default:
      throw std::invalid_argument(std::string(ToString(type)) +
                                  " values are not integers");
  }
}

int64_t Array::elements() const { return ElementsOf(dims, INT64_MAX); }

std::string Array::Describe() const {
  std::string out = DimsString(dims);
  return std::string(ToString(type)) + " [" + out.substr(1, out.size() - 2) +
         "]";
}

}  // namespace ringlet::data
