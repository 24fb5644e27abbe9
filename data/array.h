// An n-dimensional array read from a file: its element type, its
// dimensions (the first one counts samples) and its bytes in row-major
// order, in this machine's byte order.
#ifndef RINGLET_DATA_ARRAY_H_
#define RINGLET_DATA_ARRAY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ringlet::data {

enum class ElementType {
  kUint8,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kFloat32,
  kFloat64
};

size_t ElementSize(ElementType type);
// "uint8", "int8", "int16", "int32", "int64", "float32" or "float64".
const char* ToString(ElementType type);

// The element type of T (uint8_t, int8_t, int16_t, int32_t, int64_t, float,
// double).
template <typename T>
constexpr ElementType ElementTypeOf();
template <>
constexpr ElementType ElementTypeOf<uint8_t>() {
  return ElementType::kUint8;
}
template <>
constexpr ElementType ElementTypeOf<int8_t>() {
  return ElementType::kInt8;
}
template <>
constexpr ElementType ElementTypeOf<int16_t>() {
  return ElementType::kInt16;
}
template <>
constexpr ElementType ElementTypeOf<int32_t>() {
  return ElementType::kInt32;
}
template <>
constexpr ElementType ElementTypeOf<int64_t>() {
  return ElementType::kInt64;
}
template <>
constexpr ElementType ElementTypeOf<float>() {
  return ElementType::kFloat32;
}
template <>
constexpr ElementType ElementTypeOf<double>() {
  return ElementType::kFloat64;
}

// What one sample's input, or target, is.
struct SampleSpec {
  ElementType type = ElementType::kUint8;
  std::vector<int64_t> shape;  // {} is one value a sample.

  int64_t elements() const;
  int64_t bytes() const;
  // "uint8 {1, 28, 28}".
  std::string Describe() const;
  bool operator==(const SampleSpec& o) const {
    return type == o.type && shape == o.shape;
  }
};

// "{1, 28, 28}".
std::string DimsString(const std::vector<int64_t>& dims);

// Element i of integer data (uint8, int8, int16, int32 or int64) as an
// int64; throws std::invalid_argument naming the type for others.
int64_t IntegerAt(const void* data, ElementType type, int64_t i);

struct Array {
  ElementType type = ElementType::kUint8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;

  int64_t elements() const;
  // "uint8 [60000, 28, 28]".
  std::string Describe() const;
};

// Where an array's elements lie in its (uncompressed) file: read samples
// in place from `offset`, each element's bytes reversed when `swap_bytes`.
struct FileLayout {
  uint64_t offset = 0;
  bool swap_bytes = false;
};

// Reverses the bytes of each of `elements` elements of `size` bytes at p
// (big-endian values into this machine's order, or back).
void SwapBytes(void* p, int64_t elements, size_t size);

// The elements of dims, or -1 when a dimension is negative or the product
// passes `most`.
int64_t ElementsOf(const std::vector<int64_t>& dims, int64_t most);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_ARRAY_H_
