#include "collectives/backends/mpi/mpi_transport.h"

#include <limits>
#include <string>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives::mpi {

MpiTransport::MpiTransport(std::shared_ptr<MpiWorld> world,
                           std::shared_ptr<host::HostGroup> group,
                           MPI_Comm comm, int rank)
    : CrossProcessTransport(std::move(group), rank),
      world_(std::move(world)),
      comm_(comm) {}

MpiTransport::~MpiTransport() {
  for (PendingSend& send : pending_) {
    for (MPI_Request& request : send.requests) Abandon(&request);
  }
}

void MpiTransport::Abandon(MPI_Request* request) {
  if (*request == MPI_REQUEST_NULL) return;
  try {
    world_->Call("MPI_Cancel", [&] { return MPI_Cancel(request); });
    // A cancelled receive that had not matched completes at once; give one
    // that had a moment, then free it either way.
    const Clock::time_point until =
        Clock::now() + std::chrono::milliseconds(100);
    if (!world_->Wait(request, [&] { return Clock::now() >= until; })) {
      world_->Call("MPI_Request_free",
                   [&] { return MPI_Request_free(request); });
    }
  } catch (const CollectiveError&) {
    // Already failing; the first error is the one reported.
  }
}

bool MpiTransport::IsLocal(int peer) const {
  return world_->ProcessOf(peer) == world_->process();
}

void MpiTransport::BeginCall(const CallDesc& call,
                             std::chrono::milliseconds timeout) {
  CrossProcessTransport::BeginCall(call, timeout);
  timeout_ = timeout;
  deadline_ = Clock::now() + timeout;
}

void MpiTransport::SendRemote(int peer, const Envelope& envelope,
                              const void* src, size_t bytes) {
  if (bytes > static_cast<size_t>(std::numeric_limits<int>::max())) {
    Fail("rank " + std::to_string(rank()) + " " + Describe(call()) +
         ": a message of " + std::to_string(bytes) +
         " bytes is more than one MPI message can hold");
  }
  PendingSend& send = pending_.emplace_back();
  send.peer = peer;
  send.header.envelope = envelope;
  send.header.bytes = bytes;
  const int dest = world_->ProcessOf(peer);
  const int tag = Tag(rank(), peer);
  world_->Call("MPI_Isend (header)", [&] {
    return MPI_Isend(&send.header, sizeof(Header), MPI_BYTE, dest, tag, comm_,
                     &send.requests[0]);
  });
  if (bytes > 0) {
    world_->Call("MPI_Isend (payload)", [&] {
      return MPI_Isend(src, static_cast<int>(bytes), MPI_BYTE, dest, tag, comm_,
                       &send.requests[1]);
    });
  }
}

void MpiTransport::WaitOrFail(MPI_Request* request, int peer,
                              const char* what) {
  const bool done = world_->Wait(request, [&] {
    return group().aborted().load(std::memory_order_acquire) ||
           Clock::now() >= deadline_;
  });
  if (done) return;
  Abandon(request);
  ThrowIfAborted();
  Fail("rank " + std::to_string(rank()) + " " + Describe(call()) +
       ": timed out after " + std::to_string(timeout_.count()) +
       " ms waiting for rank " + std::to_string(peer) + " (process " +
       std::to_string(world_->ProcessOf(peer)) + ") " + what);
}

void MpiTransport::ReadHeader(int peer, Envelope* envelope, uint64_t* bytes) {
  Header& header = received_;
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Irecv (header)", [&] {
    return MPI_Irecv(&header, sizeof(Header), MPI_BYTE, world_->ProcessOf(peer),
                     Tag(peer, rank()), comm_, &request);
  });
  WaitOrFail(&request, peer, "to send");
  *envelope = header.envelope;
  *bytes = header.bytes;
}

void MpiTransport::ReadPayload(int peer, void* dst, size_t bytes) {
  if (bytes == 0) return;
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Irecv (payload)", [&] {
    return MPI_Irecv(dst, static_cast<int>(bytes), MPI_BYTE,
                     world_->ProcessOf(peer), Tag(peer, rank()), comm_,
                     &request);
  });
  WaitOrFail(&request, peer, "the rest of its message");
}

void MpiTransport::LeaveFailedCall() {
  CrossProcessTransport::LeaveFailedCall();
  // Sends to other processes still in flight are cancelled (or given a
  // moment and freed), so MPI is done with the caller's buffers as far as
  // it lets us know.
  for (PendingSend& send : pending_) {
    for (MPI_Request& request : send.requests) Abandon(&request);
  }
  pending_.clear();
}

void MpiTransport::WaitSends() {
  CrossProcessTransport::WaitSends();
  while (!pending_.empty()) {
    PendingSend& send = pending_.front();
    for (MPI_Request& request : send.requests) {
      if (request != MPI_REQUEST_NULL) {
        WaitOrFail(&request, send.peer, "to receive what this rank sent");
      }
    }
    pending_.pop_front();
  }
}

}  // namespace ringlet::collectives::mpi
