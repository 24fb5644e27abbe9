// The nccl backend: NVIDIA NCCL, one rank per GPU, buffers in GPU memory;
// in builds with CUDA and NCCL (nccl.h says so otherwise).
#include <string>

#include "collectives/backends/nccl.h"
#include "collectives/backends/registry.h"

namespace ringlet::collectives {
namespace {

BackendSpec NcclSpec() {
  BackendSpec spec;
  spec.name = "nccl";
  spec.summary = "nccl (NVIDIA NCCL, one rank per GPU)";
  spec.device_memory = true;
  spec.available = NcclCompiledIn;
  spec.host_refusal = [](int ranks) {
    return "the nccl backend runs on GPUs, and these " + std::to_string(ranks) +
           " rank(s) are in host memory (CPU devices); use the ring or naive "
           "backend on CPU devices (mpi under mpirun), or put the ranks on "
           "GPUs";
  };
  spec.first_gpus = [](int size, const CommOptions& options) {
    return CreateNcclGroup(size, options);
  };
  spec.gpus = [](const std::vector<int>& gpus, const CommOptions& options) {
    return CreateNcclGroup(gpus, options);
  };
  return spec;
}

}  // namespace

RINGLET_REGISTER_BACKEND(NcclSpec);

}  // namespace ringlet::collectives
