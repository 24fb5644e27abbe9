// How the ranks of a job are spread over processes: one process holding
// every rank (the default, no launcher), or one process per mpirun slot,
// each holding the ranks of its own devices (collectives/backends/mpi).
//
// Global rank r of a job lives in exactly one process; this process holds
// ranks [first_rank(), first_rank() + local_ranks()). Programs written
// against this interface run unchanged with or without mpirun.
#ifndef RINGLET_COLLECTIVES_API_PROCESS_GROUP_H_
#define RINGLET_COLLECTIVES_API_PROCESS_GROUP_H_

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/rank_device.h"

namespace ringlet::collectives {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;

  virtual int process() const = 0;    // This process's index, from 0.
  virtual int processes() const = 0;  // How many processes the job has.
  virtual int first_rank() const = 0;
  virtual int local_ranks() const = 0;
  virtual int size() const = 0;  // Ranks over all processes.

  // Where this process's ranks run (local rank i on devices[i]): host
  // memory unless set, and then for every group created after. Throws
  // std::invalid_argument unless there is one device per local rank.
  virtual void SetLocalDevices(const std::vector<RankDevice>& devices) = 0;
  virtual std::vector<RankDevice> local_devices() const = 0;

  // A communicator per local rank, local rank i (global first_rank() + i) at
  // index i, for `backend`, on the local devices. Every process must create
  // its groups in the same order. Throws std::invalid_argument for an
  // unknown backend and CollectiveError when the backend cannot run here.
  virtual std::vector<std::unique_ptr<Communicator>> CreateGroup(
      const std::string& backend, const CommOptions& options) = 0;

  // values[i] = sum over processes of values[i], on every process. Called
  // by one thread per process, outside collective calls (for statistics).
  virtual void SumOverProcesses(double* values, size_t count) = 0;

  // Every process's `mine`, indexed by process, on every process: for
  // checking that the processes of a job agree (same flags, same data).
  // Called by one thread per process, outside collective calls.
  virtual std::vector<std::string> GatherFromProcesses(
      const std::string& mine) = 0;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_PROCESS_GROUP_H_
