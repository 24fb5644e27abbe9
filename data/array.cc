#include "data/array.h"

#include <algorithm>

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

int64_t Array::elements() const { return ElementsOf(dims, INT64_MAX); }

std::string Array::Describe() const {
  std::string out = std::string(ToString(type)) + " [";
  for (size_t i = 0; i < dims.size(); ++i) {
    out += (i ? ", " : "") + std::to_string(dims[i]);
  }
  return out + "]";
}

}  // namespace ringlet::data
