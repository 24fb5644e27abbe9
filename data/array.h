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

struct Array {
  ElementType type = ElementType::kUint8;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;

  int64_t elements() const;
  // "uint8 [60000, 28, 28]".
  std::string Describe() const;
};

// The elements of dims, or -1 when a dimension is negative or the product
// passes `most`.
int64_t ElementsOf(const std::vector<int64_t>& dims, int64_t most);

}  // namespace ringlet::data

#endif  // RINGLET_DATA_ARRAY_H_
