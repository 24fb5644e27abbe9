// --on_process_loss=regroup: a job of several processes launched over TCP
// (torchrun's environment, srun, by hand) goes on when one of them dies or
// stops answering. Every process keeps the state of its last two finished
// steps in memory (every replica holds all of it) as checkpoints; after a
// lost process the living regroup (parallel/regroup.h) and the trainer
// starts again on the new, smaller job from the agreed step's state, as
// --resume would from a file: the lost ranks' shards fall to the others,
// and with --reproducible the parameters are those of the uninterrupted
// run. Without a store, process 0 hosts the rendezvous: its loss ends the
// job, and the error says so.
#ifndef RINGLET_TRAINERS_COMMON_REGROUP_H_
#define RINGLET_TRAINERS_COMMON_REGROUP_H_

#include <exception>
#include <memory>
#include <string>

#include "trainers/common/checkpoints/checkpoint.h"

namespace ringlet::trainers {

// Turns regrouping on (PrepareRun, from the flag) for this process's job.
void SetRegroupOnProcessLoss(bool on);
bool RegroupOnProcessLoss();

// Keeps a finished step's state (the loop calls it after every step while
// regrouping is on); the last two are held.
void KeepStepForRegroup(std::shared_ptr<const Checkpoint> step);

// After `failure` ended a run of `program`: true when this process and the
// other living ones formed a new job (the next JoinTrainerJob returns it,
// TakeRegroupResume the state to go on from). False where regrouping is
// off, the failure is not a collective's, or the job cannot regroup (the
// reason is printed: process 0 was lost, heartbeats are off, mpirun).
bool RegroupAfterFailure(const std::string& program,
                         const std::exception& failure);

// On a process that joined a running job: takes part in the others'
// agreement, receives process 0's state and makes it the pending resume
// (TakeRegroupResume), with a line on stderr. Nothing elsewhere.
void JoinRunningJob(const std::string& program);

// The state agreed on by the last regroup (null: start from the
// beginning, as no step had finished everywhere), and the {"regroup": ...}
// metrics records of every regroup so far, one per line; false when no
// regroup is pending.
bool TakeRegroupResume(std::shared_ptr<const Checkpoint>* resume,
                       std::string* record);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_REGROUP_H_
