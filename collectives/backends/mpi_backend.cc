// The mpi backend: the MPI library's own MPI_Allreduce across the processes
// of an mpirun job (MpiWorld's native communicator); in one process
// there is nothing for it to do, and it says how to launch it.
#include <memory>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/backends/process_world.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {
namespace {

BackendSpec MpiSpec() {
  BackendSpec spec;
  spec.name = "mpi";
  spec.summary = "mpi (MPI_Allreduce, under mpirun)";
  spec.needs_processes = true;
  spec.gpu_refusal =
      "the mpi backend needs processes started by mpirun (e.g. mpirun -np 2 "
      "<program> --backend=mpi --devices=cpu:1); in one process use ring or "
      "naive";
  spec.host_refusal = [refusal = spec.gpu_refusal](int) { return refusal; };
  spec.processes = [](ProcessWorld& world, const CommOptions& options) {
    std::unique_ptr<Communicator> native =
        world.CreateNativeCommunicator(options);
    if (native == nullptr) {
      throw CollectiveError(
          "the mpi backend needs processes started by mpirun; this job's "
          "launcher has no MPI: use ring or naive");
    }
    Communicators comms;
    comms.push_back(std::move(native));
    return comms;
  };
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(MpiSpec);

}  // namespace ringlet::collectives
