// Where a trainer runs: the devices --devices names, the GPU settings,
// the collectives backend and the threads per device.
#ifndef RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DEVICES_H_
#define RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DEVICES_H_

#include <string>
#include <vector>

#include "collectives/api/process_group.h"
#include "nn/compute_options.h"
#include "nn/device.h"
#include "trainers/common/flags/trainer_flags.h"

namespace ringlet::trainers {

// The devices --devices names: `auto` is every usable GPU, else one CPU
// device (d2l's try_all_gpus); under mpirun `auto` is the GPU of this
// process's local rank (one GPU per process). cuda:N for a GPU that does
// not exist is an error naming how many there are and what the CUDA
// runtime reported. Throws nn::DeviceError.
std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec);

// The GPU of the process with `local_rank` on its host, among the host's
// `usable` GPUs (indices): usable[local_rank]. Throws nn::DeviceError
// saying how many processes per host fit when there are too few.
nn::Device GpuOfLocalRank(int local_rank, const std::vector<int>& usable);

// --precision, --conv_algorithms and --layout for `devices`, as the
// options the run computes under (bf16: autocast; tf32: the GPUs' float32
// math). tf32, --layout=nhwc and a --conv_algorithms other than the
// default on CPU devices are DeviceErrors (those compute in float32 or
// bf16 and have no cuDNN), as is bf16 where it has no kernels
// (nn/ops/bf16_support.h).
nn::ComputeOptions ComputeOptionsFromFlags(
    const TrainerFlags& flags, const std::vector<nn::Device>& devices);

// --backend=auto: nccl where every device of the job is a GPU of its own
// and NCCL is built in (as DDP's default), else ring (CPU devices, or a GPU
// holding several replicas, of one process or of several processes on one
// host, which NCCL refuses). Any other name is kept. `processes` (null
// alone) is the job: collective over it, every process calls it at once,
// whatever its flag.
std::string ResolveBackend(const std::string& flag,
                           const std::vector<nn::Device>& devices,
                           collectives::ProcessGroup* processes = nullptr);

// The two halves of the above: one process's devices as "host 0,1" (its
// GPUs) or "host cpu", and the choice from every process's placement.
std::string DevicePlacement(const std::string& host,
                            const std::vector<nn::Device>& devices);
std::string BackendForPlacements(const std::string& flag,
                                 const std::vector<std::string>& placements);

// Cores per device when --threads_per_device is 0: the machine's cores
// shared out (among the processes mpirun put on it, too), at least one.
int ThreadsPerDevice(int requested, int devices);

}  // namespace ringlet::trainers

#endif  // RINGLET_TRAINERS_COMMON_FLAGS_TRAINER_DEVICES_H_
