#include "collectives/testing/tcp_processes.h"

#include <future>

#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::testing {

int FreePort() { return tcp::Socket::Listen(0).LocalPort(); }

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
