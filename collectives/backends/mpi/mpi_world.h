// This process's place in an mpirun launch: MPI started once per process,
// the job's ranks laid out over the processes, and the one lock every MPI
// call of ringlet takes.
//
// Every MPI call goes through Call() under a process-wide mutex and every
// wait is a loop of MPI_Test, so threads of one process can share MPI at
// MPI_THREAD_SERIALIZED, and each wait can give up at a deadline or an
// abort instead of blocking forever inside MPI.
#ifndef RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_WORLD_H_
#define RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_WORLD_H_

#include <mpi.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/process_world.h"

namespace ringlet::collectives::mpi {

using Clock = std::chrono::steady_clock;

// True when this process was started by mpirun (OpenMPI's or PMIx's
// environment is set), so a program knows to call MpiWorld::Join.
bool LaunchedByMpirun();

class MpiWorld : public ProcessWorld,
                 public std::enable_shared_from_this<MpiWorld> {
 public:
  // Starts MPI in this process (the first call only; it is finalised at
  // exit) and agrees with every other process on the layout: this process
  // holds `local_ranks` ranks, after those of the processes before it.
  // Collective: every process calls it, the same number of times. Throws
  // CollectiveError when MPI cannot start or local_ranks < 1 anywhere.
  static std::shared_ptr<MpiWorld> Join(int local_ranks);

  int process() const override { return process_; }
  int processes() const override { return processes_; }
  int first_rank() const override { return first_rank_[process_]; }
  int local_ranks() const override { return local_ranks_[process_]; }
  int size() const override { return size_; }
  // The process holding global rank `rank`, and its index there.
  int ProcessOf(int rank) const;
  int LocalIndexOf(int rank) const {
    return rank - first_rank_[ProcessOf(rank)];
  }
  const std::string& host() const override { return host_; }
  // OpenMPI's local rank (OMPI_COMM_WORLD_LOCAL_RANK); 0 without it.
  int process_on_host() const override;

  // Point to point over MPI between processes and host memory within one
  // (the ring and naive backends; tags name the link, so a ring needs
  // size() * size() of them).
  std::vector<std::unique_ptr<Transport>> CreateTransports() override;
  void BroadcastBytes(void* data, size_t bytes) override;
  // MPI_Allreduce (the mpi backend).
  std::unique_ptr<Communicator> CreateNativeCommunicator(
      const CommOptions& options) override;
  void SumOverProcesses(double* values, size_t count) override;
  std::vector<std::string> GatherFromProcesses(
      const std::string& mine) override;

  // Ends every process of the job with `exit_code` (MPI_Abort): for a
  // program that failed on one rank and must not leave the others waiting.
  [[noreturn]] void AbortJob(int exit_code) override;

  // A duplicate of MPI_COMM_WORLD, for one communicator group's messages
  // (freed by MPI_Finalize: groups are few and live as long as the job).
  MPI_Comm DupWorld();

  // Runs fn() under the MPI lock; fn makes MPI calls and returns their code.
  // Throws CollectiveError("<what>: <MPI's error string>") on failure.
  void Call(const char* what, const std::function<int()>& fn);
  // Tests `request` under the lock until it completes (true) or give_up()
  // returns true between tests (false; the request is still pending).
  bool Wait(MPI_Request* request, const std::function<bool()>& give_up);

 private:
  MpiWorld() = default;

  int process_ = 0;
  int processes_ = 1;
  int size_ = 0;
  std::vector<int> first_rank_;
  std::vector<int> local_ranks_;
  std::string host_;
};

}  // namespace ringlet::collectives::mpi

#endif  // RINGLET_COLLECTIVES_BACKENDS_MPI_MPI_WORLD_H_
