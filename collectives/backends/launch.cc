#include "collectives/backends/launch.h"

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "collectives/backends/mpi/mpi_world.h"
#include "collectives/backends/tcp/etcd_store.h"
#include "collectives/backends/tcp/launch_env.h"
#include "collectives/backends/tcp/tcp_world.h"

namespace ringlet::collectives {

std::string Launcher() {
  if (mpi::LaunchedByMpirun()) return "mpirun";
  const std::optional<tcp::LaunchInfo> launch = tcp::LaunchInfoFromEnv();
  return launch ? launch->launcher : "";
}

int LocalRankFromLauncher() {
  if (mpi::LaunchedByMpirun()) {
    const char* local_rank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    return local_rank ? std::atoi(local_rank) : 0;
  }
  const std::optional<tcp::LaunchInfo> launch = tcp::LaunchInfoFromEnv();
  return launch ? launch->process_on_host : 0;
}

int ProcessesOnHostFromLauncher() {
  if (mpi::LaunchedByMpirun()) {
    const char* local_size = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    return local_size ? std::max(1, std::atoi(local_size)) : 1;
  }
  const std::optional<tcp::LaunchInfo> launch = tcp::LaunchInfoFromEnv();
  return launch ? std::max(1, launch->processes_on_host) : 1;
}

int LauncherRestartCount() {
  if (mpi::LaunchedByMpirun()) return 0;
  const std::optional<tcp::LaunchInfo> launch = tcp::LaunchInfoFromEnv();
  return launch ? launch->restart_count : 0;
}

std::shared_ptr<ProcessWorld> JoinLaunchedJob(int local_ranks) {
  if (mpi::LaunchedByMpirun()) return mpi::MpiWorld::Join(local_ranks);
  const std::optional<tcp::LaunchInfo> launch = tcp::LaunchInfoFromEnv();
  if (!launch) return nullptr;
  tcp::TcpWorldOptions options;
  if (const char* ms = std::getenv("RINGLET_HEARTBEAT_TIMEOUT_MS")) {
    char* end = nullptr;
    const long value = std::strtol(ms, &end, 10);
    if (end == ms || *end != '\0' || value < 0 || value > 3600000) {
      throw std::invalid_argument(
          std::string("RINGLET_HEARTBEAT_TIMEOUT_MS='") + ms +
          "' is not a whole number of milliseconds from 0 (no heartbeats) "
          "to 3600000");
    }
    options.heartbeat_timeout = std::chrono::milliseconds(value);
  }
  options.store = tcp::StoreFromSetting(launch->store);
  return tcp::TcpWorld::Join(*launch, local_ranks, options);
}

}  // namespace ringlet::collectives
