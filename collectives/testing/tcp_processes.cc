#include "collectives/testing/tcp_processes.h"

#include <future>
#include <random>

#include "collectives/api/collective_error.h"
#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::testing {

int FreePort() {
  // Below Linux's ephemeral range (32768-60999 by default), where the
  // system never hands a port to a connecting socket or to a listen on
  // port 0: no connection of a test running beside this one takes the
  // port between this call and the listen it is for.
  static std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> port(20000, 32767);
  for (int tries = 0; tries < 100; ++tries) {
    const int candidate = port(random);
    try {
      tcp::Socket::Listen(candidate);
      return candidate;
    } catch (const CollectiveError&) {
      // In use: another.
    }
  }
  return tcp::Socket::Listen(0).LocalPort();
}

tcp::LaunchInfo TorchrunLaunch(int process, int processes, int port) {
  tcp::LaunchInfo info;
  info.launcher = "torchrun";
  info.process = process;
  info.processes = processes;
  info.process_on_host = process;
  info.master_addr = "127.0.0.1";
  info.master_port = port;
  info.job_id = "127.0.0.1:" + std::to_string(port);
  return info;
}

std::vector<std::string> EveryProcess(int processes,
                                      const std::function<void(int)>& fn) {
  std::vector<std::future<void>> done;
  for (int p = 0; p < processes; ++p) {
    done.push_back(std::async(std::launch::async, fn, p));
  }
  std::vector<std::string> errors(processes);
  for (int p = 0; p < processes; ++p) {
    try {
      done[p].get();
    } catch (const std::exception& e) {
      errors[p] = e.what();
    }
  }
  return errors;
}

}  // namespace ringlet::collectives::testing
