// The ProcessGroup of a job that is this one process: every rank is local
// (a thread per rank), there is nothing to sum or gather over processes.
// Code written against ProcessGroup then has one path for one process and
// for an mpirun job (collectives/backends/mpi), with no null checks.
#ifndef RINGLET_COLLECTIVES_IN_PROCESS_GROUP_H_
#define RINGLET_COLLECTIVES_IN_PROCESS_GROUP_H_

#include <memory>
#include <string>
#include <vector>

#include "collectives/api/process_group.h"
#include "collectives/collectives.h"

namespace ringlet::collectives {

class InProcessGroup : public ProcessGroup {
 public:
  // Rank i on devices[i] (all host, or all GPUs; see CreateGroup). Throws
  // std::invalid_argument for an empty list.
  explicit InProcessGroup(std::vector<RankDevice> devices);

  int process() const override { return 0; }
  int processes() const override { return 1; }
  int first_rank() const override { return 0; }
  int local_ranks() const override { return size(); }
  int size() const override { return static_cast<int>(devices_.size()); }

  void SetLocalDevices(const std::vector<RankDevice>& devices) override;
  std::vector<RankDevice> local_devices() const override { return devices_; }
  // CreateGroup(backend, devices, options) of collectives.h.
  std::vector<std::unique_ptr<Communicator>> CreateGroup(
      const std::string& backend, const CommOptions& options) override;
  // One process: the values are already the sums.
  void SumOverProcesses(double*, size_t) override {}
  std::vector<std::string> GatherFromProcesses(
      const std::string& mine) override {
    return {mine};
  }

 private:
  std::vector<RankDevice> devices_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_IN_PROCESS_GROUP_H_
