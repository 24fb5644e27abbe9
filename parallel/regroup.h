// How the processes of a job launched over TCP (torchrun's environment,
// srun, by hand) go on after one of them is lost, or let in one started
// later, without a restart: the protocol, written once for the trainers'
// loop (trainers/common/regroup.h) and for programs of one's own
// (elastic_job.h). Each process keeps the state of its last two finished
// steps (every replica holds all of it; no process gets two steps ahead of
// another, as each step's sums wait for all); the living meet again
// (ProcessWorld::Regroup), agree on the last step every one of them
// finished, and a joiner receives that step's state from process 0. What a
// state is, and how it is kept, is the caller's: here a step is its mark
// and, on process 0 where a joiner needs it, its bytes.
#ifndef RINGLET_PARALLEL_REGROUP_H_
#define RINGLET_PARALLEL_REGROUP_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/process_world.h"

namespace ringlet::parallel {

// Thrown between steps when a process started later waits to join: every
// process regroups with it.
class MembershipChange : public collectives::CollectiveError {
 public:
  using collectives::CollectiveError::CollectiveError;
};

// A finished step: `steps` steps of epoch `epoch` (from 1) done. Epoch 0:
// no step (the run's start).
struct StepMark {
  int epoch = 0;
  int64_t steps = 0;
};

struct Regrouped {
  std::shared_ptr<collectives::ProcessWorld> world;  // The new job.
  // The last step every process finished (epoch 0: none did, start from
  // the beginning), and which of the caller's kept steps it is: 0 the
  // newest, 1 the one before, -1 none.
  StepMark agreed;
  int kept = -1;
  // {"regroup": {...}} for --metrics_out (processes before and after, the
  // step, steps computed again, seconds, the reason).
  std::string record;
};

// Whether RegroupLiving can survive `failure` on this process's job `world`
// (null: alone): a collective's failure in a job of several processes, or a
// MembershipChange, where world->WhyNoRegroup() is "". Where the world
// gives a reason it cannot, prints "<program>: cannot regroup: <why>".
bool CanRegroup(const collectives::ProcessWorld* world,
                const std::exception& failure, const std::string& program);

// After `failure` ended a step of this process's job `world` (a lost
// process, or a MembershipChange): the living regroup, agree on the last
// step every one of them finished, and process 0 sends its state, as
// `encode(kept)` gives it, to any joiner. Prints "<program>: regrouped: 2 of
// 3 processes ..." on process 0 of the new job. Throws CollectiveError when
// a process does not hold the agreed step. `membership` counts the
// regroups so far, this one included (the record's number). Collective
// over the living processes; only where world.WhyNoRegroup() is "" or
// failure is a MembershipChange.
Regrouped RegroupLiving(collectives::ProcessWorld& world,
                        const std::string& program,
                        const std::exception& failure, int membership,
                        StepMark newest, StepMark before,
                        const std::function<std::string(int kept)>& encode);

struct JoinedJob {
  StepMark agreed;     // Where the job goes on (epoch 0: its start).
  std::string state;   // Process 0's bytes of it ("" at the start).
  std::string record;  // {"joined": {...}}.
};

// On a process that joined a running job (world.JoinedRunningJob()): takes
// part in the others' agreement and receives process 0's state, with a line
// on stderr. Throws CollectiveError when process 0 sends none for a step
// past the start.
JoinedJob JoinRunning(collectives::ProcessWorld& world,
                      const std::string& program, int membership);

// Process 0's `bytes` on every process of `world` (its size, then its
// bytes). Collective.
std::string ShareFromProcessZero(collectives::ProcessWorld& world,
                                 const std::string& bytes);

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_REGROUP_H_
