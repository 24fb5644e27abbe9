#include "collectives/reproducible/call_checks.h"

#include <stdexcept>
#include <string>

#include "collectives/reproducible/reproducible_sum.h"

namespace ringlet::collectives {

void CheckReproducibleCall(const std::vector<const void*>& summands,
                           const void* recv, size_t count, DataType type) {
  if (type != DataType::kFloat32 && type != DataType::kBFloat16) {
    throw std::invalid_argument(
        std::string("reproducible allreduce: takes float32 or bfloat16, not ") +
        Name(type));
  }
  if (count == 0) return;
  if (recv == nullptr) {
    throw std::invalid_argument("reproducible allreduce: recv is null");
  }
  for (const void* summand : summands) {
    if (summand == nullptr) {
      throw std::invalid_argument("reproducible allreduce: a summand is null");
    }
  }
  if (summands.size() > static_cast<size_t>(INT32_MAX)) {
    throw std::invalid_argument(
        "reproducible allreduce: " + std::to_string(summands.size()) +
        " summands on one rank; the grid holds " +
        std::to_string(kMaxReproducibleSummands) + " over the job");
  }
}

void CheckSummandsFit(int32_t most, int ranks) {
  if (int64_t{most} * ranks > kMaxReproducibleSummands) {
    throw std::invalid_argument(
        "reproducible allreduce: up to " + std::to_string(most) +
        " summands on each of " + std::to_string(ranks) +
        " ranks may exceed the " + std::to_string(kMaxReproducibleSummands) +
        " the grid holds exactly; add some up in fewer calls");
  }
}

}  // namespace ringlet::collectives
