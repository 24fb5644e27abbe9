// Joins the job whatever launched this process: mpirun (MpiWorld), torchrun
// or Slurm's srun, or processes started by hand with torchrun's environment
// (TcpWorld), or none (this process is the job). What a program calls once,
// before it makes any group, so it runs unchanged under every launcher:
//
//   auto world = collectives::JoinLaunchedJob(devices.size());
//   options.processes = world;  // null alone: an in-process group
#ifndef RINGLET_COLLECTIVES_BACKENDS_LAUNCH_H_
#define RINGLET_COLLECTIVES_BACKENDS_LAUNCH_H_

#include <memory>
#include <string>

#include "collectives/backends/process_world.h"

namespace ringlet::collectives {

// "mpirun", "torchrun", "srun", or "" when no launcher started this
// process. Throws std::invalid_argument for a launcher's environment that
// is incomplete or malformed (naming the variable).
std::string Launcher();

// This process's index among those on its host, as its launcher says
// (OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK, SLURM_LOCALID); 0 alone.
int LocalRankFromLauncher();

// How many of the job's processes share this host, as its launcher says
// (OMPI_COMM_WORLD_LOCAL_SIZE, LOCAL_WORLD_SIZE, SLURM_STEP_TASKS_PER_NODE);
// 1 alone or where it does not say.
int ProcessesOnHostFromLauncher();

// How often the launcher restarted this job (TORCHELASTIC_RESTART_COUNT,
// SLURM_RESTART_COUNT); 0 for a first start and under mpirun.
int LauncherRestartCount();

// The job this process belongs to, holding `local_ranks` ranks here, or
// null when no launcher started it. Over TCP, RINGLET_HEARTBEAT_TIMEOUT_MS
// sets how long a process may fall silent before the job ends naming it
// (default 800; 0: no heartbeats). Collective over the job's processes.
// Throws CollectiveError when the processes cannot meet (with the reason),
// std::invalid_argument as Launcher() does.
std::shared_ptr<ProcessWorld> JoinLaunchedJob(int local_ranks);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_LAUNCH_H_
