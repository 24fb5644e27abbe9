// The transport for a job spread over processes by mpirun: peers in this
// process are reached through host memory, peers in other processes
// through MPI point-to-point messages (CrossProcessTransport checks every
// header). Algorithms see one group of world->size() ranks and do not know
// which link is which.
//
// A message to another process is two MPI messages on the link's tag: a
// header (the envelope and the payload's size), then the payload, sent
// straight from the caller's buffer. The payload's receive is posted only
// once the header has been checked, so a mismatched call never truncates a
// message.
#ifndef RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_TRANSPORT_H_
#define RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_TRANSPORT_H_

#include <mpi.h>

#include <deque>
#include <memory>
#include <vector>

#include "collectives/backends/mpi/mpi_world.h"
#include "collectives/transport/host/cross_process_transport.h"

namespace ringlet::collectives::mpi {

class MpiTransport : public host::CrossProcessTransport {
 public:
  // `group` has world->size() ranks, local ones being this process's; `comm`
  // is this communicator group's own MPI communicator.
  MpiTransport(std::shared_ptr<MpiWorld> world,
               std::shared_ptr<host::HostGroup> group, MPI_Comm comm, int rank);
  ~MpiTransport() override;

  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  void WaitSends() override;
  void LeaveFailedCall() override;

 protected:
  bool IsLocal(int peer) const override;
  void SendRemote(int peer, const Envelope& envelope, const void* src,
                  size_t bytes) override;
  void ReadHeader(int peer, Envelope* envelope, uint64_t* bytes) override;
  void ReadPayload(int peer, void* dst, size_t bytes) override;

 private:
  struct Header {
    Envelope envelope;
    uint64_t bytes = 0;
  };
  struct PendingSend {
    int peer = 0;
    Header header;
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  };

  int Tag(int from, int to) const { return from * size() + to; }
  // Waits for `request`; on abort or deadline abandons it and fails.
  void WaitOrFail(MPI_Request* request, int peer, const char* what);
  // Cancels `request` and lets it go (after a failure).
  void Abandon(MPI_Request* request);

  std::shared_ptr<MpiWorld> world_;
  MPI_Comm comm_;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};
  std::deque<PendingSend> pending_;  // Stable addresses for MPI.
  Header received_;                  // The header being received.
};

}  // namespace ringlet::collectives::mpi

#endif  // RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_TRANSPORT_H_
