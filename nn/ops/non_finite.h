// Non-finite values in gradients, counted without the host waiting: what
// lets a training step on a GPU check its gradients and skip its update
// on the device.
#ifndef RINGLET_NN_OPS_NON_FINITE_H_
#define RINGLET_NN_OPS_NON_FINITE_H_

#include <cstdint>
#include <vector>

#include "nn/ops/kernel_table.h"
#include "nn/tensor.h"

namespace ringlet::nn {

// Each tensor's count of nan and infinite elements, queued: on a GPU one
// kernel counts them in the calling thread's queue for the device and the
// host waits only when it reads them, while SgdUpdate can skip itself on
// the device when any count is non-zero. So a training step checks its
// gradients without waiting for them (the skip happens on the device; the
// host learns of it when it reads the counts, e.g. with the loss).
class NonFiniteCounts {
 public:
  NonFiniteCounts() = default;  // Of no tensors: nothing non-finite.
  // One count per tensor, in order. On a GPU the first call waits for the
  // counting kernel: call it on the thread that queued it, or on any thread
  // once a DeviceEvent recorded after it has passed.
  const std::vector<int64_t>& Read() const;
  // The index of the first tensor with a non-finite element, or -1 (reads).
  int FirstBad() const;
  // On a GPU: device memory holding the sum of the counts as an unsigned
  // int (what SgdUpdate's skip reads); null on a CPU.
  const unsigned int* device_total() const;

 private:
  friend NonFiniteCounts QueueCountNonFinite(
      const std::vector<const Tensor*>& tensors);
  mutable std::vector<int64_t> counts_;
  // On a GPU: the counts then their sum, as unsigned ints (n + 1 floats of
  // storage); kept until this object goes, as queued SGD steps read it.
  Tensor device_counts_;
  mutable bool pending_ = false;
};

// Throws DeviceError when the tensors are on different devices.
NonFiniteCounts QueueCountNonFinite(const std::vector<const Tensor*>& tensors);

// Implementations per device type (kernel_table.h), given a non-empty list
// on one device: either `counts` filled (one per tensor) and an undefined
// tensor returned, or the counts queued into a returned tensor of n + 1
// unsigned ints in float storage, their sum last.
namespace kernels {
inline KernelTable<Tensor(const std::vector<const Tensor*>& tensors,
                          std::vector<int64_t>* counts)>
    count_non_finite{"count non-finite"};
}  // namespace kernels

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_NON_FINITE_H_
