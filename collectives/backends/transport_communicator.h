// A Communicator made of a Transport and the algorithms that run over it.
//
// It numbers the calls, checks the arguments, handles one rank and zero
// elements, sets the deadline, and picks the algorithm (the group's first
// unless the call names another). Any failure aborts the group, so every
// rank's call fails with the same message instead of waiting for a peer
// that will never come. With `own_thread`, asynchronous calls run in order
// on a thread of the communicator's own (CallQueue) and return at once;
// blocking calls run on the caller's thread after them. Calls come from
// one thread at a time.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TRANSPORT_COMMUNICATOR_H_
#define RINGLET_COLLECTIVES_BACKENDS_TRANSPORT_COMMUNICATOR_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/algorithms/algorithm.h"
#include "collectives/api/call_queue.h"
#include "collectives/api/communicator.h"
#include "collectives/transport/transport.h"

namespace ringlet::collectives {

using AlgorithmList = std::vector<std::shared_ptr<const Algorithm>>;

class TransportCommunicator : public Communicator {
 public:
  // `algorithms` must not be empty and must be the same list, in the same
  // order, on every rank of the group.
  TransportCommunicator(std::unique_ptr<Transport> transport,
                        AlgorithmList algorithms, const CommOptions& options,
                        bool own_thread = false);

  int rank() const override { return transport_->rank(); }
  int size() const override { return transport_->size(); }
  std::string backend() const override { return algorithms_[0]->name(); }

  void AllReduce(const void* send, void* recv, size_t count, DataType type,
                 ReduceOp op, const CallOptions& options = {}) override;
  void Broadcast(const void* send, void* recv, size_t count, DataType type,
                 int root, const CallOptions& options = {}) override;
  void ReduceScatter(const void* send, void* recv, size_t recv_count,
                     DataType type, ReduceOp op,
                     const CallOptions& options = {}) override;
  void AllGather(const void* send, void* recv, size_t send_count, DataType type,
                 const CallOptions& options = {}) override;
  void Barrier(const CallOptions& options = {}) override;
  // Where the call's algorithm has one (ring) and the transport reads on
  // the host.
  bool AllReduceWire(const WireReduction& reduction, size_t count,
                     const CallOptions& options = {}) override;
  std::unique_ptr<Work> AllReduceAsync(
      const void* send, void* recv, size_t count, DataType type, ReduceOp op,
      const gpu::Event* after = nullptr,
      const CallOptions& options = {}) override;
  std::unique_ptr<Work> BroadcastAsync(
      const void* send, void* recv, size_t count, DataType type, int root,
      const CallOptions& options = {}) override;
  std::unique_ptr<Work> ReduceScatterAsync(
      const void* send, void* recv, size_t recv_count, DataType type,
      ReduceOp op, const CallOptions& options = {}) override;
  std::unique_ptr<Work> AllGatherAsync(
      const void* send, void* recv, size_t send_count, DataType type,
      const CallOptions& options = {}) override;
  std::unique_ptr<Work> BarrierAsync(const CallOptions& options = {}) override;
  void Abort(const std::string& reason) override;
  CommStats stats() const override;

 private:
  // Runs an algorithm's part of a call: on failure, LeaveFailedCall first.
  template <typename Call>
  void Guarded(Call&& call);
  // The calls themselves, on whichever thread runs them.
  void DoAllReduce(const void* send, void* recv, size_t count, DataType type,
                   ReduceOp op, const CallOptions& options);
  void DoBroadcast(const void* send, void* recv, size_t count, DataType type,
                   int root, const CallOptions& options);
  void DoReduceScatter(const void* send, void* recv, size_t recv_count,
                       DataType type, ReduceOp op, const CallOptions& options);
  void DoAllGather(const void* send, void* recv, size_t send_count,
                   DataType type, const CallOptions& options);
  void DoBarrier(const CallOptions& options);
  // Queued on the own thread, `before` first; on the caller's without one.
  std::unique_ptr<Work> Queue(const CallOptions& options,
                              std::function<void()> call);

  // The algorithm `options` name (the group's first when none), or null
  // for a name the group does not have.
  const Algorithm* Find(const CallOptions& options) const;
  // Numbers the call, resolves its algorithm, checks that the group is not
  // aborted and starts the transport's clock.
  CallDesc Begin(OpKind kind, DataType type, ReduceOp op, int root,
                 size_t count, const CallOptions& options,
                 const Algorithm** algorithm);
  // Aborts the group with "rank R <call>: <problem>" and throws it.
  [[noreturn]] void Fail(const CallDesc& call, const std::string& problem);
  void RequireBuffer(const CallDesc& call, const void* buffer,
                     const char* name);

  std::unique_ptr<Transport> transport_;
  const AlgorithmList algorithms_;
  const CommOptions options_;
  uint64_t next_seq_ = 0;
  // Declared last: its thread stops before what its calls use goes.
  std::unique_ptr<CallQueue> queue_;  // Null: calls on the caller's thread.
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_TRANSPORT_COMMUNICATOR_H_
