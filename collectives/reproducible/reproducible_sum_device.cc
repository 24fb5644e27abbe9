// The device sum's entry point in every build: the CUDA half when linked
// in, or an error that says this build has none.
#include "collectives/reproducible/reproducible_sum_device.h"

#include <stdexcept>
#include <string>

#include "collectives/api/collective_error.h"
#include "collectives/reproducible/reproducible_sum.h"
#include "gpu/registration.h"

namespace ringlet::collectives {
namespace {

gpu::Registration<ReproducibleOnDeviceFn> registered;

}  // namespace

void RegisterReproducibleOnDevice(ReproducibleOnDeviceFn fn) {
  registered.Set(fn);
}

bool ReproducibleOnDeviceCompiledIn() { return registered.Get() != nullptr; }

void ReproducibleAllReduceOnDevice(Communicator& comm,
                                   const std::vector<const void*>& summands,
                                   void* recv, size_t count, DataType type,
                                   int device, const CallOptions& options) {
  const ReproducibleOnDeviceFn fn = registered.Get();
  if (fn == nullptr) {
    throw CollectiveError(
        "reproducible allreduce on GPU " + std::to_string(device) +
        ": this build has no CUDA (no toolkit was found, or "
        "--config=cpu_only); rebuild where CUDA is installed");
  }
  fn(comm, summands, recv, count, type, device, options);
}

}  // namespace ringlet::collectives
