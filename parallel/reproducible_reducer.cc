#include "parallel/reproducible_reducer.h"

#include <chrono>
#include <memory>
#include <stdexcept>

namespace ringlet::parallel {

ReproducibleReducer::ReproducibleReducer(const ReducerContext& context)
    : comm_(*context.comm),
      host_comm_(*context.host_comm),
      grads_(context.wire, context.where),
      buffers_(context.body->Buffers().tensors) {}

ReducerFactory ReproducibleReducer::Factory() {
  return [](const ReducerContext& context) {
    if (context.comm == nullptr || context.host_comm == nullptr ||
        context.body == nullptr) {
      throw std::invalid_argument(
          "reproducible reducer: needs the gradients' and a host "
          "communicator, and the body");
    }
    return std::make_unique<ReproducibleReducer>(context);
  };
}

void ReproducibleReducer::BeginStep(const StepPlan& plan) {
  if (plan.used == nullptr) {
    throw std::invalid_argument(
        "reproducible reducer: the step has no micro-shards (set "
        "micro_shards)");
  }
  used_ = *plan.used;
  buffers_.Begin(plan.slots);
}

void ReproducibleReducer::AfterShard(int64_t slot,
                                     const std::vector<nn::Tensor*>& grads) {
  buffers_.Record(slot);
  grads_.Add(grads);
}

double ReproducibleReducer::Reduce(const std::vector<nn::Tensor*>& grads) {
  const auto start = std::chrono::steady_clock::now();
  grads_.SumInto(comm_, grads);
  buffers_.Finish(host_comm_, used_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

}  // namespace ringlet::parallel
