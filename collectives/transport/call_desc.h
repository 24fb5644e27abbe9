// What one collective call is, identically on every rank, and the envelope
// each message of the call carries so a receiver can check it.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_CALL_DESC_H_
#define RINGLET_COLLECTIVES_TRANSPORT_CALL_DESC_H_

#include <cstdint>
#include <string>

#include "collectives/api/types.h"

namespace ringlet::collectives {

struct CallDesc {
  uint64_t seq = 0;  // The call's number on its communicator, from 0.
  OpKind kind = OpKind::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // Reductions only.
  uint8_t algorithm = 0;         // Index into the group's algorithm list.
  int32_t root = 0;              // Broadcast only.
  uint64_t count = 0;            // Elements, as the caller passed them.

  bool operator==(const CallDesc& o) const {
    return seq == o.seq && kind == o.kind && type == o.type && op == o.op &&
           algorithm == o.algorithm && root == o.root && count == o.count;
  }
  bool operator!=(const CallDesc& o) const { return !(*this == o); }
};

// "allreduce #12 float32[61706] sum", "broadcast #3 int32[7] root 1".
// `algorithm_name` is added when not empty.
std::string Describe(const CallDesc& call, const char* algorithm_name = "");

// Carried by every message: the call, and where in the call it belongs.
struct Envelope {
  CallDesc call;
  uint32_t step = 0;     // Algorithm step (phase and step folded together).
  uint32_t segment = 0;  // Segment within the step's chunk.
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_TRANSPORT_CALL_DESC_H_
