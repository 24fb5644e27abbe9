// The reproducible reducer: --reproducible's sum, written once for every
// body (parallel/micro_shards.h says what it promises). Each micro-shard's
// gradient is kept apart (ReproducibleGradients) and the lot summed with
// collectives' ReproducibleAllReduce after backward (no overlap); batch
// norm's running statistics become the mean over the micro-shards in slot
// order (MicroShardBuffers). The engine makes it the reducer whenever
// micro_shards is set and no other is given.
#ifndef RINGLET_PARALLEL_REPRODUCIBLE_REDUCER_H_
#define RINGLET_PARALLEL_REPRODUCIBLE_REDUCER_H_

#include <cstdint>
#include <vector>

#include "parallel/gradient_reducer.h"
#include "parallel/micro_shards.h"

namespace ringlet::parallel {

class ReproducibleReducer : public GradientReducer {
 public:
  // Needs context.host_comm (the engine gives one with micro-shards).
  explicit ReproducibleReducer(const ReducerContext& context);
  static ReducerFactory Factory();

  bool KeepsShardsApart() const override { return true; }
  bool SyncsBuffers() const override { return true; }
  void BeginStep(const StepPlan& plan) override;
  void AfterShard(int64_t slot, const std::vector<nn::Tensor*>& grads) override;
  // The sum on the gradients' device (on a GPU through its communicator),
  // then the buffers' mean through the host communicator.
  double Reduce(const std::vector<nn::Tensor*>& grads) override;

 private:
  collectives::Communicator& comm_;
  collectives::Communicator& host_comm_;
  ReproducibleGradients grads_;
  MicroShardBuffers buffers_;
  std::vector<char> used_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REPRODUCIBLE_REDUCER_H_
