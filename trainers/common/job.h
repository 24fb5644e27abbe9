// Where a trainer process stands in its job: alone (the usual `bazel run`),
// or one of the processes a launcher started (mpirun, torchrun, srun, or
// by hand with torchrun's environment), each with its own devices. Every
// process runs the same loop on the same batches; the first one (process
// 0) prints, writes the metrics and draws the plot.
#ifndef RINGLET_TRAINERS_COMMON_JOB_H_
#define RINGLET_TRAINERS_COMMON_JOB_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "collectives/api/process_group.h"
#include "collectives/backends/process_world.h"
#include "nn/device.h"

namespace ringlet::trainers {

struct TrainerJob {
  // The job's processes under a launcher; null when this process is the
  // job.
  std::shared_ptr<collectives::ProcessGroup> processes;
  std::string launcher;  // "mpirun", "torchrun", "srun"; "" alone.
  int process = 0;
  int num_processes = 1;
  int ranks = 1;  // Devices over the whole job.

  bool leader() const { return process == 0; }
  // `stream` on the leader, a stream that drops everything elsewhere.
  std::ostream& LeaderOnly(std::ostream& stream) const;
  // "[cpu:0, cpu:1]", or "2 processes x [cpu:0] (mpirun)", or where the
  // processes hold different devices "2 processes: [cpu:0] + [cpu:0,
  // cpu:1] (torchrun)". Collective over the job's processes.
  std::string Where(const std::vector<nn::Device>& devices) const;
};

// Joins the job this process was started in (collective: every process
// calls it once, with its own device count), or makes a job of this process
// alone. Throws collectives::CollectiveError when the processes cannot
// meet, std::invalid_argument for a launcher's malformed environment.
TrainerJob JoinTrainerJob(int local_devices);

// The job this process joined (null alone), for errors raised anywhere
// after it; a regroup replaces it.
std::shared_ptr<collectives::ProcessWorld>& JoinedWorld();

// This process's index in the job it joined (0 alone).
int JobProcess();
// For errors: "" alone, else " on process 1 of 2 (host h)".
std::string JobErrorContext();
// Ends this process with `exit_code`; in a job of several processes, so
// that none is left waiting for this one (MPI_Abort ends them all; over TCP
// the others fail at once, naming this process).
[[noreturn]] void EndJob(int exit_code);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_JOB_H_
