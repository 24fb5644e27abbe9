#include "trainers/common/regroup.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "collectives/api/collective_error.h"
#include "trainers/common/job.h"

namespace ringlet::trainers {
namespace {

struct RegroupState {
  bool on = false;
  int regroups = 0;
  // The last two finished steps' states, newest first.
  std::shared_ptr<const Checkpoint> newest, before;
  bool pending = false;
  std::shared_ptr<const Checkpoint> resume;
  std::string records;  // One line per regroup so far.
};

RegroupState& State() {
  static RegroupState state;
  return state;
}

// "E S" of a kept step, "0 0" for none.
std::string PositionOf(const std::shared_ptr<const Checkpoint>& c) {
  if (c == nullptr) return "0 0";
  return std::to_string(c->position.epoch) + " " +
         std::to_string(c->position.steps);
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f s", s);
  return text;
}

// A joiner holds no state: it says "-1 -1 -1 -1".
constexpr char kNoState[] = "-1 -1 -1 -1";

struct Agreement {
  // The last step every process holding state finished ({0, 0}: none),
  // as (epoch, steps).
  std::pair<int, int64_t> step{1 << 30, 0};
  bool joiners = false;  // Some process holds none: it needs process 0's.
};

Agreement Agree(collectives::ProcessWorld& world, const std::string& mine) {
  Agreement a;
  for (const std::string& theirs : world.GatherFromProcesses(mine)) {
    if (theirs == kNoState) {
      a.joiners = true;
      continue;
    }
    std::istringstream in(theirs);
    std::pair<int, int64_t> newest;
    in >> newest.first >> newest.second;
    a.step = std::min(a.step, newest);
  }
  return a;
}

// Process 0 sends the agreed state to everyone (a joiner keeps it): its
// size, then its bytes. Collective.
std::shared_ptr<const Checkpoint> ShareWithJoiners(
    collectives::ProcessWorld& world,
    const std::shared_ptr<const Checkpoint>& state) {
  const std::string bytes =
      world.process() == 0 && state != nullptr ? EncodeCheckpoint(*state) : "";
  uint64_t size = bytes.size();
  world.BroadcastBytes(&size, sizeof(size));
  if (size == 0) return nullptr;
  std::string received = world.process() == 0 ? bytes : std::string(size, 0);
  world.BroadcastBytes(received.data(), size);
  return std::make_shared<const Checkpoint>(
      DecodeCheckpoint(received, "the state sent by process 0"));
}

}  // namespace

void SetRegroupOnProcessLoss(bool on) { State().on = on; }
bool RegroupOnProcessLoss() { return State().on; }

void KeepStepForRegroup(std::shared_ptr<const Checkpoint> step) {
  RegroupState& s = State();
  s.before = std::move(s.newest);
  s.newest = std::move(step);
  // Between steps every process asks whether one waits to join.
  const auto& world = JoinedWorld();
  if (world != nullptr && world->JoinersWaiting()) {
    throw MembershipChange("a process started later asks to join the job");
  }
}

bool RegroupAfterFailure(const std::string& program,
                         const std::exception& failure) {
  RegroupState& s = State();
  std::shared_ptr<collectives::ProcessWorld>& world = JoinedWorld();
  const bool joining =
      dynamic_cast<const MembershipChange*>(&failure) != nullptr;
  // One process alone has nobody to lose, but may take in a joiner.
  if (!s.on || world == nullptr || (world->processes() == 1 && !joining) ||
      dynamic_cast<const collectives::CollectiveError*>(&failure) == nullptr) {
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  const bool leader = world->process() == 0;
  const std::string why_not = joining ? "" : world->WhyNoRegroup();
  if (!why_not.empty()) {
    std::cerr << program << ": cannot regroup: " << why_not << std::endl;
    return false;
  }
  const int was = world->processes();
  const int local_ranks = world->local_ranks();
  if (leader) {
    std::cout << program << ": " << failure.what()
              << (joining ? "; regrouping with it"
                          : "; regrouping the processes still alive")
              << std::endl;
  }
  std::shared_ptr<collectives::ProcessWorld> regrouped =
      world->Regroup(local_ranks);
  world = regrouped;
  if (!leader && world->process() == 0) {
    // Process 0 was lost and the store named this process the new host.
    std::cout << program << ": " << failure.what()
              << "; regrouped the processes still alive as the new host"
              << std::endl;
  }
  ++s.regroups;
  // The last step every process finished: each holds it as its newest or
  // the one before (no process gets two steps ahead of another).
  const std::string mine = PositionOf(s.newest) + " " + PositionOf(s.before);
  const Agreement agreement = Agree(*world, mine);
  const std::pair<int, int64_t> agreed = agreement.step;
  s.resume = nullptr;
  int64_t recomputed = 0;
  if (agreed.first > 0) {
    for (const auto& kept : {s.newest, s.before}) {
      if (kept != nullptr && kept->position.epoch == agreed.first &&
          kept->position.steps == agreed.second) {
        s.resume = kept;
        break;
      }
    }
    if (s.resume == nullptr) {
      throw collectives::CollectiveError(
          "after the regroup, process " + std::to_string(world->process()) +
          " does not hold epoch " + std::to_string(agreed.first) + ", step " +
          std::to_string(agreed.second) + ", the last step every process " +
          "finished (it holds " + mine + ")");
    }
    recomputed = s.resume == s.newest ? 0 : 1;
  }
  if (agreement.joiners) ShareWithJoiners(*world, s.resume);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  const int epoch = agreed.first > 0 ? agreed.first : 1;
  const int64_t step = agreed.first > 0 ? agreed.second : 0;
  if (world->process() == 0) {
    std::cout << program << ": regrouped: " << world->processes()
              << (world->processes() > was ? " processes, " : " of ") << was
              << (world->processes() > was ? " before" : " processes") << " ("
              << world->size() << " devices) go on from epoch " << epoch
              << ", step " << step << " (regrouped in " << Seconds(seconds)
              << ")" << std::endl;
  }
  nlohmann::ordered_json r = {{"membership", s.regroups},
                              {"processes", world->processes()},
                              {"processes_before", was},
                              {"devices", world->size()},
                              {"epoch", epoch},
                              {"step", step},
                              {"steps_recomputed", recomputed},
                              {"seconds", seconds},
                              {"reason", failure.what()}};
  // The metrics file is written afresh on the new job: every regroup's
  // record goes into it again.
  if (!s.records.empty()) s.records += "\n";
  s.records += nlohmann::ordered_json({{"regroup", r}}).dump();
  // Every process holds the agreed state now: a loss before the next step
  // finishes goes back to it.
  s.newest = s.resume;
  s.before = nullptr;
  s.pending = true;
  return true;
}

void JoinRunningJob(const std::string& program) {
  RegroupState& s = State();
  const auto& world = JoinedWorld();
  if (world == nullptr || !world->JoinedRunningJob()) return;
  const auto start = std::chrono::steady_clock::now();
  const std::pair<int, int64_t> agreed = Agree(*world, kNoState).step;
  s.resume = ShareWithJoiners(*world, nullptr);
  if (agreed.first > 0 && s.resume == nullptr) {
    throw collectives::CollectiveError(
        "process 0 sent no state to join the job with");
  }
  ++s.regroups;
  const int epoch = agreed.first > 0 ? agreed.first : 1;
  const int64_t step = agreed.first > 0 ? agreed.second : 0;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::cerr << program << ": joined a running job as process "
            << world->process() << " of " << world->processes() << ", at epoch "
            << epoch << ", step " << step << std::endl;
  nlohmann::ordered_json r = {{"membership", s.regroups},
                              {"processes", world->processes()},
                              {"joined", world->process()},
                              {"epoch", epoch},
                              {"step", step},
                              {"seconds", seconds}};
  s.records = nlohmann::ordered_json({{"joined", r}}).dump();
  s.newest = s.resume;
  s.pending = true;
}

bool TakeRegroupResume(std::shared_ptr<const Checkpoint>* resume,
                       std::string* record) {
  RegroupState& s = State();
  if (!s.pending) return false;
  s.pending = false;
  *resume = std::move(s.resume);
  *record = s.records;
  return true;
}

}  // namespace ringlet::trainers
