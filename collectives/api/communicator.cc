#include "collectives/api/communicator.h"

#include <chrono>
#include <exception>

namespace ringlet::collectives {
namespace {

// Runs `call` (with the options' `before` first) on the caller's thread
// and returns it finished: a failure is the Work's.
template <typename Call>
std::unique_ptr<Work> RunNow(const CallOptions& options, const Call& call) {
  std::exception_ptr error;
  if (options.before) options.before();
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
  } catch (const CollectiveError&) {
    error = std::current_exception();
  }
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  return std::make_unique<FinishedWork>(error, took.count());
}

}  // namespace

std::unique_ptr<Work> Communicator::AllReduceAsync(const void* send, void* recv,
                                                   size_t count, DataType type,
                                                   ReduceOp op,
                                                   const gpu::Event* after,
                                                   const CallOptions& options) {
  if (after != nullptr) {
    throw CollectiveError("the " + backend() +
                          " backend reads buffers on the host and cannot "
                          "wait for a device event: wait for the buffer's "
                          "device (or pass that wait as CallOptions::before), "
                          "then start the call without one");
  }
  return RunNow(options,
                [&] { AllReduce(send, recv, count, type, op, options); });
}

std::unique_ptr<Work> Communicator::BroadcastAsync(const void* send, void* recv,
                                                   size_t count, DataType type,
                                                   int root,
                                                   const CallOptions& options) {
  return RunNow(options,
                [&] { Broadcast(send, recv, count, type, root, options); });
}

std::unique_ptr<Work> Communicator::ReduceScatterAsync(
    const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
    const CallOptions& options) {
  return RunNow(options, [&] {
    ReduceScatter(send, recv, recv_count, type, op, options);
  });
}

std::unique_ptr<Work> Communicator::AllGatherAsync(const void* send, void* recv,
                                                   size_t send_count,
                                                   DataType type,
                                                   const CallOptions& options) {
  return RunNow(options,
                [&] { AllGather(send, recv, send_count, type, options); });
}

std::unique_ptr<Work> Communicator::BarrierAsync(const CallOptions& options) {
  return RunNow(options, [&] { Barrier(options); });
}

}  // namespace ringlet::collectives
