// What a collective backend needs of a job's processes, whatever launched
// them: messages between any two ranks (the ring and naive algorithms run
// over them unchanged), a broadcast of bytes (NCCL's unique id), a gather
// (to check the job's GPUs), and the launcher's own collectives where it
// has any (MPI_Allreduce). MpiWorld is one; CreateGroup is written once,
// here, and each backend says from its own file what it does across
// processes (BackendSpec::processes).
#ifndef RINGLET_COLLECTIVES_BACKENDS_PROCESS_WORLD_H_
#define RINGLET_COLLECTIVES_BACKENDS_PROCESS_WORLD_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/process_group.h"
#include "collectives/backends/transport_communicator.h"
#include "collectives/transport/transport.h"

namespace ringlet::collectives {

class ProcessWorld : public ProcessGroup {
 public:
  // One Transport per local rank (local rank i at index i), reaching every
  // rank of the job, on channels of their own: one communicator group's.
  // Collective: every process calls it, in the same order.
  virtual std::vector<std::unique_ptr<Transport>> CreateTransports() = 0;
  // Copies `bytes` at `data` from process 0 to every process. Collective.
  virtual void BroadcastBytes(void* data, size_t bytes) = 0;
  // The launcher's own allreduce, one rank per process (local_ranks() must
  // be 1); null where the launcher has none.
  virtual std::unique_ptr<Communicator> CreateNativeCommunicator(
      const CommOptions& options) = 0;
  // The host's name, and this process's index among those on its host (the
  // launcher's local rank): where GPUs are counted from.
  virtual const std::string& host() const = 0;
  virtual int process_on_host() const = 0;
  // Ends this process with `exit_code` so that no other process is left
  // waiting for it: MPI_Abort ends them all; over TCP their next wait on
  // this one fails at once, naming it.
  [[noreturn]] virtual void AbortJob(int exit_code) = 0;
  // After a call failed because a process was lost: "" where the processes
  // still alive can go on as a new, smaller job (Regroup), else why not.
  virtual std::string WhyNoRegroup() const;
  // The processes still alive as a new job (collective over them); this
  // one is closed. Only where WhyNoRegroup() gave "".
  virtual std::shared_ptr<ProcessWorld> Regroup(int local_ranks);
  // Collective: true on every process when a process started later waits
  // to join (the next Regroup takes it in); false where none can.
  virtual bool JoinersWaiting() { return false; }
  // This process joined a job that was already running.
  virtual bool JoinedRunningJob() const { return false; }

  // The backend's communicators (BackendSpec::processes); on GPU ranks a
  // host-memory backend's go through host staging. Throws
  // std::invalid_argument for an unknown backend, CollectiveError when it
  // cannot run across these processes.
  std::vector<std::unique_ptr<Communicator>> CreateGroup(
      const std::string& backend, const CommOptions& options) final;

  // One device per local rank, held for every group created after.
  void SetLocalDevices(const std::vector<RankDevice>& devices) final;
  std::vector<RankDevice> local_devices() const final { return local_devices_; }

 protected:
  // A world's local ranks start in host memory (Join calls it).
  void ResetLocalDevices(int local_ranks) {
    local_devices_.assign(local_ranks, RankDevice::Host());
  }

 private:
  std::vector<RankDevice> local_devices_;
};

// A communicator per local rank over world.CreateTransports(), running
// `algorithms` (the first unless a call names another) on a thread of its
// own: the ring and naive backends across processes.
std::vector<std::unique_ptr<Communicator>> CreateTransportGroup(
    ProcessWorld& world, const AlgorithmList& algorithms,
    const CommOptions& options);

// True when every local rank of `world` is on a GPU, false when every one
// is in host memory; a mix is std::invalid_argument.
bool RanksOnGpus(const ProcessWorld& world);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_PROCESS_WORLD_H_
