// The `mpi` backend: MPI's own collectives (MPI_Iallreduce and friends) on
// host buffers, one rank per process, for comparison with the ring and for
// CPU clusters whose MPI is tuned to their network.
//
// Every call first gathers every rank's description of it and compares
// them, so ranks that make different calls get a CollectiveError naming
// both (MPI itself would hang or corrupt memory). Waits are MPI_Test loops
// that end at the call's deadline with an error instead of blocking.
#ifndef RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_COMMUNICATOR_H_
#define RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "collectives/api/communicator.h"
#include "collectives/backends/mpi/mpi_world.h"
#include "collectives/transport/call_desc.h"

namespace ringlet::collectives::mpi {

class MpiCommunicator : public Communicator {
 public:
  // Throws CollectiveError unless every process holds exactly one rank.
  MpiCommunicator(std::shared_ptr<MpiWorld> world, const CommOptions& options);

  int rank() const override { return world_->process(); }
  int size() const override { return world_->processes(); }
  std::string backend() const override { return "mpi"; }

  void AllReduce(const void* send, void* recv, size_t count, DataType type,
                 ReduceOp op, const CallOptions& options = {}) override;
  // After the calls' check (itself a collective that waits), starts
  // MPI_Iallreduce and returns; the Work's Wait finishes it.
  std::unique_ptr<Work> AllReduceAsync(
      const void* send, void* recv, size_t count, DataType type, ReduceOp op,
      const gpu::Event* after = nullptr,
      const CallOptions& options = {}) override;
  void Broadcast(const void* send, void* recv, size_t count, DataType type,
                 int root, const CallOptions& options = {}) override;
  void ReduceScatter(const void* send, void* recv, size_t recv_count,
                     DataType type, ReduceOp op,
                     const CallOptions& options = {}) override;
  void AllGather(const void* send, void* recv, size_t send_count, DataType type,
                 const CallOptions& options = {}) override;
  void Barrier(const CallOptions& options = {}) override;
  // The others the same way: the calls' check, then MPI_Ibcast,
  // MPI_Ireduce_scatter_block or MPI_Iallgather started (the check is the
  // barrier itself); the Work's Wait finishes them.
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
  CommStats stats() const override { return stats_; }

 private:
  friend class MpiWork;
  // A Work for `request` (MPI_REQUEST_NULL: nothing to wait for), `after`
  // run once it has completed.
  std::unique_ptr<Work> Started(const CallDesc& call, MPI_Request request,
                                const CallOptions& options,
                                std::function<void()> after);
  std::chrono::milliseconds TimeoutOf(const CallOptions& options) const;
  // Starts MPI_Iallreduce after the calls' check; null for no elements.
  MPI_Request StartAllReduce(const CallDesc& call, const void* send,
                             void* recv);
  // What follows the wait: the average's division, the statistics.
  void EndAllReduce(const CallDesc& call, void* recv);
  // Numbers the call, checks it against every rank's, and returns its
  // deadline.
  Clock::time_point Begin(CallDesc* call, const CallOptions& options);
  // Waits for a started collective; fails at the deadline or on abort.
  void Finish(const CallDesc& call, MPI_Request* request,
              Clock::time_point deadline);
  [[noreturn]] void Fail(const CallDesc& call, const std::string& problem);
  void Count(const CallDesc& call, size_t elements);

  std::shared_ptr<MpiWorld> world_;
  MPI_Comm comm_;
  const CommOptions options_;
  uint64_t next_seq_ = 0;
  CommStats stats_;
  std::atomic<bool> aborted_{false};
  std::mutex reason_mu_;
  std::string reason_;
};

}  // namespace ringlet::collectives::mpi

#endif  // RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_COMMUNICATOR_H_
