#include "collectives/backends/tcp/tcp_world.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "collectives/api/collective_error.h"
#include "collectives/transport/host/host_group.h"
#include "collectives/transport/tcp/tcp_link.h"
#include "collectives/transport/tcp/tcp_transport.h"

namespace ringlet::collectives::tcp {
namespace {

constexpr uint32_t kHelloMagic = 0x52445a56;  // "RDZV"
constexpr uint32_t kLinkMagic = 0x4c494e4b;   // "LINK"
constexpr uint32_t kVersion = 3;
// The largest frame of the job's own collectives (a gathered JSON of every
// process's settings is a few KiB).
constexpr uint64_t kMaxFrame = uint64_t{1} << 30;

// Fields written one after another, little-endian as the host is (every
// process of a job runs the same build on the same kind of machine).
class Writer {
 public:
  template <typename T>
  void Put(T value) {
    bytes_.append(reinterpret_cast<const char*>(&value), sizeof(value));
  }
  void PutString(const std::string& s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    bytes_ += s;
  }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

class Reader {
 public:
  Reader(std::string bytes, std::string what)
      : bytes_(std::move(bytes)), what_(std::move(what)) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }
  std::string GetString() {
    const uint32_t n = Get<uint32_t>();
    Need(n);
    std::string s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }

 private:
  void Need(size_t n) const {
    if (bytes_.size() - at_ < n) {
      throw CollectiveError(what_ +
                            " is cut short: is another program "
                            "on that port?");
    }
  }
  const std::string bytes_;
  const std::string what_;
  size_t at_ = 0;
};

std::string HostName() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

void WriteBlob(const Socket& s, const std::string& bytes,
               Clock::time_point deadline, const std::string& who,
               const GiveUp& give_up = nullptr) {
  const uint64_t n = bytes.size();
  s.WriteAll(&n, sizeof(n), deadline, give_up, who);
  s.WriteAll(bytes.data(), bytes.size(), deadline, give_up, who);
}

std::string ReadBlob(const Socket& s, Clock::time_point deadline,
                     const std::string& who, const GiveUp& give_up = nullptr) {
  uint64_t n = 0;
  s.ReadAll(&n, sizeof(n), deadline, give_up, who);
  if (n > kMaxFrame) {
    throw CollectiveError("a message of " + std::to_string(n) + " bytes from " +
                          who + " is not ringlet's: is another program there?");
  }
  std::string bytes(n, '\0');
  s.ReadAll(bytes.data(), n, deadline, give_up, who);
  return bytes;
}

std::string Seconds(std::chrono::milliseconds ms) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g s", ms.count() / 1000.0);
  return text;
}

// Tells this run of a job from an earlier one of the same id in the store.
std::string NewToken() {
  std::random_device random;
  char text[40];
  std::snprintf(text, sizeof(text), "%08x%08x%08x%08x", random(), random(),
                random(), random());
  return text;
}

std::string StoreName(const std::shared_ptr<RendezvousStore>& store) {
  return store ? store->name() : "none";
}

// "<address> <port>" or "<index> <port>", as the store holds them.
std::pair<std::string, int> SplitPlace(const std::string& text,
                                       const std::string& what) {
  const size_t space = text.rfind(' ');
  if (space == std::string::npos || space == 0) {
    throw CollectiveError("the rendezvous store holds '" + text + "' as " +
                          what + ": not ringlet's");
  }
  try {
    return {text.substr(0, space), std::stoi(text.substr(space + 1))};
  } catch (const std::exception&) {
    throw CollectiveError("the rendezvous store holds '" + text + "' as " +
                          what + ": not ringlet's");
  }
}

}  // namespace

std::shared_ptr<TcpWorld> TcpWorld::Join(const LaunchInfo& launch,
                                         int local_ranks,
                                         const TcpWorldOptions& options) {
  if (local_ranks < 1) {
    throw CollectiveError("process " + std::to_string(launch.process) +
                          " offered " + std::to_string(local_ranks) +
                          " ranks; every process needs at least 1");
  }
  std::shared_ptr<TcpWorld> world(new TcpWorld());
  world->launch_ = launch;
  world->options_ = options;
  world->process_ = launch.process;
  world->rendezvous_address_ = launch.master_addr;
  world->rendezvous_port_ = launch.master_port;
  world->data_listener_ = Socket::Listen(0);
  world->ResetLocalDevices(local_ranks);
  const Clock::time_point deadline = Clock::now() + options.timeout;
  std::optional<Socket> moved;
  if (launch.process == 0 && options.store != nullptr) {
    moved = world->ConnectToMovedJob();
  }
  if (moved) {
    // Process 0 started again, after the job went on without it: it joins.
    world->JoinRendezvous(local_ranks, deadline, std::move(moved));
  } else if (launch.process == 0) {
    world->token_ = NewToken();
    world->HostRendezvous(local_ranks, deadline, nullptr);
  } else {
    world->JoinRendezvous(local_ranks, deadline);
  }
  world->Start(deadline);
  return world;
}

void TcpWorld::Start(Clock::time_point deadline) {
  for (Member& m : table_) {
    m.first_rank = size_;
    size_ += m.local_ranks;
  }
  StartHeartbeats(deadline);
}

std::string TcpWorld::WhyNoRegroup() const {
  if (processes() == 1) return "";
  if (heartbeats_ == nullptr) {
    return "heartbeats are off (RINGLET_HEARTBEAT_TIMEOUT_MS=0), so no "
           "process can tell who was lost";
  }
  // A failed call does not say whose fault it was; the heartbeats name the
  // lost process within their timeout (at once for a closed connection).
  const Clock::time_point until =
      Clock::now() + options_.heartbeat_timeout + options_.heartbeat_interval;
  while (health_->lost_process() < 0 && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (health_->lost_process() == process_) {
    return "the others counted this process as lost (nothing from it for " +
           Seconds(options_.heartbeat_timeout) +
           ": it was stopped, or its host or network hung) and went on "
           "without it";
  }
  if (LostProcess0() && options_.store == nullptr) {
    return ProcessName(0) +
           " was lost, and it hosts the job's rendezvous: no process of "
           "the job can go on without it (restart the job, e.g. under "
           "torchrun --max_restarts with --checkpoint_steps, or give it a "
           "store that outlives process 0: "
           "RINGLET_RENDEZVOUS_STORE=etcd://host:port)";
  }
  return "";
}

bool TcpWorld::LostProcess0() const {
  // Named first, or lost after another process was: either way gone.
  return process_ != 0 && (health_->lost_process() == 0 ||
                           (heartbeats_ != nullptr && heartbeats_->IsDead(0)));
}

std::string TcpWorld::StoreKey(const std::string& what) const {
  return "/ringlet/" + launch_.job_id + "/" + token_ + "/" + what;
}

std::string TcpWorld::CurrentKey() const {
  return "/ringlet/" + launch_.job_id + "/rendezvous";
}

std::shared_ptr<TcpWorld> TcpWorld::Regroup(TcpWorld& old, int local_ranks) {
  std::shared_ptr<TcpWorld> world(new TcpWorld());
  world->launch_ = old.launch_;
  world->options_ = old.options_;
  world->generation_ = old.generation_ + 1;
  world->token_ = old.token_;
  world->rendezvous_address_ = old.rendezvous_address_;
  world->rendezvous_port_ = old.rendezvous_port_;
  world->data_listener_ = Socket::Listen(0);
  world->ResetLocalDevices(local_ranks);
  const Clock::time_point deadline = Clock::now() + old.options_.timeout;
  if (old.options_.store != nullptr) {
    return RegroupThroughStore(old, std::move(world), local_ranks, deadline);
  }
  if (old.process_ == 0) {
    // Old links stay open while the others gather: whoever dies meanwhile
    // is known dead, not waited for.
    world->HostRendezvous(local_ranks, deadline, &old);
    old.Close();
  } else {
    world->FollowRegroupHost(old, 0, local_ranks, deadline);
  }
  world->Start(deadline);
  return world;
}

std::shared_ptr<TcpWorld> TcpWorld::RegroupThroughStore(
    TcpWorld& old, std::shared_ptr<TcpWorld> world, int local_ranks,
    Clock::time_point deadline) {
  // A survivor of process 0 offers to host, on a listener of its own; the
  // others offer process 0, which keeps its rendezvous open.
  const bool lost0 = old.LostProcess0();
  std::optional<Socket> listener;
  std::string mine = "0 " + std::to_string(old.rendezvous_port_);
  if (lost0) {
    listener.emplace(Socket::Listen(0));
    mine = std::to_string(old.process_) + " " +
           std::to_string(listener->LocalPort());
  }
  std::pair<std::string, int> host;
  try {
    host = SplitPlace(
        old.options_.store->PutIfAbsent(
            old.StoreKey("g" + std::to_string(world->generation_) + "/host"),
            mine),
        "the regroup's host");
  } catch (const CollectiveError& e) {
    throw CollectiveError(
        "the rendezvous store decides who hosts the regroup, and this "
        "process cannot reach it (" +
        std::string(e.what()) +
        "): those that reach it go on without this one");
  }
  int index = -1;
  try {
    index = std::stoi(host.first);
  } catch (const std::exception&) {
  }
  if (index < 0 || index >= old.processes()) {
    throw CollectiveError("the rendezvous store names process " + host.first +
                          " of " + std::to_string(old.processes()) +
                          " as the regroup's host");
  }
  if (index == old.process_) {
    if (listener) world->rendezvous_.emplace(std::move(*listener));
    world->HostRendezvous(local_ranks, deadline, &old);
    old.Close();
  } else {
    if (index != 0) {
      world->rendezvous_address_ = old.table_[index].address;
      world->rendezvous_port_ = host.second;
    }
    world->FollowRegroupHost(old, index, local_ranks, deadline);
  }
  world->Start(deadline);
  return world;
}

void TcpWorld::FollowRegroupHost(TcpWorld& old, int host, int local_ranks,
                                 Clock::time_point deadline) {
  // Process 0, still beating, hears that this process leaves to regroup,
  // not that it died.
  if (host == 0 && old.heartbeats_ && !old.LostProcess0()) {
    old.heartbeats_->Leave(old.health_->reason());
  }
  const std::string host_name = old.ProcessName(host);
  old.Close();
  launch_.process = old.process_;
  launch_.processes = old.processes();
  // The host listens before anyone is told of it: a host that does not
  // answer at once is out of this process's reach.
  const Clock::time_point reach_by =
      std::min(deadline, Clock::now() + std::chrono::seconds(5));
  Socket socket;
  try {
    socket = Socket::Connect(rendezvous_address_, rendezvous_port_, reach_by,
                             "the regroup's host, " + host_name);
  } catch (const CollectiveError& e) {
    throw CollectiveError(std::string(e.what()) +
                          " (it was lost too, or this process is cut off "
                          "from the processes that go on)");
  }
  JoinRendezvous(local_ranks, deadline, std::move(socket));
}

bool TcpWorld::JoinersWaiting() {
  uint8_t waiting = 0;
  if (process_ == 0 && rendezvous_) {
    pollfd fd{rendezvous_->fd(), POLLIN, 0};
    waiting = ::poll(&fd, 1, 0) > 0 ? 1 : 0;
  }
  BroadcastBytes(&waiting, 1);
  return waiting != 0;
}

void TcpWorld::Close() {
  rendezvous_.reset();
  heartbeats_.reset();
  for (Socket& s : control_) s.Close();
  early_links_.clear();
  data_listener_.Close();
}

GiveUp TcpWorld::Unhealthy() const {
  return [health = health_] { return health->failed(); };
}

void TcpWorld::StartHeartbeats(Clock::time_point deadline) {
  const int n = processes();
  if (n == 1 || options_.heartbeat_timeout.count() <= 0) return;
  std::vector<Socket> links(n);
  std::vector<std::string> names(n);
  // Group 0's connections: each process to process 0's data port.
  if (process_ == 0) {
    for (int p = 1; p < n; ++p) {
      links[p] = AcceptLink(0, p, 0, deadline);
      names[p] = ProcessName(p);
    }
  } else {
    links[0] = Socket::Connect(table_[0].address, table_[0].data_port, deadline,
                               ProcessName(0));
    const uint32_t handshake[4] = {kLinkMagic, 0,
                                   static_cast<uint32_t>(process_), 0};
    links[0].WriteAll(handshake, sizeof(handshake), deadline, nullptr,
                      ProcessName(0));
    names[0] = ProcessName(0);
  }
  Heartbeats::OnLost on_lost;
  if (options_.store != nullptr && process_ != 0) {
    // When process 0 is lost, the regroup's host waits for the processes
    // that said so here: at once, even while this one computes a step.
    on_lost = [store = options_.store,
               key = StoreKey("g" + std::to_string(generation_ + 1) +
                              "/alive/" + std::to_string(process_))](int p) {
      if (p != 0) return;
      try {
        store->Put(key, "1");
      } catch (const CollectiveError&) {
        // The regroup's own calls to the store say what is wrong.
      }
    };
  }
  heartbeats_ = std::make_unique<Heartbeats>(
      process_, std::move(links), std::move(names), options_.heartbeat_interval,
      options_.heartbeat_timeout, health_.get(), std::move(on_lost));
}

TcpWorld::~TcpWorld() {
  // The beats stop before the connections they watch close.
  heartbeats_.reset();
}

void TcpWorld::HostRendezvous(int local_ranks, Clock::time_point deadline,
                              TcpWorld* old) {
  // A regroup waits for the old job's processes that are not dead, a first
  // rendezvous for the launch's. This process is `self` of them.
  const int n = old != nullptr ? old->processes() : launch_.processes;
  const int self = old != nullptr ? old->process_ : 0;
  const bool without_process0 = self != 0;
  std::vector<Member> members(n);
  std::vector<Socket> peers(n);
  members[self] = {local_ranks, 0, data_listener_.LocalPort(), "", HostName()};
  std::vector<bool> arrived(n, false);
  arrived[self] = true;
  // Process 0 was lost: the survivors said so in the store, from their
  // heartbeats, within a heartbeat timeout of this process.
  const Clock::time_point said_by = Clock::now() + options_.heartbeat_timeout +
                                    2 * options_.heartbeat_interval;
  // Nobody watches a survivor's heartbeats now: one that said it was alive
  // and dies before it comes is counted lost after this.
  const Clock::time_point come_by =
      said_by + options_.heartbeat_timeout + std::chrono::seconds(5);
  std::set<int> said_alive;
  Clock::time_point next_look{};
  const auto dead = [&](int p) {
    if (old == nullptr) return false;
    if (!without_process0) {
      return old->heartbeats_ != nullptr && old->heartbeats_->IsDead(p);
    }
    if (p == 0) return true;
    const Clock::time_point now = Clock::now();
    if (now < said_by) return false;
    if (now >= next_look) {
      next_look = now + std::chrono::milliseconds(50);
      try {
        const std::string prefix =
            StoreKey("g" + std::to_string(generation_) + "/alive/");
        for (const auto& [key, value] : options_.store->List(prefix)) {
          said_alive.insert(std::atoi(key.c_str() + prefix.size()));
        }
      } catch (const CollectiveError&) {
        // Those not yet known alive count as lost.
      }
    }
    return said_alive.count(p) == 0 || now >= come_by;
  };
  const auto waiting = [&] {
    std::vector<int> them;
    for (int p = 0; p < n; ++p) {
      if (!arrived[p] && !dead(p)) them.push_back(p);
    }
    return them;
  };
  std::vector<Socket> unplaced;  // Told the error that ends the rendezvous.
  std::string error;
  // A joiner that cannot join is told so alone; the job goes on.
  const auto refuse_alone = [&](Socket& peer, const std::string& why) {
    Writer refusal;
    refusal.Put<uint32_t>(0);
    refusal.PutString(why);
    try {
      WriteBlob(peer, refusal.bytes(),
                std::min(deadline, Clock::now() + std::chrono::seconds(1)),
                "a joining process");
    } catch (const CollectiveError&) {
    }
  };
  // Kept open while the job runs: a process started later knocks on it
  // (JoinersWaiting), and a regroup takes it over.
  std::optional<Socket>& listener = rendezvous_;
  if (listener) {
    // Opened for this regroup (process 0 was lost).
  } else if (old != nullptr && old->rendezvous_) {
    listener = std::move(old->rendezvous_);
  } else if (n > 1 || launch_.processes > 1) {
    try {
      listener.emplace(Socket::Listen(launch_.master_port));
    } catch (const CollectiveError& e) {
      if (launch_.port_note.empty()) throw;
      throw CollectiveError(e.what() + launch_.port_note);
    }
  }
  const int port = listener ? listener->LocalPort() : launch_.master_port;
  const std::string store_name = StoreName(options_.store);
  std::vector<Member> joiners;
  std::vector<Socket> joiner_peers;
  // Once the old members are in: the joiners already knocking.
  const auto knocking = [&] {
    if (old == nullptr || !listener) return false;
    pollfd fd{listener->fd(), POLLIN, 0};
    return ::poll(&fd, 1, 0) > 0;
  };
  while ((!waiting().empty() || knocking()) && error.empty()) {
    Socket peer;
    try {
      // A regroup looks at the heartbeats' verdicts as it waits.
      const Clock::time_point until =
          old != nullptr
              ? std::min(deadline, Clock::now() + std::chrono::milliseconds(20))
              : deadline;
      peer = listener->Accept(until, nullptr, "the rendezvous");
    } catch (const CollectiveError&) {
      if (Clock::now() < deadline) continue;
      std::string missing;
      for (int p : waiting()) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(p);
      }
      error = "the " + std::string(old ? "regroup" : "rendezvous") +
              " on port " + std::to_string(port) + " timed out after " +
              Seconds(options_.timeout) + ": " +
              (waiting().size() == 1 ? "process " : "processes ") + missing +
              " of " + std::to_string(n) +
              (old ? " neither came back nor died"
                   : " never connected (did every process start, with the "
                     "same MASTER_ADDR and MASTER_PORT?)");
      break;
    }
    // A process says hello as it connects; a connection that does not
    // (a port scan, a probe) is dropped, not waited for.
    std::string hello_bytes;
    try {
      hello_bytes = ReadBlob(
          peer, std::min(deadline, Clock::now() + std::chrono::seconds(2)),
          "a joining process");
    } catch (const CollectiveError&) {
      continue;
    }
    Reader hello(hello_bytes, "a joining process's hello");
    uint32_t magic = 0, version = 0;
    try {
      magic = hello.Get<uint32_t>();
      version = hello.Get<uint32_t>();
    } catch (const CollectiveError&) {
    }
    if ((magic != kHelloMagic || version != kVersion) && old != nullptr) {
      // Not one of the job's members: a regroup goes on without it.
      refuse_alone(peer, "this is not ringlet's rendezvous version " +
                             std::to_string(kVersion));
      continue;
    }
    if (magic != kHelloMagic || version != kVersion) {
      error = "a program at " + peer.PeerAddress() +
              " sent something that is not ringlet's rendezvous (version " +
              std::to_string(version) + "; this is " +
              std::to_string(kVersion) + ")";
      unplaced.push_back(std::move(peer));
      break;
    }
    Member m;
    uint32_t generation = 0;
    int p = 0, their_n = 0;
    std::string their_store;
    try {
      generation = hello.Get<uint32_t>();
      p = hello.Get<int32_t>();
      their_n = hello.Get<int32_t>();
      m.local_ranks = hello.Get<int32_t>();
      m.data_port = hello.Get<int32_t>();
      m.host = hello.GetString();
      their_store = hello.GetString();
    } catch (const CollectiveError&) {
      refuse_alone(peer, "the rendezvous could not read this process's hello");
      continue;
    }
    m.address = peer.PeerAddress();
    if (old != nullptr && generation == 0) {
      // A process started after the launch, with its environment: it
      // joins at the end.
      if (m.local_ranks < 1) {
        refuse_alone(peer, "this process offered " +
                               std::to_string(m.local_ranks) +
                               " ranks; every process needs at least 1");
        continue;
      }
      if (their_store != store_name) {
        refuse_alone(peer, "this process has the rendezvous store " +
                               their_store + ", the job " + store_name +
                               ": give it the job's RINGLET_RENDEZVOUS_STORE");
        continue;
      }
      joiners.push_back(m);
      joiner_peers.push_back(std::move(peer));
      continue;
    }
    if (generation != generation_) {
      // Not ours to end the job over: a process of another membership.
      refuse_alone(peer, "the rendezvous's host is at membership " +
                             std::to_string(generation_) +
                             " of the job, this process at " +
                             std::to_string(generation) +
                             " (a process the others counted as lost cannot "
                             "rejoin)");
      continue;
    }
    if (their_n != n) {
      error = "process " + std::to_string(p) + " (host " + m.host +
              ") was launched for a job of " + std::to_string(their_n) +
              " processes, process 0 for " + std::to_string(n);
    } else if (p < 0 || p >= n || p == self) {
      error = "a process (host " + m.host + ") says it is process " +
              std::to_string(p) + " of " + std::to_string(n);
    } else if (arrived[p]) {
      error = "two processes say they are process " + std::to_string(p) +
              " (hosts " + members[p].host + " and " + m.host +
              "): is a process of an earlier launch still running?";
    } else if (m.local_ranks < 1) {
      error = "process " + std::to_string(p) + " offered " +
              std::to_string(m.local_ranks) +
              " ranks; every process needs at least 1";
    } else if (their_store != store_name) {
      error = "process " + std::to_string(p) + " (host " + m.host +
              ") has the rendezvous store " + their_store + ", process " +
              std::to_string(self) + " " + store_name +
              ": give every process the same RINGLET_RENDEZVOUS_STORE";
    }
    if (!error.empty()) {
      unplaced.push_back(std::move(peer));
      break;
    }
    arrived[p] = true;
    members[p] = m;
    peers[p] = std::move(peer);
  }
  // The new layout: this process, then those who came in their old order.
  std::vector<int> old_index;
  for (int k = -1; k < n; ++k) {
    const int p = k < 0 ? self : k;
    if ((k < 0 || p != self) && arrived[p]) {
      old_index.push_back(p);
      table_.push_back(members[p]);
      control_.push_back(std::move(peers[p]));
    }
  }
  for (size_t j = 0; j < joiners.size(); ++j) {
    old_index.push_back(-1);
    table_.push_back(joiners[j]);
    control_.push_back(std::move(joiner_peers[j]));
  }
  // A process started later finds the rendezvous through the store.
  if (error.empty() && options_.store != nullptr && listener &&
      (old == nullptr || without_process0)) {
    const std::string address =
        old == nullptr ? launch_.master_addr : old->table_[self].address;
    try {
      options_.store->Put(CurrentKey(), address + " " + std::to_string(port));
    } catch (const CollectiveError& e) {
      error = std::string("the rendezvous store: ") + e.what();
    }
  }
  // The layout, or the reason there is none, to everyone who came.
  Writer reply;
  reply.Put<uint32_t>(error.empty() ? 1 : 0);
  if (!error.empty()) {
    reply.PutString(error);
  } else {
    reply.Put<uint32_t>(generation_);
    reply.PutString(token_);
    reply.Put<int32_t>(static_cast<int32_t>(table_.size()));
    for (size_t q = 0; q < table_.size(); ++q) {
      const Member& m = table_[q];
      reply.Put<int32_t>(old_index[q]);
      reply.Put<int32_t>(m.local_ranks);
      reply.Put<int32_t>(m.data_port);
      reply.PutString(m.address);
      reply.PutString(m.host);
    }
  }
  for (size_t q = 1; q < control_.size(); ++q) {
    try {
      // Each its own index last: a joiner has none in the old job.
      Writer to(reply);
      to.Put<int32_t>(static_cast<int32_t>(q));
      WriteBlob(control_[q], to.bytes(), deadline,
                ProcessName(static_cast<int>(q)));
    } catch (const CollectiveError& e) {
      if (error.empty()) error = e.what();
    }
  }
  for (Socket& s : unplaced) {
    try {
      WriteBlob(s, reply.bytes(), deadline, "a joining process");
    } catch (const CollectiveError&) {
    }
  }
  if (!error.empty()) throw CollectiveError(error);
}

std::optional<Socket> TcpWorld::ConnectToStoredPlace(
    Clock::time_point deadline) {
  const std::optional<std::string> current = options_.store->Get(CurrentKey());
  if (!current) return std::nullopt;
  const auto [address, port] = SplitPlace(*current, "the rendezvous");
  if (address == rendezvous_address_ && port == rendezvous_port_) {
    return std::nullopt;
  }
  try {
    Socket s =
        Socket::Connect(address, port, deadline, "the job's rendezvous host");
    rendezvous_address_ = address;
    rendezvous_port_ = port;
    return s;
  } catch (const CollectiveError&) {
    return std::nullopt;  // Nobody there (yet, or any more).
  }
}

Socket TcpWorld::ConnectToRendezvous(Clock::time_point deadline) {
  while (true) {
    const auto slice = [&] {
      return std::min(deadline, Clock::now() + std::chrono::seconds(1));
    };
    try {
      return Socket::Connect(rendezvous_address_, rendezvous_port_, slice(),
                             "process 0, the rendezvous");
    } catch (const CollectiveError&) {
      if (Clock::now() >= deadline) throw;
    }
    // Nobody at MASTER_ADDR:MASTER_PORT: process 0 may be gone, and the
    // store knows where the job went.
    try {
      if (std::optional<Socket> s = ConnectToStoredPlace(slice())) {
        return std::move(*s);
      }
    } catch (const CollectiveError&) {
      // The store is down for now: MASTER_ADDR again, until the deadline.
    }
  }
}

std::optional<Socket> TcpWorld::ConnectToMovedJob() {
  try {
    // The place of an earlier run of this job id answers nobody.
    return ConnectToStoredPlace(Clock::now() + std::chrono::seconds(1));
  } catch (const CollectiveError& e) {
    throw CollectiveError(
        std::string("process 0 needs the rendezvous store at its start: ") +
        e.what());
  }
}

void TcpWorld::JoinRendezvous(int local_ranks, Clock::time_point deadline,
                              std::optional<Socket> connected) {
  const int n = launch_.processes;
  control_.resize(n);
  const std::string who = "process 0, the rendezvous";
  Socket& zero = control_[0];
  if (connected) {
    zero = std::move(*connected);
  } else if (generation_ == 0 && options_.store != nullptr) {
    zero = ConnectToRendezvous(deadline);
  } else {
    zero =
        Socket::Connect(rendezvous_address_, rendezvous_port_, deadline, who);
  }
  Writer hello;
  hello.Put<uint32_t>(kHelloMagic);
  hello.Put<uint32_t>(kVersion);
  hello.Put<uint32_t>(generation_);
  hello.Put<int32_t>(launch_.process);
  hello.Put<int32_t>(n);
  hello.Put<int32_t>(local_ranks);
  hello.Put<int32_t>(data_listener_.LocalPort());
  hello.PutString(HostName());
  hello.PutString(StoreName(options_.store));
  WriteBlob(zero, hello.bytes(), deadline, who);
  std::string bytes;
  try {
    // Process 0 gives up at its own deadline and says why: a little longer
    // here, so its reason (who never came) is what we report.
    bytes = ReadBlob(zero, deadline + std::chrono::seconds(2), who);
  } catch (const CollectiveError& e) {
    throw CollectiveError(std::string("the rendezvous failed: ") + e.what() +
                          " (every process must start within " +
                          Seconds(options_.timeout) + " of the first)");
  }
  Reader reply(bytes, "the rendezvous's reply");
  if (reply.Get<uint32_t>() != 1) {
    throw CollectiveError("the rendezvous failed: " + reply.GetString());
  }
  const uint32_t generation = reply.Get<uint32_t>();
  // A process started after the launch joins a job that has moved on.
  joined_running_ = generation_ == 0 && generation > 0;
  generation_ = generation;
  token_ = reply.GetString();
  const int count = reply.Get<int32_t>();
  if (count < 1 || count > n + 4096) {
    throw CollectiveError("the rendezvous's reply lists " +
                          std::to_string(count) + " processes of " +
                          std::to_string(n));
  }
  table_.assign(count, Member());
  for (int p = 0; p < count; ++p) {
    Member& m = table_[p];
    reply.Get<int32_t>();  // Its index before.
    m.local_ranks = reply.Get<int32_t>();
    m.data_port = reply.Get<int32_t>();
    m.address = reply.GetString();
    m.host = reply.GetString();
    // Process 0 saw the processes of its own host come over loopback
    // (MASTER_ADDR its name, which Debian's /etc/hosts puts on 127.0.1.1):
    // from here they are where process 0 is.
    if (IsLoopbackAddress(m.address)) m.address = rendezvous_address_;
  }
  process_ = reply.Get<int32_t>();
  if (process_ < 1 || process_ >= count) {
    throw CollectiveError(
        "the rendezvous gave process " + std::to_string(launch_.process) +
        " index " + std::to_string(process_) + " of " + std::to_string(count));
  }
  // Process 0 is reached where we reached it.
  table_[0].address = rendezvous_address_;
  // Control sockets by process: ours to 0 only.
  Socket zero_socket = std::move(control_[0]);
  control_.clear();
  control_.resize(count);
  control_[0] = std::move(zero_socket);
}

int TcpWorld::ProcessOf(int rank) const {
  int p = processes() - 1;
  while (p > 0 && table_[p].first_rank > rank) --p;
  return p;
}

std::string TcpWorld::ProcessName(int process) const {
  const std::string host =
      process < static_cast<int>(table_.size()) ? table_[process].host : "";
  return "process " + std::to_string(process) +
         (host.empty() ? "" : " (host " + host + ")");
}

std::string TcpWorld::RankName(int rank) const {
  const int p = ProcessOf(rank);
  return "rank " + std::to_string(rank) + " (process " + std::to_string(p) +
         ", host " + table_[p].host + ")";
}

Socket TcpWorld::AcceptLink(uint32_t group, int from, int to,
                            Clock::time_point deadline) {
  const auto key = std::make_tuple(group, from, to);
  while (true) {
    auto it = early_links_.find(key);
    if (it != early_links_.end()) {
      Socket s = std::move(it->second);
      early_links_.erase(it);
      return s;
    }
    // Group 0 links processes (the heartbeats), the others ranks.
    const std::string who =
        group == 0
            ? ProcessName(from) + " to connect its heartbeats"
            : RankName(from) + " to connect to rank " + std::to_string(to);
    Socket s =
        data_listener_.Accept(deadline, Unhealthy(), "waiting for " + who);
    uint32_t handshake[4] = {0, 0, 0, 0};
    s.ReadAll(handshake, sizeof(handshake), deadline, nullptr,
              "a connecting rank");
    if (handshake[0] != kLinkMagic) {
      throw CollectiveError(
          "a connection to this process's port " +
          std::to_string(data_listener_.LocalPort()) +
          " is not from ringlet: is another program sending to it?");
    }
    const auto got =
        std::make_tuple(handshake[1], static_cast<int>(handshake[2]),
                        static_cast<int>(handshake[3]));
    if (handshake[1] < group) {
      throw CollectiveError("a link of an earlier group arrived late");
    }
    early_links_[got] = std::move(s);
  }
}

std::vector<std::unique_ptr<Transport>> TcpWorld::CreateTransports() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint32_t group_id = next_group_++;
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  const int first = first_rank(), mine = local_ranks();
  // links[i][peer]: local rank i's connection to `peer`.
  std::vector<std::vector<std::unique_ptr<TcpLink>>> links(mine);
  for (auto& row : links) row.resize(size_);
  // Later processes connect to earlier ones, whose backlog holds the
  // connections until they accept: no order of calls can deadlock.
  for (int q = 0; q < process_; ++q) {
    for (int i = 0; i < mine; ++i) {
      for (int j = 0; j < table_[q].local_ranks; ++j) {
        const int peer = table_[q].first_rank + j;
        Socket s = Socket::Connect(table_[q].address, table_[q].data_port,
                                   deadline, RankName(peer));
        const uint32_t handshake[4] = {kLinkMagic, group_id,
                                       static_cast<uint32_t>(first + i),
                                       static_cast<uint32_t>(peer)};
        s.WriteAll(handshake, sizeof(handshake), deadline, nullptr,
                   RankName(peer));
        links[i][peer] =
            std::make_unique<TcpLink>(std::move(s), RankName(peer));
      }
    }
  }
  for (int q = process_ + 1; q < processes(); ++q) {
    for (int j = 0; j < table_[q].local_ranks; ++j) {
      const int peer = table_[q].first_rank + j;
      for (int i = 0; i < mine; ++i) {
        links[i][peer] = std::make_unique<TcpLink>(
            AcceptLink(group_id, peer, first + i, deadline), RankName(peer));
      }
    }
  }
  std::vector<bool> local(size_, false);
  for (int i = 0; i < mine; ++i) local[first + i] = true;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  auto group =
      std::make_shared<host::HostGroup>(size_, cores > 0 ? cores : 1, local);
  std::vector<std::unique_ptr<Transport>> transports;
  for (int i = 0; i < mine; ++i) {
    transports.push_back(std::make_unique<TcpTransport>(
        group, first + i, std::move(links[i]), health_));
  }
  return transports;
}

const Socket& TcpWorld::Control(int process) const { return control_[process]; }

void TcpWorld::WriteFrame(int process, const std::string& bytes,
                          Clock::time_point deadline) {
  WriteBlob(Control(process), bytes, deadline, ProcessName(process),
            Unhealthy());
}

std::string TcpWorld::ReadFrame(int process, Clock::time_point deadline) {
  return ReadBlob(Control(process), deadline, ProcessName(process),
                  Unhealthy());
}

std::vector<std::string> TcpWorld::GatherFromProcesses(
    const std::string& mine) {
  const int n = processes();
  if (n == 1) return {mine};
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  std::vector<std::string> all(n);
  try {
    if (process_ == 0) {
      all[0] = mine;
      for (int p = 1; p < n; ++p) all[p] = ReadFrame(p, deadline);
      Writer w;
      for (const std::string& s : all) w.PutString(s);
      for (int p = 1; p < n; ++p) WriteFrame(p, w.bytes(), deadline);
    } else {
      WriteFrame(0, mine, deadline);
      const std::string bytes = ReadFrame(0, deadline);
      Reader r(bytes, "the gathered strings");
      for (int p = 0; p < n; ++p) all[p] = r.GetString();
    }
  } catch (const CollectiveError& e) {
    throw CollectiveError("process " + std::to_string(process_) +
                          ", exchanging with the job's other processes: " +
                          (health_->failed() ? health_->reason() : e.what()));
  }
  return all;
}

void TcpWorld::SumOverProcesses(double* values, size_t count) {
  if (processes() == 1 || count == 0) return;
  const std::string mine(reinterpret_cast<const char*>(values),
                         count * sizeof(double));
  const std::vector<std::string> all = GatherFromProcesses(mine);
  // In process order on every process: the same bits everywhere.
  for (size_t i = 0; i < count; ++i) values[i] = 0;
  for (const std::string& s : all) {
    if (s.size() != mine.size()) {
      throw CollectiveError(
          "processes summed " + std::to_string(s.size() / sizeof(double)) +
          " and " + std::to_string(count) + " values in one call");
    }
    for (size_t i = 0; i < count; ++i) {
      double v;
      std::memcpy(&v, s.data() + i * sizeof(double), sizeof(double));
      values[i] += v;
    }
  }
}

void TcpWorld::BroadcastBytes(void* data, size_t bytes) {
  const int n = processes();
  if (n == 1) return;
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point deadline = Clock::now() + options_.timeout;
  try {
    if (process_ == 0) {
      const std::string blob(static_cast<const char*>(data), bytes);
      for (int p = 1; p < n; ++p) WriteFrame(p, blob, deadline);
      return;
    }
    const std::string blob = ReadFrame(0, deadline);
    if (blob.size() != bytes) {
      throw CollectiveError("process 0 broadcast " +
                            std::to_string(blob.size()) + " bytes, process " +
                            std::to_string(process_) + " expected " +
                            std::to_string(bytes));
    }
    std::memcpy(data, blob.data(), bytes);
  } catch (const CollectiveError& e) {
    throw CollectiveError("process " + std::to_string(process_) +
                          ", receiving process 0's broadcast: " +
                          (health_->failed() ? health_->reason() : e.what()));
  }
}

std::unique_ptr<Communicator> TcpWorld::CreateNativeCommunicator(
    const CommOptions&) {
  return nullptr;
}

void TcpWorld::AbortJob(int exit_code) {
  // Our connections close with the process: every other process's next
  // wait on us fails at once, naming this one.
  std::cout.flush();
  std::cerr.flush();
  std::_Exit(exit_code);
}

}  // namespace ringlet::collectives::tcp
