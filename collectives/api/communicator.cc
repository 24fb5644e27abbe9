#include "collectives/api/communicator.h"

namespace ringlet::collectives {

std::unique_ptr<Work> Communicator::AllReduceAsync(const void* send, void* recv,
                                                   size_t count, DataType type,
                                                   ReduceOp op,
                                                   const gpu::Event* after,
                                                   const CallOptions& options) {
  if (after != nullptr) {
    throw CollectiveError("the " + backend() +
                          " backend reads buffers on the host at once and "
                          "cannot wait for a device event: wait for the "
                          "buffer's device, then start the call without one");
  }
  std::exception_ptr error;
  try {
    AllReduce(send, recv, count, type, op, options);
  } catch (const CollectiveError&) {
    error = std::current_exception();
  }
  return std::make_unique<FinishedWork>(error);
}

}  // namespace ringlet::collectives
