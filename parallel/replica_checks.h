// Checks that keep a data-parallel run honest: values that became
// non-finite (a diverged run), and replicas that drifted apart (they take
// the same steps from the same values, so they must stay bitwise equal;
// a difference means a bug or a hardware fault, not a numerical effect).
#ifndef RINGLET_PARALLEL_REPLICA_CHECKS_H_
#define RINGLET_PARALLEL_REPLICA_CHECKS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/ops/loss.h"
#include "nn/tensor.h"
#include "parallel/replica_group.h"

namespace ringlet::parallel {

// "nan" or "inf" ("-inf") for a non-finite value, "" for a finite one.
std::string NonFiniteName(double value);

// A replica's finished loss into its step's statistics (loss sum, correct
// predictions, `samples`), and, when the loss is not finite, the
// divergence "the loss became nan on cuda:0".
void RecordLoss(const nn::LossResult& loss, int64_t samples, nn::Device device,
                TrainStepStats* stats);

// The first non-finite value of `values[0, count)`, as NonFiniteName, or "".
std::string FirstNonFinite(const float* values, int64_t count);

// The index of the first of `tensors` holding a non-finite value, or -1.
// Tensors not on the host are skipped (their values are on a GPU).
int FirstNonFiniteTensor(const std::vector<const nn::Tensor*>& tensors);

// A 64-bit checksum of the bytes of `values[0, count)`: equal values give
// equal sums; one changed bit changes it (with probability 1 - 2^-64).
uint64_t Checksum(const float* values, int64_t count);

// One replica's tensors, named, as a device holds them.
struct NamedTensors {
  std::vector<std::string> names;
  std::vector<const nn::Tensor*> tensors;
};

// `state` with each tensor outside host memory (on a GPU) replaced by a
// host copy kept in *copies, which must not change while the result is
// read: what checkpoints and replica checks read. Host tensors are kept.
NamedTensors OnHost(NamedTensors state, std::vector<nn::Tensor>* copies);

// Copies `values` (host memory, one per tensor of `live`, in its order and
// sizes) into the tensors of `live`, wherever they are. Throws
// std::invalid_argument naming `who` when the counts differ.
void LoadFromHost(const std::vector<const float*>& values,
                  const NamedTensors& live, const std::string& who);

// Compares every replica of the job with rank 0's: each device d of
// `group` checksums state(d) and the checksums go through the group's
// communicators (an allgather, so every process sees every rank). Returns
// "" when all agree, else a message naming the first rank that differs and
// its first differing tensor. Collective: every device of the job must
// call it at the same step.
std::string CompareReplicas(ReplicaGroup& group,
                            const std::function<NamedTensors(int)>& state);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REPLICA_CHECKS_H_
