// This process's place in a job whose processes meet over TCP: started by
// torchrun, Slurm's srun, or by hand with torchrun's environment
// (launch_env.h). Process 0 hosts the rendezvous at MASTER_ADDR:MASTER_PORT
// (as torch's TCPStore does); every process tells it its ranks and the port
// it listens on, and gets back the job's layout. What ProcessWorld asks of
// a job then travels over TCP:
//   - each communicator group gets its own connection between every two
//     ranks of different processes (TcpTransport: the ring and naive
//     algorithms run over it unchanged), ranks of one process meet in host
//     memory;
//   - the small collectives of the job itself (BroadcastBytes for NCCL's
//     id, GatherFromProcesses, SumOverProcesses) go through process 0.
// Every wait has a deadline; a process that dies closes its connections,
// and the others fail at once with a line naming it; one that stops (no
// heartbeat for TcpWorldOptions::heartbeat_timeout) is named as soon. Without
// a store, process 0 is the one whose loss ends the job: no rendezvous is
// left to regroup at. With a store (TcpWorldOptions::store, etcd), the
// survivors of process 0 elect a new host through the store and go on.
#ifndef RINGLET_COLLECTIVES_BACKENDS_TCP_TCP_WORLD_H_
#define RINGLET_COLLECTIVES_BACKENDS_TCP_TCP_WORLD_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/backends/process_world.h"
#include "collectives/backends/tcp/heartbeats.h"
#include "collectives/backends/tcp/launch_env.h"
#include "collectives/backends/tcp/rendezvous_store.h"
#include "collectives/transport/tcp/socket.h"

namespace ringlet::collectives::tcp {

struct TcpWorldOptions {
  // How long the rendezvous, a group's connections and each of the job's
  // own collectives may wait for the slowest process (one that loads its
  // data while the others wait, say).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
  // Heartbeats (heartbeats.h): how often, and the silence after which a
  // process counts as stopped and every wait on the job ends naming it
  // (0: no heartbeats, waits end at their deadlines). Eight beats missed:
  // a stopped process is named within 1 s, and a loaded machine's
  // scheduling hiccups (tens of ms) stay far below it.
  std::chrono::milliseconds heartbeat_interval{100};
  std::chrono::milliseconds heartbeat_timeout{800};
  // Where the job's rendezvous is, outliving any one process (etcd;
  // RINGLET_RENDEZVOUS_STORE): null for none. Every process of a job is
  // given the same one.
  std::shared_ptr<RendezvousStore> store;
};

class TcpWorld : public ProcessWorld,
                 public std::enable_shared_from_this<TcpWorld> {
 public:
  // Meets the job's other processes: this one holds `local_ranks` ranks,
  // after those of the processes before it. Collective: every process of
  // the launch calls it once. Throws CollectiveError when the rendezvous
  // fails (a process missing at the deadline, two claiming one index,
  // processes that disagree on the job's size) on every process that got
  // that far, with the reason. With a store, a process 0 started after the
  // job went on without its first one joins that job as a joiner does.
  static std::shared_ptr<TcpWorld> Join(const LaunchInfo& launch,
                                        int local_ranks,
                                        const TcpWorldOptions& options = {});
  ~TcpWorld() override;

  int process() const override { return process_; }
  int processes() const override { return static_cast<int>(table_.size()); }
  int first_rank() const override { return table_[process_].first_rank; }
  int local_ranks() const override { return table_[process_].local_ranks; }
  int size() const override { return size_; }
  const std::string& host() const override { return table_[process_].host; }
  int process_on_host() const override { return launch_.process_on_host; }
  const LaunchInfo& launch() const { return launch_; }
  // The process holding global rank `rank`.
  int ProcessOf(int rank) const;

  std::vector<std::unique_ptr<Transport>> CreateTransports() override;
  void BroadcastBytes(void* data, size_t bytes) override;
  // TCP has no allreduce of its own: null (the mpi backend says so).
  std::unique_ptr<Communicator> CreateNativeCommunicator(
      const CommOptions& options) override;
  void SumOverProcesses(double* values, size_t count) override;
  std::vector<std::string> GatherFromProcesses(
      const std::string& mine) override;
  [[noreturn]] void AbortJob(int exit_code) override;

  // After the job failed (a call threw, health() failed): "" when the
  // processes still alive can regroup, else why not (process 0, the
  // rendezvous's host, was lost and the job has no store). Waits up to the
  // heartbeat timeout for the heartbeats to name the lost process.
  std::string WhyNoRegroup() const override;
  // The processes still alive meet again at process 0 (collective over
  // them, each calling it once WhyNoRegroup gave ""): those that died or
  // stopped answering are left out, the others keep their order and are
  // numbered from 0, process 0 first. When process 0 was lost, the first
  // survivor to claim the next membership in the store hosts it and is the
  // new process 0, the others following in their old order. `old` is
  // closed; its groups must be gone. Throws CollectiveError as Join does.
  std::shared_ptr<ProcessWorld> Regroup(int local_ranks) override {
    return Regroup(*this, local_ranks);
  }
  static std::shared_ptr<TcpWorld> Regroup(TcpWorld& old, int local_ranks);
  // Process 0 keeps the rendezvous open while the job runs: a process
  // started later with the launch's environment waits there. Collective:
  // true on every process when one is waiting (process 0 asks, then
  // broadcasts), and the next Regroup takes it in, after the others.
  bool JoinersWaiting() override;
  // This process joined a job already running (its state comes from the
  // others).
  bool JoinedRunningJob() const override { return joined_running_; }
  // How often the job regrouped before this membership (0: as launched).
  uint32_t generation() const { return generation_; }

  // The job's failure as every wait sees it (a stopped or dead process).
  const JobHealth& health() const { return *health_; }
  // This process stops beating, as a stopped one does, and is woken again
  // (for tests).
  void PauseHeartbeatsForTest() {
    if (heartbeats_) heartbeats_->Pause();
  }
  void ResumeHeartbeatsForTest() {
    if (heartbeats_) heartbeats_->Resume();
  }

  // "process 1 (host h)", "rank 3 (process 1, host h)": names in errors.
  std::string ProcessName(int process) const;
  std::string RankName(int rank) const;

 private:
  struct Member {
    int local_ranks = 0;
    int first_rank = 0;
    int data_port = 0;
    std::string address;  // Where its data port is reached.
    std::string host;     // Its own name for itself.
  };
  TcpWorld() = default;

  // `old`: the membership being regrouped, null at the launch; this
  // process is its process old->process_ (its process 0 unless that was
  // lost).
  void HostRendezvous(int local_ranks, Clock::time_point deadline,
                      TcpWorld* old);
  // With a store, the store names each regroup's host: the first claim of
  // the next membership wins and every process follows it (process 0, or
  // a survivor of process 0 when it was lost). A process cut off from the
  // others but not from the store therefore cannot form a job of its own
  // beside theirs.
  static std::shared_ptr<TcpWorld> RegroupThroughStore(
      TcpWorld& old, std::shared_ptr<TcpWorld> world, int local_ranks,
      Clock::time_point deadline);
  // Closes `old` and joins the regroup hosted by its process `host` at
  // rendezvous_address_:rendezvous_port_.
  void FollowRegroupHost(TcpWorld& old, int host, int local_ranks,
                         Clock::time_point deadline);
  // Process 0 is gone, as this process's heartbeats know it.
  bool LostProcess0() const;
  // Keys of this job in the store: "/ringlet/<job id>/<token>/<what>".
  std::string StoreKey(const std::string& what) const;
  // Where a process started later finds the job's rendezvous host.
  std::string CurrentKey() const;
  // The ranks' numbering and the heartbeats, once the table is known.
  void Start(Clock::time_point deadline);
  // Stops the heartbeats and closes every connection.
  void Close();
  void StartHeartbeats(Clock::time_point deadline);
  // Gives up a wait once the job has failed.
  GiveUp Unhealthy() const;
  // Meets the rendezvous at rendezvous_address_:rendezvous_port_, or over
  // `connected`.
  void JoinRendezvous(int local_ranks, Clock::time_point deadline,
                      std::optional<Socket> connected = std::nullopt);
  // For process 0 of a launch with a store: a connection to the host the
  // store names when that is not MASTER_ADDR:MASTER_PORT and answers (the
  // job went on after process 0 was lost), else none.
  std::optional<Socket> ConnectToMovedJob();
  // A connection to the place the store names for the job's rendezvous
  // when that is not rendezvous_address_:rendezvous_port_ and answers by
  // `deadline` (it becomes theirs), else none. Throws CollectiveError when
  // the store cannot be read.
  std::optional<Socket> ConnectToStoredPlace(Clock::time_point deadline);
  // For a process of generation 0 (the launch's, or one started later)
  // with a store: MASTER_ADDR:MASTER_PORT, or the host the store names
  // when process 0 was lost, whichever answers first.
  Socket ConnectToRendezvous(Clock::time_point deadline);
  // Frames of the job's own collectives: a u64 length, then the bytes.
  void WriteFrame(int process, const std::string& bytes,
                  Clock::time_point deadline);
  std::string ReadFrame(int process, Clock::time_point deadline);
  // The socket to `process` (process 0: to each other; others: to 0).
  const Socket& Control(int process) const;
  // An accepted link of group `group` from rank `from` to local rank `to`
  // (group 0: from process `from` to process 0), waiting for it and keeping
  // links of later groups that come first.
  Socket AcceptLink(uint32_t group, int from, int to,
                    Clock::time_point deadline);

  LaunchInfo launch_;
  TcpWorldOptions options_;
  int process_ = 0;
  uint32_t generation_ = 0;
  std::string token_;  // This run of the job, unique in the store.
  bool joined_running_ = false;
  std::optional<Socket> rendezvous_;  // Process 0's, while the job runs.
  // Where the other processes reached process 0's rendezvous.
  std::string rendezvous_address_;
  int rendezvous_port_ = 0;
  int size_ = 0;
  std::vector<Member> table_;
  std::vector<Socket> control_;  // Indexed by process.
  Socket data_listener_;
  std::mutex mu_;            // The job's own collectives, and group creation.
  uint32_t next_group_ = 1;  // 0: the heartbeats' connections.
  std::map<std::tuple<uint32_t, int, int>, Socket> early_links_;
  std::shared_ptr<JobHealth> health_ = std::make_shared<JobHealth>();
  std::unique_ptr<Heartbeats> heartbeats_;  // Last: stopped first.
};

}  // namespace ringlet::collectives::tcp

#endif  // RINGLET_COLLECTIVES_BACKENDS_TCP_TCP_WORLD_H_
