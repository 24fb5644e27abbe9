// Data types and reduction operators of the collectives, named as in NCCL.
#ifndef RINGLET_COLLECTIVES_API_TYPES_H_
#define RINGLET_COLLECTIVES_API_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringlet::collectives {

// kBFloat16: bfloat16 (8 exponent and 7 mantissa bits, float32's range).
// Reductions add in float32 and round once per step, to nearest even.
enum class DataType : uint8_t { kFloat32, kFloat64, kInt32, kBFloat16 };
enum class ReduceOp : uint8_t { kSum, kAvg, kMax, kMin };

// Which collective a call is; part of every message, so ranks that call
// different collectives are caught on the first message.
enum class OpKind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduceScatter,
  kAllGather,
  kBarrier,
  // A sum in the caller's own wire words (wire_reduction.h).
  kWireAllReduce,
};

size_t SizeOf(DataType type);
const char* Name(DataType type);  // "float32", "float64", "int32", "bfloat16"
const char* Name(ReduceOp op);    // "sum", "avg", "max", "min"
const char* Name(OpKind kind);    // "allreduce", "broadcast", ...

// Parse the names above; throw std::invalid_argument listing the choices.
DataType ParseDataType(const std::string& name);
ReduceOp ParseReduceOp(const std::string& name);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_TYPES_H_
