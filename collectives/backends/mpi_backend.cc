// The mpi backend: the MPI library's own MPI_Allreduce across the processes
// of an mpirun job (backends/mpi makes its communicators); in one process
// there is nothing for it to do, and it says how to launch it.
#include <string>

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
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(MpiSpec);

}  // namespace ringlet::collectives
