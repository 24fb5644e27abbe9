#include "trainers/common/job.h"

#include <cstdlib>
#include <iostream>

#include "collectives/backends/launch.h"

namespace ringlet::trainers {

std::shared_ptr<collectives::ProcessWorld>& JoinedWorld() {
  static std::shared_ptr<collectives::ProcessWorld> world;
  return world;
}

namespace {

class NullBuffer : public std::streambuf {
 protected:
  int overflow(int c) override { return traits_type::not_eof(c); }
};

}  // namespace

std::ostream& TrainerJob::LeaderOnly(std::ostream& stream) const {
  static NullBuffer buffer;
  static std::ostream null_stream(&buffer);
  return leader() ? stream : null_stream;
}

std::string TrainerJob::Where(const std::vector<nn::Device>& devices) const {
  const std::string mine = nn::ToString(devices);
  if (num_processes == 1 || processes == nullptr) return mine;
  const std::vector<std::string> all = processes->GatherFromProcesses(mine);
  bool same = true;
  for (const std::string& other : all) same &= other == mine;
  const std::string by = " (" + launcher + ")";
  if (same) {
    return std::to_string(num_processes) + " processes x " + mine + by;
  }
  // Processes with devices of their own: each one's, in process order.
  std::string where = std::to_string(num_processes) + " processes: ";
  for (size_t p = 0; p < all.size(); ++p) {
    where += (p > 0 ? " + " : "") + all[p];
  }
  return where + by;
}

TrainerJob JoinTrainerJob(int local_devices) {
  TrainerJob job;
  job.ranks = local_devices;
  // Joined once; a regroup (regroup.h) puts the new job in its place.
  auto world = JoinedWorld() != nullptr
                   ? JoinedWorld()
                   : collectives::JoinLaunchedJob(local_devices);
  if (world == nullptr) return job;
  JoinedWorld() = world;
  job.launcher = collectives::Launcher();
  job.processes = world;
  job.process = world->process();
  job.num_processes = world->processes();
  job.ranks = world->size();
  return job;
}

int JobProcess() {
  const auto& world = JoinedWorld();
  return world ? world->process() : 0;
}

std::string JobErrorContext() {
  const auto& world = JoinedWorld();
  if (!world || world->processes() == 1) return "";
  return " on process " + std::to_string(world->process()) + " of " +
         std::to_string(world->processes()) + " (host " + world->host() + ")";
}

void EndJob(int exit_code) {
  std::cout.flush();
  std::cerr.flush();
  const auto& world = JoinedWorld();
  if (world && world->processes() > 1) world->AbortJob(exit_code);
  std::exit(exit_code);
}

}  // namespace ringlet::trainers
