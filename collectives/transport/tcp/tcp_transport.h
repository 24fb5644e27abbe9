// The transport for a job whose processes reach each other over TCP
// (launched by torchrun, Slurm, or by hand): peers in this process through
// host memory, peers in other processes through one TcpLink each
// (CrossProcessTransport checks every header). Algorithms see one group
// and do not know which link is which, exactly as over MpiTransport.
//
// A peer whose process died is noticed at once (its connection closes);
// one that stopped answering, at the call's deadline.
// After a failed call every remote link is told why and closed, so peers in
// other processes fail at once too.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_TRANSPORT_H_

#include <memory>
#include <vector>

#include "collectives/transport/host/cross_process_transport.h"
#include "collectives/transport/tcp/job_health.h"
#include "collectives/transport/tcp/tcp_link.h"

namespace ringlet::collectives::tcp {

class TcpTransport : public host::CrossProcessTransport {
 public:
  // `group` has every rank of the job, local ones being this process's;
  // links[peer] is the connection to each rank of another process (null for
  // local ranks and this one); every wait also ends once `health` (the
  // job's, may be null) has failed, with its reason.
  TcpTransport(std::shared_ptr<host::HostGroup> group, int rank,
               std::vector<std::unique_ptr<TcpLink>> links,
               std::shared_ptr<const JobHealth> health = nullptr);

  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  void WaitSends() override;
  void LeaveFailedCall() override;

 protected:
  bool IsLocal(int peer) const override { return links_[peer] == nullptr; }
  void SendRemote(int peer, const Envelope& envelope, const void* src,
                  size_t bytes) override;
  void ReadHeader(int peer, Envelope* envelope, uint64_t* bytes) override;
  void ReadPayload(int peer, void* dst, size_t bytes) override;

 private:
  // Aborts the group with what went wrong on a remote link, and throws.
  [[noreturn]] void FailOn(const std::string& what);
  GiveUp Aborted();

  std::vector<std::unique_ptr<TcpLink>> links_;
  std::shared_ptr<const JobHealth> health_;
  Clock::time_point deadline_;
  std::chrono::milliseconds timeout_{0};
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_TRANSPORT_TCP_TCP_TRANSPORT_H_
