#include "collectives/transport/call_desc.h"

namespace ringlet::collectives {

std::string Describe(const CallDesc& call, const char* algorithm_name) {
  std::string out = std::string(Name(call.kind)) + " #" +
                    std::to_string(call.seq) + " " + Name(call.type) + "[" +
                    std::to_string(call.count) + "]";
  if (call.kind == OpKind::kAllReduce || call.kind == OpKind::kReduceScatter ||
      call.kind == OpKind::kWireAllReduce) {
    out += std::string(" ") + Name(call.op);
  }
  if (call.kind == OpKind::kBroadcast) {
    out += " root " + std::to_string(call.root);
  }
  if (algorithm_name != nullptr && algorithm_name[0] != '\0') {
    out += std::string(" (") + algorithm_name + ")";
  }
  return out;
}

}  // namespace ringlet::collectives
