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
#ifndef RINGLET_COLLECTIVES_COMMUNICATOR_H_
#define RINGLET_COLLECTIVES_COMMUNICATOR_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "collectives/collective_error.h"
#include "collectives/types.h"

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

  // Device-ordered allreduce in place, NCCL's shape, for communicators on
  // GPUs that can (OrdersOnDevice()): queued on the communicator's stream
  // after `after` (a cudaEvent_t the caller recorded, or null); `done` (a
  // cudaEvent_t of the caller's, or null) is recorded once the sums are in
  // place; returns without the host waiting for the device. WaitQueued()
  // waits for every queued call, failing the group after the timeout as a
  // blocking call does. Others throw CollectiveError.
  virtual bool OrdersOnDevice() const { return false; }
  virtual void QueueAllReduce(void* buffer, size_t count, DataType type,
                              ReduceOp op, void* after, void* done) {
    (void)buffer, (void)count, (void)type, (void)op, (void)after, (void)done;
    throw CollectiveError("the " + backend() +
                          " backend cannot queue a call on the device; call "
                          "AllReduce");
  }
  virtual void WaitQueued(const CallOptions& options = {}) { (void)options; }

  // Fails the group: calls in flight on every rank, and all later calls,
  // throw CollectiveError carrying `reason`.
  virtual void Abort(const std::string& reason) = 0;

  virtual CommStats stats() const = 0;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_COMMUNICATOR_H_
