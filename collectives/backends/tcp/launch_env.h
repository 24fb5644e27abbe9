// Where this process stands in a job that a launcher other than mpirun
// started, read from the launcher's environment:
//   torchrun (and any "env://" launch): RANK, WORLD_SIZE, LOCAL_RANK,
//     MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RESTART_COUNT
//   Slurm's srun: SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, the
//     first host of SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST),
//     SLURM_RESTART_COUNT; MASTER_ADDR and MASTER_PORT override the host
//     and the port (29500, torch's default).
//   Any launcher: RINGLET_RENDEZVOUS_STORE, RINGLET_JOB_ID (below).
// torchrun's variables win where both are set (torchrun under srun). A job
// step's own variables are read, not the allocation's, so a program run
// straight from a batch script is a job of one process.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_LAUNCH_ENV_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_LAUNCH_ENV_H_

#include <functional>
#include <optional>
#include <string>

namespace ringlet::collectives::tcp {

struct LaunchInfo {
  std::string launcher;     // "torchrun" or "srun"
  int process = 0;          // RANK, SLURM_PROCID
  int processes = 1;        // WORLD_SIZE, SLURM_STEP_NUM_TASKS
  int process_on_host = 0;  // LOCAL_RANK, SLURM_LOCALID
  // LOCAL_WORLD_SIZE; this node's entry of SLURM_STEP_TASKS_PER_NODE. 0
  // where the launcher does not say.
  int processes_on_host = 0;
  std::string master_addr;  // Where process 0 hosts the rendezvous.
  // MASTER_PORT; beside it under torchrun 2's agent store; or
  // RINGLET_RENDEZVOUS_PORT. port_note says which where not MASTER_PORT.
  int master_port = 0;
  std::string port_note;
  int restart_count = 0;  // How often the launcher restarted the job.
  // Names the job in a rendezvous store: RINGLET_JOB_ID, else torchrun's
  // TORCHELASTIC_RUN_ID, else Slurm's SLURM_JOB_ID.SLURM_STEP_ID, else
  // MASTER_ADDR:MASTER_PORT.
  std::string job_id;
  // RINGLET_RENDEZVOUS_STORE ("etcd://host:port"): a store that outlives
  // any one process, so the job goes on when process 0 is lost. "": none.
  std::string store;
};

// Reads a variable; null where it is not set.
using GetEnv = std::function<const char*(const char*)>;

// The launch this environment describes, or nullopt when no launcher (or
// mpirun, which MpiWorld reads) started this process. Throws
// std::invalid_argument, naming the variable and what to set, for an
// environment that is incomplete or malformed.
std::optional<LaunchInfo> LaunchInfoFromEnv(const GetEnv& get_env);
// The same from this process's environment.
std::optional<LaunchInfo> LaunchInfoFromEnv();

// Entry `node` of a Slurm tasks-per-node list: "2(x3),1", node 3 -> 1.
// Throws std::invalid_argument for a list it cannot read or too short.
int TasksOnNode(const std::string& list, int node);

// The first host of a Slurm node list: "node[07-09,12],gpu1" -> "node07".
// Throws std::invalid_argument for a list it cannot read.
std::string FirstHostOfNodeList(const std::string& list);

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_LAUNCH_ENV_H_
