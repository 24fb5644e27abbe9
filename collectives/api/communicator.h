// The communicator interface, in the shape of NCCL's API.
//
// A group of `size` ranks; each rank holds its own Communicator and calls it
// from its own thread (or process). Every rank of a group must make the same
// sequence of calls with the same operation, count, type and root; buffers
// are the rank's own. Calls block until this rank's part is done and its
// buffers may be reused. send == recv means in place, as in NCCL.
//
// Errors: a CollectiveError on every rank, within the timeout (see
// collective_error.h). After one, the communicator is aborted.
#ifndef RINGLET_COLLECTIVES_API_COMMUNICATOR_H_
#define RINGLET_COLLECTIVES_API_COMMUNICATOR_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/api/types.h"
#include "collectives/api/wire_reduction.h"
#include "collectives/api/work.h"

namespace ringlet::collectives {

struct CommOptions {
  // How long a rank waits for a peer before the call fails.
  std::chrono::milliseconds timeout{60000};
};

// Per-call settings; zero or empty means the communicator's choice.
struct CallOptions {
  std::chrono::milliseconds timeout{0};
  // An algorithm of the communicator's group by name ("ring", "naive").
  std::string algorithm;
  // For an asynchronous call: run first, on the thread that makes the call's
  // progress, before the buffers are read (e.g. a host wait for the device
  // that writes them), so the caller need not wait. Null: nothing.
  std::function<void()> before;
};

// What a rank has sent since the communicator was made: payload bytes handed
// to the transport, as the benchmark reports them.
struct CommStats {
  uint64_t bytes_sent = 0;
  uint64_t messages_sent = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // The backend's name: "ring", "naive", "nccl".
  virtual std::string backend() const = 0;

  // recv[i] = op over ranks of send[i], for i < count, on every rank.
  virtual void AllReduce(const void* send, void* recv, size_t count,
                         DataType type, ReduceOp op,
                         const CallOptions& options = {}) = 0;

  // recv[0, count) = root's send[0, count) on every rank (send is read only
  // on the root; it may be null elsewhere).
  virtual void Broadcast(const void* send, void* recv, size_t count,
                         DataType type, int root,
                         const CallOptions& options = {}) = 0;

  // send holds size * recv_count elements; rank r receives block r of the
  // reduction: recv[i] = op over ranks of send[r * recv_count + i].
  virtual void ReduceScatter(const void* send, void* recv, size_t recv_count,
                             DataType type, ReduceOp op,
                             const CallOptions& options = {}) = 0;

  // recv holds size * send_count elements; block r is rank r's send.
  virtual void AllGather(const void* send, void* recv, size_t send_count,
                         DataType type, const CallOptions& options = {}) = 0;

  // Returns once every rank has called Barrier.
  virtual void Barrier(const CallOptions& options = {}) = 0;

  // out[i] = the sum over ranks, in `reduction`'s own words, for i < count
  // (see wire_reduction.h). Returns false, having made no call, where the
  // backend cannot run one (then on every rank alike: it depends on the
  // backend and the call's algorithm only), and the caller sums another
  // way. The ring over host memory (threads and mpirun processes) runs it.
  virtual bool AllReduceWire(const WireReduction& reduction, size_t count,
                             const CallOptions& options = {}) {
    (void)reduction, (void)count, (void)options;
    return false;
  }

  // AllReduce without waiting for it: returns the call's Work, whose Wait()
  // ends it. Every rank must start its calls in the same order, async or
  // not; buffers belong to the call until the Work is done.
  //   host backends (ring, naive, mpi...): mpi starts MPI_Iallreduce and
  //       returns; ring and naive queue the call on the communicator's own
  //       thread and return at once (a blocking call made later runs after
  //       it); others run it on the caller's thread and return it
  //       finished. A failure is the Work's, which Wait rethrows.
  //   OrdersOnDevice() (nccl): queued on the communicator's stream after
  //       `after` (an event the caller recorded on its stream once the
  //       buffer was written; null: at once); the Work's event() lets the
  //       caller's stream wait for the sums without the host waiting.
  // Other backends refuse `after` with a CollectiveError: they read the
  // buffer on the host, so the caller waits for its device first, or
  // hands that wait to the call's thread (CallOptions::before).
  virtual std::unique_ptr<Work> AllReduceAsync(
      const void* send, void* recv, size_t count, DataType type, ReduceOp op,
      const gpu::Event* after = nullptr, const CallOptions& options = {});
  // The other collectives the same way: every call has a Work. The
  // defaults run the blocking call on the caller's thread and return it
  // finished; ring and naive (TransportCommunicator) queue every call on
  // a thread of the communicator's own.
  virtual std::unique_ptr<Work> BroadcastAsync(const void* send, void* recv,
                                               size_t count, DataType type,
                                               int root,
                                               const CallOptions& options = {});
  virtual std::unique_ptr<Work> ReduceScatterAsync(
      const void* send, void* recv, size_t recv_count, DataType type,
      ReduceOp op, const CallOptions& options = {});
  virtual std::unique_ptr<Work> AllGatherAsync(const void* send, void* recv,
                                               size_t send_count, DataType type,
                                               const CallOptions& options = {});
  virtual std::unique_ptr<Work> BarrierAsync(const CallOptions& options = {});
  // True where calls are ordered by events on a GPU's stream (nccl).
  virtual bool OrdersOnDevice() const { return false; }

  // Fails the group: calls in flight on every rank, and all later calls,
  // throw CollectiveError carrying `reason`.
  virtual void Abort(const std::string& reason) = 0;

  virtual CommStats stats() const = 0;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_COMMUNICATOR_H_
