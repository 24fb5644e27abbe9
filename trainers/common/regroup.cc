#include "trainers/common/regroup.h"

#include <utility>

#include "parallel/regroup.h"
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

parallel::StepMark MarkOf(const std::shared_ptr<const Checkpoint>& c) {
  if (c == nullptr) return {};
  return {c->position.epoch, c->position.steps};
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
    throw parallel::MembershipChange(
        "a process started later asks to join the job");
  }
}

bool RegroupAfterFailure(const std::string& program,
                         const std::exception& failure) {
  RegroupState& s = State();
  std::shared_ptr<collectives::ProcessWorld>& world = JoinedWorld();
  if (!s.on || !parallel::CanRegroup(world.get(), failure, program)) {
    return false;
  }
  const parallel::Regrouped r = parallel::RegroupLiving(
      *world, program, failure, ++s.regroups, MarkOf(s.newest),
      MarkOf(s.before), [&s](int kept) {
        return EncodeCheckpoint(kept == 0 ? *s.newest : *s.before);
      });
  world = r.world;
  s.resume = r.kept == 0 ? s.newest : r.kept == 1 ? s.before : nullptr;
  // The metrics file is written afresh on the new job: every regroup's
  // record goes into it again.
  if (!s.records.empty()) s.records += "\n";
  s.records += r.record;
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
  const parallel::JoinedJob j =
      parallel::JoinRunning(*world, program, ++s.regroups);
  s.resume = j.state.empty()
                 ? nullptr
                 : std::make_shared<const Checkpoint>(DecodeCheckpoint(
                       j.state, "the state sent by process 0"));
  s.records = j.record;
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
