#include "collectives/backends/tcp/launch_env.h"

#include <cstdlib>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ringlet::collectives::tcp {
namespace {

constexpr int kDefaultPort = 29500;  // torch.distributed's.

// A non-negative integer, all of `text`, below `limit`.
int ParseCount(const char* name, const char* text, int limit) {
  const std::string value = text;
  size_t used = 0;
  long parsed = -1;
  try {
    parsed = std::stol(value, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < 0 || parsed >= limit) {
    throw std::invalid_argument(std::string(name) + "='" + value +
                                "' is not a whole number from 0 to " +
                                std::to_string(limit - 1));
  }
  return static_cast<int>(parsed);
}

int Port(const GetEnv& get_env) {
  const char* port = get_env("MASTER_PORT");
  if (port == nullptr) return kDefaultPort;
  const int value = ParseCount("MASTER_PORT", port, 65536);
  if (value == 0) {
    throw std::invalid_argument(
        "MASTER_PORT=0: name the port process 0 "
        "listens on (e.g. 29500)");
  }
  return value;
}

int OptionalCount(const GetEnv& get_env, const char* name) {
  const char* text = get_env(name);
  return text == nullptr ? 0 : ParseCount(name, text, 1 << 30);
}

std::optional<LaunchInfo> FromTorchrun(const GetEnv& get_env) {
  const char* rank = get_env("RANK");
  const char* world = get_env("WORLD_SIZE");
  if (rank == nullptr && world == nullptr) return std::nullopt;
  if (rank == nullptr || world == nullptr) {
    throw std::invalid_argument(
        std::string(rank ? "RANK" : "WORLD_SIZE") + " is set but " +
        (rank ? "WORLD_SIZE" : "RANK") +
        " is not: a launch by environment (torchrun's) needs RANK, "
        "WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
  }
  LaunchInfo info;
  info.launcher = "torchrun";
  info.processes = ParseCount("WORLD_SIZE", world, 1 << 20);
  if (info.processes == 0) {
    throw std::invalid_argument("WORLD_SIZE=0: a job has at least 1 process");
  }
  info.process = ParseCount("RANK", rank, info.processes);
  info.process_on_host = OptionalCount(get_env, "LOCAL_RANK");
  info.processes_on_host = OptionalCount(get_env, "LOCAL_WORLD_SIZE");
  info.restart_count = OptionalCount(get_env, "TORCHELASTIC_RESTART_COUNT");
  const char* addr = get_env("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0') {
    if (info.processes > 1) {
      throw std::invalid_argument(
          "RANK and WORLD_SIZE are set but MASTER_ADDR is not: set it to "
          "the host of process 0 (torchrun sets it)");
    }
    addr = "127.0.0.1";
  }
  info.master_addr = addr;
  info.master_port = Port(get_env);
  // From PyTorch 2 on, torchrun's workers get the port of its own store
  // (TORCHELASTIC_USE_AGENT_STORE), which its agent holds: the rendezvous
  // listens beside it, one port further per restart (the restart before
  // may still hold the last).
  const char* agent_store = get_env("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store != nullptr &&
      (std::string(agent_store) == "True" ||
       std::string(agent_store) == "true" || std::string(agent_store) == "1")) {
    const int offset = 1 + info.restart_count % 16;
    info.master_port += info.master_port + offset < 65536 ? offset : -offset;
    info.port_note =
        " (torchrun's store holds MASTER_PORT; this job's rendezvous is the "
        "port beside it: set RINGLET_RENDEZVOUS_PORT to another)";
  }
  return info;
}

std::optional<LaunchInfo> FromSrun(const GetEnv& get_env) {
  const char* procid = get_env("SLURM_PROCID");
  const char* tasks = get_env("SLURM_STEP_NUM_TASKS");
  if (procid == nullptr || tasks == nullptr) return std::nullopt;
  LaunchInfo info;
  info.launcher = "srun";
  info.processes = ParseCount("SLURM_STEP_NUM_TASKS", tasks, 1 << 20);
  if (info.processes == 0) {
    throw std::invalid_argument("SLURM_STEP_NUM_TASKS=0");
  }
  info.process = ParseCount("SLURM_PROCID", procid, info.processes);
  info.process_on_host = OptionalCount(get_env, "SLURM_LOCALID");
  if (const char* per_node = get_env("SLURM_STEP_TASKS_PER_NODE")) {
    info.processes_on_host =
        TasksOnNode(per_node, OptionalCount(get_env, "SLURM_NODEID"));
  }
  info.restart_count = OptionalCount(get_env, "SLURM_RESTART_COUNT");
  if (const char* addr = get_env("MASTER_ADDR"); addr && *addr) {
    info.master_addr = addr;
  } else {
    const char* nodes = get_env("SLURM_STEP_NODELIST");
    if (nodes == nullptr) nodes = get_env("SLURM_JOB_NODELIST");
    if (nodes == nullptr || *nodes == '\0') {
      throw std::invalid_argument(
          "srun started this process but neither SLURM_STEP_NODELIST nor "
          "SLURM_JOB_NODELIST names its hosts: set MASTER_ADDR to the host "
          "of task 0");
    }
    info.master_addr = FirstHostOfNodeList(nodes);
  }
  info.master_port = Port(get_env);
  return info;
}

}  // namespace

int TasksOnNode(const std::string& list, int node) {
  const std::invalid_argument bad("cannot read SLURM_STEP_TASKS_PER_NODE='" +
                                  list + "' for node " + std::to_string(node));
  // The whole list is read first: a malformed one is refused whatever the
  // node.
  std::vector<std::pair<int, int>> entries;  // Tasks, nodes with that many.
  size_t at = 0;
  while (at < list.size()) {
    size_t used = 0;
    int tasks = 0, repeat = 1;
    try {
      tasks = std::stoi(list.substr(at), &used);
    } catch (const std::exception&) {
      throw bad;
    }
    at += used;
    if (list.compare(at, 2, "(x") == 0) {
      try {
        repeat = std::stoi(list.substr(at + 2), &used);
      } catch (const std::exception&) {
        throw bad;
      }
      at += 2 + used;
      if (at >= list.size() || list[at] != ')') throw bad;
      ++at;
    }
    if (tasks < 0 || repeat < 1) throw bad;
    entries.emplace_back(tasks, repeat);
    if (at < list.size() && (list[at++] != ',' || at == list.size())) {
      throw bad;
    }
  }
  int seen = 0;
  for (const auto& [tasks, repeat] : entries) {
    if (node < seen + repeat) return tasks;
    seen += repeat;
  }
  throw bad;
}

std::string FirstHostOfNodeList(const std::string& list) {
  // Up to the first comma outside brackets: one host or one bracket range.
  size_t end = 0;
  int depth = 0;
  for (; end < list.size(); ++end) {
    if (list[end] == '[') ++depth;
    if (list[end] == ']') --depth;
    if (list[end] == ',' && depth == 0) break;
  }
  const std::string first = list.substr(0, end);
  const size_t open = first.find('[');
  if (first.empty() || depth != 0 ||
      (open == std::string::npos) != (first.find(']') == std::string::npos)) {
    throw std::invalid_argument("cannot read the Slurm node list '" + list +
                                "': set MASTER_ADDR to the host of task 0");
  }
  if (open == std::string::npos) return first;
  const size_t close = first.find(']', open);
  const std::string inside = first.substr(open + 1, close - open - 1);
  const size_t stop = inside.find_first_of("-,");
  const std::string lowest = inside.substr(0, stop);
  if (lowest.empty() ||
      lowest.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("cannot read the Slurm node list '" + list +
                                "': set MASTER_ADDR to the host of task 0");
  }
  return first.substr(0, open) + lowest + first.substr(close + 1);
}

std::optional<LaunchInfo> LaunchInfoFromEnv(const GetEnv& get_env) {
  std::optional<LaunchInfo> info = FromTorchrun(get_env);
  if (!info) info = FromSrun(get_env);
  if (!info) return info;
  const auto set = [&](const char* name) {
    const char* value = get_env(name);
    return value != nullptr && *value != '\0' ? value : nullptr;
  };
  if (const char* store = set("RINGLET_RENDEZVOUS_STORE")) info->store = store;
  if (const char* port = set("RINGLET_RENDEZVOUS_PORT")) {
    info->master_port = ParseCount("RINGLET_RENDEZVOUS_PORT", port, 65536);
    info->port_note = " (RINGLET_RENDEZVOUS_PORT)";
  }
  if (const char* id = set("RINGLET_JOB_ID")) {
    info->job_id = id;
  } else if (const char* run = set("TORCHELASTIC_RUN_ID");
             run != nullptr && info->launcher == "torchrun" &&
             std::string(run) != "none") {
    // torchrun's default --rdzv_id is "none", shared by every job.
    info->job_id = run;
  } else if (const char* job = set("SLURM_JOB_ID")) {
    const char* step = set("SLURM_STEP_ID");
    info->job_id = std::string(job) + "." + (step ? step : "0");
  } else {
    info->job_id = info->master_addr + ":" + std::to_string(info->master_port);
  }
  return info;
}

std::optional<LaunchInfo> LaunchInfoFromEnv() {
  return LaunchInfoFromEnv([](const char* name) { return std::getenv(name); });
}

}  // namespace ringlet::collectives::tcp
