#include "parallel/regroup.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

namespace ringlet::parallel {
namespace {

// "E S" of a mark.
std::string Text(StepMark m) {
  return std::to_string(m.epoch) + " " + std::to_string(m.steps);
}

bool Before(StepMark a, StepMark b) {
  return std::make_pair(a.epoch, a.steps) < std::make_pair(b.epoch, b.steps);
}

bool Same(StepMark a, StepMark b) {
  return a.epoch == b.epoch && a.steps == b.steps;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", s);
  return text;
}

// A joiner holds no state: it says this.
constexpr char kNoState[] = "-1 -1 -1 -1";

struct Agreement {
  StepMark step{1 << 30, 0};  // The last step every state holder finished.
  bool joiners = false;       // Some process holds none: it needs process 0's.
};

Agreement Agree(collectives::ProcessWorld& world, const std::string& mine) {
  Agreement a;
  for (const std::string& theirs : world.GatherFromProcesses(mine)) {
    if (theirs == kNoState) {
      a.joiners = true;
      continue;
    }
    std::istringstream in(theirs);
    StepMark newest;
    in >> newest.epoch >> newest.steps;
    if (Before(newest, a.step)) a.step = newest;
  }
  return a;
}

}  // namespace

std::string ShareFromProcessZero(collectives::ProcessWorld& world,
                                 const std::string& bytes) {
  uint64_t size = world.process() == 0 ? bytes.size() : 0;
  world.BroadcastBytes(&size, sizeof(size));
  if (size == 0) return "";
  std::string received = world.process() == 0 ? bytes : std::string(size, 0);
  world.BroadcastBytes(received.data(), size);
  return received;
}

bool CanRegroup(const collectives::ProcessWorld* world,
                const std::exception& failure, const std::string& program) {
  const bool joining =
      dynamic_cast<const MembershipChange*>(&failure) != nullptr;
  // One process alone has nobody to lose, but may take in a joiner.
  if (world == nullptr || (world->processes() == 1 && !joining) ||
      dynamic_cast<const collectives::CollectiveError*>(&failure) == nullptr) {
    return false;
  }
  const std::string why_not = joining ? "" : world->WhyNoRegroup();
  if (!why_not.empty()) {
    std::cerr << program << ": cannot regroup: " << why_not << std::endl;
    return false;
  }
  return true;
}

Regrouped RegroupLiving(collectives::ProcessWorld& world,
                        const std::string& program,
                        const std::exception& failure, int membership,
                        StepMark newest, StepMark before,
                        const std::function<std::string(int kept)>& encode) {
  const auto start = std::chrono::steady_clock::now();
  const bool joining =
      dynamic_cast<const MembershipChange*>(&failure) != nullptr;
  const bool leader = world.process() == 0;
  const int was = world.processes();
  if (leader) {
    std::cout << program << ": " << failure.what()
              << (joining ? "; regrouping with it"
                          : "; regrouping the processes still alive")
              << std::endl;
  }
  Regrouped r;
  r.world = world.Regroup(world.local_ranks());
  collectives::ProcessWorld& now = *r.world;
  if (!leader && now.process() == 0) {
    // Process 0 was lost and the store named this process the new host.
    std::cout << program << ": " << failure.what()
              << "; regrouped the processes still alive as the new host"
              << std::endl;
  }
  // The last step every process finished: each holds it as its newest or
  // the one before.
  const std::string mine = Text(newest) + " " + Text(before);
  const Agreement agreement = Agree(now, mine);
  r.agreed = agreement.step;
  int64_t recomputed = 0;
  if (r.agreed.epoch > 0) {
    if (Same(newest, r.agreed)) {
      r.kept = 0;
    } else if (Same(before, r.agreed)) {
      r.kept = 1;
      recomputed = 1;
    } else {
      throw collectives::CollectiveError(
          "after the regroup, process " + std::to_string(now.process()) +
          " does not hold epoch " + std::to_string(r.agreed.epoch) + ", step " +
          std::to_string(r.agreed.steps) +
          ", the last step every process finished (it holds " + mine + ")");
    }
  } else {
    r.agreed = StepMark{};
  }
  if (agreement.joiners) {
    ShareFromProcessZero(
        now, now.process() == 0 && r.kept >= 0 ? encode(r.kept) : "");
  }
  const double seconds = SecondsSince(start);
  const int epoch = r.agreed.epoch > 0 ? r.agreed.epoch : 1;
  const int64_t step = r.agreed.steps;
  const bool grew = now.processes() > was;
  if (now.process() == 0) {
    std::cout << program << ": regrouped: " << now.processes()
              << (grew ? " processes, " : " of ") << was
              << (grew ? " before" : " processes") << " (" << now.size()
              << (now.size() == 1 ? " device" : " devices")
              << ") go on from epoch " << epoch << ", step " << step
              << " (regrouped in " << Seconds(seconds) << ")" << std::endl;
  }
  const nlohmann::ordered_json record = {{"membership", membership},
                                         {"processes", now.processes()},
                                         {"processes_before", was},
                                         {"devices", now.size()},
                                         {"epoch", epoch},
                                         {"step", step},
                                         {"steps_recomputed", recomputed},
                                         {"seconds", seconds},
                                         {"reason", failure.what()}};
  r.record = nlohmann::ordered_json({{"regroup", record}}).dump();
  return r;
}

JoinedJob JoinRunning(collectives::ProcessWorld& world,
                      const std::string& program, int membership) {
  const auto start = std::chrono::steady_clock::now();
  JoinedJob j;
  j.agreed = Agree(world, kNoState).step;
  if (j.agreed.epoch <= 0 || j.agreed.epoch == 1 << 30) j.agreed = StepMark{};
  j.state = ShareFromProcessZero(world, "");
  if (j.agreed.epoch > 0 && j.state.empty()) {
    throw collectives::CollectiveError(
        "process 0 sent no state to join the job with");
  }
  const int epoch = j.agreed.epoch > 0 ? j.agreed.epoch : 1;
  std::cerr << program << ": joined a running job as process "
            << world.process() << " of " << world.processes() << ", at epoch "
            << epoch << ", step " << j.agreed.steps << std::endl;
  const nlohmann::ordered_json record = {
      {"membership", membership},  {"processes", world.processes()},
      {"joined", world.process()}, {"epoch", epoch},
      {"step", j.agreed.steps},    {"seconds", SecondsSince(start)}};
  j.record = nlohmann::ordered_json({{"joined", record}}).dump();
  return j;
}

}  // namespace ringlet::parallel
