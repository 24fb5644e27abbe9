// The transport interface every collective algorithm is written against.
//
// A Transport is one rank's view of the links to its peers. It moves chunks
// and combines them into place; algorithms (ring.cc, naive.cc) decide which
// chunk goes where and never name a transport. Implementations:
//   transport/host  ranks are threads of one process, buffers in host memory
//   transport/cuda  ranks are GPUs of one process, peer copies and a kernel
//   mpi/mpi_transport  ranks are spread over processes (mpirun): MPI
//                   messages between them, host memory within one
//
// Contract, as in MPI's Isend: Send() returns at once and the memory it names
// must stay valid and unchanged until WaitSends() returns. Messages on one
// link arrive in the order they were sent. Every receive checks the sender's
// envelope against its own and throws CollectiveError naming both ranks'
// calls when they differ. Every wait ends by the call's deadline, or at once
// when the group is aborted, with a CollectiveError.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_TRANSPORT_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "collectives/api/types.h"
#include "collectives/transport/call_desc.h"

namespace ringlet::collectives {

using Clock = std::chrono::steady_clock;

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Starts a call: its description (for error messages) and how long its
  // waits may take in all.
  virtual void BeginCall(const CallDesc& call,
                         std::chrono::milliseconds timeout) = 0;

  // Offers `bytes` at `src` to `peer` under `envelope`.
  virtual void Send(int peer, const Envelope& envelope, const void* src,
                    size_t bytes) = 0;

  // Waits for `peer`'s next message, checks its envelope against `expected`,
  // and writes dst[i] = op(local[i], message[i]) for i < count (dst may be
  // local). With `finish` and op avg, the sum is divided by size(): the last
  // combination of an average.
  virtual void RecvReduce(int peer, const Envelope& expected, void* dst,
                          const void* local, size_t count, DataType type,
                          ReduceOp op, bool finish) = 0;

  // Waits for `peer`'s next message of `bytes`, checks its envelope, and
  // runs combine(message) while the payload may be read (in place where the
  // transport can): combinations the transport does not know, such as a
  // WireReduction's. Host memory only (see reads_on_host()).
  virtual void RecvCombine(
      int peer, const Envelope& expected, size_t bytes,
      const std::function<void(const void* message)>& combine) = 0;
  // Whether RecvCombine can hand payloads to host code (not where they
  // live in GPU memory).
  virtual bool reads_on_host() const { return true; }

  // Waits for `peer`'s next message, checks it, and copies it to dst.
  virtual void RecvCopy(int peer, const Envelope& expected, void* dst,
                        size_t bytes) = 0;

  // dst = src within this rank's own memory.
  virtual void CopyLocal(void* dst, const void* src, size_t bytes) = 0;

  // This rank's scratch memory of at least `bytes`, kept for later calls (no
  // allocation per call once it has grown to the largest size needed).
  virtual void* Scratch(size_t bytes) = 0;

  // How many messages one call may send on one link; algorithms choose their
  // segment counts to stay within it.
  virtual size_t max_messages_per_link() const = 0;

  // Returns once every message this rank sent has been consumed.
  virtual void WaitSends() = 0;
  // For a call that ends in an error, before the error reaches the caller:
  // aborts the group (if nothing has yet) and returns once no peer reads
  // this rank's memory any more (a peer that matched a message before the
  // failure finishes that read; none starts another), so the caller may
  // free its buffers as soon as the call has thrown.
  virtual void LeaveFailedCall() = 0;

  // Fails the whole group with `reason` (idempotent: the first reason wins).
  virtual void Abort(const std::string& reason) = 0;
  // Throws CollectiveError with the group's reason if it was aborted.
  virtual void ThrowIfAborted() const = 0;

  virtual uint64_t bytes_sent() const = 0;
  virtual uint64_t messages_sent() const = 0;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_TRANSPORT_TRANSPORT_H_
