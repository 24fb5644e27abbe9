// Test helpers for TCP jobs with processes as threads: several TcpWorlds of
// one test process meet over loopback, each believing it is one process of
// a launch (collectives' TcpWorld tests, parallel's regroup tests).
#ifndef RINGLET_COLLECTIVES_TESTING_TCP_PROCESSES_H_
#define RINGLET_COLLECTIVES_TESTING_TCP_PROCESSES_H_

#include <functional>
#include <string>
#include <vector>

#include "collectives/backends/tcp/launch_env.h"

namespace ringlet::collectives::testing {

// A port nobody uses now, below the system's ephemeral range (so no
// connection of another test takes it before the listen it is for), as
// torchrun chooses MASTER_PORT.
int FreePort();

// Process `process` of `processes` as torchrun launches it, the rendezvous
// at 127.0.0.1:port.
tcp::LaunchInfo TorchrunLaunch(int process, int processes, int port);

// Runs fn(p) for every process p in [0, processes) on a thread of its own;
// returns each one's error ("" where none).
std::vector<std::string> EveryProcess(int processes,
                                      const std::function<void(int)>& fn);

}  // namespace ringlet::collectives::testing

#endif  // RINGLET_COLLECTIVES_TESTING_TCP_PROCESSES_H_
