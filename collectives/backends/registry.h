// The collective backends by name: each registers itself from a file of its
// own (RINGLET_REGISTER_BACKEND in backends/*_backend.cc), and CreateGroup,
// the trainers' and the benchmark's --backend, its help and the tools that
// need to know where a backend's buffers live read the registry. Adding a
// backend touches its own files and BUILD only.
#ifndef RINGLET_COLLECTIVES_BACKENDS_REGISTRY_H_
#define RINGLET_COLLECTIVES_BACKENDS_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/api/communicator.h"

namespace ringlet::collectives {

class ProcessWorld;  // backends/process_world.h
using Communicators = std::vector<std::unique_ptr<Communicator>>;

struct BackendSpec {
  std::string name;     // "ring"
  std::string summary;  // --backend's help: "ring (ringlet's ring)"
  // Its buffers are GPU memory (nccl); else host memory, or on GPU ranks
  // whatever the ranks hold.
  bool device_memory = false;
  // Only across the processes of a job (mpi: under mpirun).
  bool needs_processes = false;
  // Built into this binary (null: always).
  std::function<bool()> available;
  // Ranks that are threads of this process, buffers in host memory; null:
  // refused with host_refusal(ranks).
  std::function<Communicators(int size, const CommOptions&)> host;
  std::function<std::string(int ranks)> host_refusal;
  // Ranks on GPUs 0 .. size - 1, for CreateGroup(name, size) of a backend
  // without host ranks (nccl); null: refused with host_refusal.
  std::function<Communicators(int size, const CommOptions&)> first_gpus;
  // Ranks on these GPUs (by index); null: refused with `gpu_refusal`.
  std::function<Communicators(const std::vector<int>& gpus, const CommOptions&)>
      gpus;
  std::string gpu_refusal;
  // This process's ranks of a job of several processes (ProcessWorld::
  // CreateGroup, which stages a host-memory backend's calls on GPU ranks);
  // null: the backend runs within one process only.
  std::function<Communicators(ProcessWorld& world, const CommOptions&)>
      processes;
};

// Registers `spec` (a later one of the same name replaces it).
bool RegisterBackend(BackendSpec spec);
// The spec named `name`, or null.
const BackendSpec* FindBackend(const std::string& name);
// Every registered spec, by name.
std::vector<const BackendSpec*> RegisteredBackends();
// "ring, naive and nccl": the names of the available ones, for messages
// (with `processes`, those that run across processes too).
std::string BackendList(bool processes);

}  // namespace ringlet::collectives

// In the backend's own .cc file, at namespace scope; `spec` a function
// returning its BackendSpec.
#define RINGLET_REGISTER_BACKEND(spec)                                   \
  [[maybe_unused]] static const bool ringlet_backend_registered_##spec = \
      ::ringlet::collectives::RegisterBackend(spec())

#endif  // RINGLET_COLLECTIVES_BACKENDS_REGISTRY_H_
