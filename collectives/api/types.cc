#include "collectives/api/types.h"

#include <stdexcept>

namespace ringlet::collectives {

size_t SizeOf(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kInt32:
      return 4;
    case DataType::kBFloat16:
      return 2;
  }
  return 0;
}

const char* Name(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kBFloat16:
      return "bfloat16";
  }
  return "?";
}

const char* Name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAvg:
      return "avg";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "?";
}

const char* Name(OpKind kind) {
  switch (kind) {
    case OpKind::kAllReduce:
      return "allreduce";
    case OpKind::kBroadcast:
      return "broadcast";
    case OpKind::kReduceScatter:
      return "reducescatter";
    case OpKind::kAllGather:
      return "allgather";
    case OpKind::kBarrier:
      return "barrier";
    case OpKind::kWireAllReduce:
      return "wire allreduce";
  }
  return "?";
}

DataType ParseDataType(const std::string& name) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                     DataType::kBFloat16}) {
    if (name == Name(t)) return t;
  }
  if (name == "bf16") return DataType::kBFloat16;
  throw std::invalid_argument("unknown data type '" + name +
                              "'; use float32, float64, int32 or bfloat16");
}

ReduceOp ParseReduceOp(const std::string& name) {
  for (ReduceOp op :
       {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMax, ReduceOp::kMin}) {
    if (name == Name(op)) return op;
  }
  throw std::invalid_argument("unknown reduction '" + name +
                              "'; use sum, avg, max or min");
}

}  // namespace ringlet::collectives
