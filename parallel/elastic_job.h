// What the trainers do to outlive their machines, for a program of one's
// own around DataParallel: a job launched over TCP (torchrun, srun, by
// hand with torchrun's environment) goes on without a process it loses,
// takes in one started later, and a job its launcher restarts resumes from
// its last checkpoint, on whatever number of processes it then has. With
// reproducible steps (DataParallelOptions::micro_shards) each ends with the
// uninterrupted run's parameters, bit for bit.
//
//   parallel::ElasticJob job(devices.size(), elastic);  // Joins the job.
//   return job.Run([&] {  // Runs again after a regroup.
//     options.processes = job.processes();
//     parallel::DataParallel dp(make_model, devices, options);
//     train_order.layout = dp.TrainLayout();
//     data::BatchLoader train(train_set, train_order);
//     const parallel::ElasticStart at = job.Resume(dp);
//     for (int64_t epoch = at.epoch; epoch < epochs; ++epoch) {
//       int64_t step = epoch == at.epoch ? at.step : 0;
//       double loss = epoch == at.epoch ? at.Sum(0) : 0;
//       train.StartEpoch(epoch, step);
//       while (train.Next(&batch)) {
//         loss += dp.TrainStep(batch.Local()).loss_sum;
//         job.StepDone(dp, epoch, ++step, {loss});
//       }
//     }
//     return 0;
//   });
//
// A lost process (SIGKILL, SIGSTOP past the heartbeat timeout, a closed
// socket) fails the step that waits for it with a CollectiveError on every
// other process; Run catches it, the living regroup (parallel/regroup.h)
// and Run calls the body again, whose Resume loads the last step every
// process finished (each keeps its last two in memory). Without a store
// (RINGLET_RENDEZVOUS_STORE=etcd://...) the loss of process 0, which hosts
// the rendezvous, ends the job, saying so. Under mpirun, or alone, Run just
// runs the body.
#ifndef RINGLET_PARALLEL_ELASTIC_JOB_H_
#define RINGLET_PARALLEL_ELASTIC_JOB_H_

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/backends/process_world.h"
#include "parallel/data_parallel.h"
#include "parallel/regroup.h"

namespace ringlet::parallel {

struct ElasticKeptStep;  // A finished step's state (elastic_job.cc).

struct ElasticOptions {
  std::string program = "train";  // Names the job's lines.
  // Go on without a lost process (and take in joiners); false: its loss
  // ends the job, as without an ElasticJob.
  bool regroup = true;
  // Process 0 writes the state here (safetensors: the state's tensors
  // under DataParallel::State's names, the step and sums in its metadata)
  // every `checkpoint_every` steps, on a thread of its own: the step waits
  // for the copy only. A process its launcher restarted
  // (TORCHELASTIC_RESTART_COUNT, SLURM_RESTART_COUNT above 0) resumes from
  // it; a first start writes it anew. "": none.
  std::string checkpoint;
  int64_t checkpoint_every = 0;
  // What makes the run this run (its data, seed, batch size, ...), by
  // name: written beside the state, and a restart resumes only a
  // checkpoint written with these, else std::invalid_argument names the
  // first that differs, with both values.
  std::map<std::string, std::string> settings;
};

// Where the body goes on from.
struct ElasticStart {
  int64_t epoch = 0;  // From 0, as data::BatchLoader::StartEpoch's.
  int64_t step = 0;   // Steps of `epoch` done.
  // The sums StepDone was given with that step (empty at the start).
  std::vector<double> sums;
  // sums[i], 0 where there is none.
  double Sum(size_t i) const { return i < sums.size() ? sums[i] : 0; }
};

class ElasticJob {
 public:
  // Joins the job this process was launched in (collectives::
  // JoinLaunchedJob), or makes a job of this process alone; a process
  // started later joins the running job and receives its state; a
  // restarted one reads options.checkpoint. Collective: every process
  // gives the same options, or std::invalid_argument names the one that
  // differs. Throws CollectiveError when the processes cannot meet,
  // std::runtime_error (data::DataError) for a checkpoint that cannot be
  // read.
  ElasticJob(int local_devices, ElasticOptions options);
  ~ElasticJob();
  ElasticJob(const ElasticJob&) = delete;
  ElasticJob& operator=(const ElasticJob&) = delete;

  // For DataParallelOptions::processes: the job as it is now (null alone).
  std::shared_ptr<collectives::ProcessGroup> processes() const {
    return world_;
  }
  int process() const { return world_ ? world_->process() : 0; }
  int num_processes() const { return world_ ? world_->processes() : 1; }
  bool leader() const { return process() == 0; }
  // The {"regroup": ...} and {"joined": ...} records so far, one a line
  // ("" when the membership never changed).
  const std::string& records() const { return records_; }

  // Returns what `body` returns. When a step fails because a process was
  // lost, or one waits to join, the living regroup and `body` runs again
  // (it makes its DataParallel anew with processes(), and calls Resume);
  // other failures, and a loss that cannot be survived (process 0's with
  // no store, or regroup off), are rethrown after a line saying why.
  int Run(const std::function<int()>& body);

  // Loads the state to go on from into `dp` (after a regroup, the state
  // kept in memory; after a launcher's restart or on a joiner, the one
  // received) and says where; the start where there is none. Throws
  // std::invalid_argument when the state's tensors are not dp's (another
  // model), naming the first that differs.
  ElasticStart Resume(DataParallel& dp);

  // After each step: `steps` of epoch `epoch` (from 0) done, with the
  // caller's running sums (restored by Resume). Keeps dp's state, writes
  // the checkpoint when due, and throws MembershipChange when a process
  // waits to join (Run regroups with it). Collective.
  void StepDone(DataParallel& dp, int64_t epoch, int64_t steps,
                std::vector<double> sums = {});

 private:
  using Kept = ElasticKeptStep;
  bool Regroup(const std::exception& failure);
  // Throws unless a checkpoint's settings are options_.settings.
  void CheckSameRun(const std::map<std::string, std::string>& written) const;
  void WriteCheckpoint(std::shared_ptr<const Kept> state);

  ElasticOptions options_;
  std::shared_ptr<collectives::ProcessWorld> world_;
  int memberships_ = 0;
  std::string records_;
  // The last two finished steps, newest first; what Resume loads.
  std::shared_ptr<const Kept> newest_, before_, resume_;
  int64_t steps_since_checkpoint_ = 0;
  std::future<void> writing_;  // The checkpoint being written.
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_ELASTIC_JOB_H_
