#include "trainers/common/flags/trainer_devices.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>

#include "collectives/backends/launch.h"
#include "collectives/backends/nccl.h"
#include "collectives/backends/process_world.h"
#include "gpu/device_probe.h"
#include "nn/compute_options.h"
#include "nn/gpu_precision.h"
#include "nn/memory_format.h"
#include "nn/ops/autocast.h"
#include "nn/ops/bf16_support.h"

namespace ringlet::trainers {

nn::Device GpuOfLocalRank(int local_rank, const std::vector<int>& usable) {
  if (local_rank < 0 || local_rank >= static_cast<int>(usable.size())) {
    std::string names;
    for (size_t i = 0; i < usable.size(); ++i) {
      names += (i ? ", cuda:" : "cuda:") + std::to_string(usable[i]);
    }
    throw nn::DeviceError(
        "--devices=auto under a launcher gives each process the GPU of its "
        "local rank, but this process has local rank " +
        std::to_string(local_rank) + " and its host " +
        std::to_string(usable.size()) + " usable GPU(s) (" + names +
        "); start at most " + std::to_string(usable.size()) +
        " processes per host (mpirun --map-by ppr:" +
        std::to_string(usable.size()) +
        ":node), or name the devices (--devices=cuda:0, --devices=cpu:1)");
  }
  return nn::Device::Cuda(usable[local_rank]);
}

std::vector<nn::Device> ResolveTrainerDevices(const std::string& spec) {
  const gpu::CudaDeviceReport gpus = gpu::ProbeCudaDevices();
  const int usable = static_cast<int>(gpus.usable.size());
  if (spec == "auto" && usable > 0 && !collectives::Launcher().empty()) {
    // One GPU per process: its local rank's, as under torchrun.
    return {GpuOfLocalRank(collectives::LocalRankFromLauncher(), gpus.usable)};
  }
  if (usable == 0 && spec.rfind("cuda", 0) == 0) {
    // No GPU at all: say why, in the runtime's words too.
    throw nn::DeviceError("--devices=" + spec + ": " + gpus.reason +
                          "; use --devices=cpu:2 or --devices=auto");
  }
  return nn::ResolveDevices(spec, usable);
}

nn::ComputeOptions ComputeOptionsFromFlags(
    const TrainerFlags& flags, const std::vector<nn::Device>& devices) {
  const bool bf16 = flags.precision == "bf16";
  // bf16 is autocast (nn/ops/autocast.h); what float32 ops remain on a GPU
  // run without TF32.
  const nn::GpuPrecision precision =
      bf16 ? nn::GpuPrecision::kFp32 : nn::ParseGpuPrecision(flags.precision);
  nn::ConvAlgorithms conv =
      nn::ResolveConvAlgorithms(flags.conv_algorithms, bf16);
  const bool on_gpus = devices.front().is_cuda();
  if (flags.reproducible && on_gpus) {
    // Measured choices may differ from run to run, and some algorithms
    // add in a different order each time.
    if (flags.conv_algorithms == "auto") {
      conv = nn::ConvAlgorithms::kDeterministic;
    } else if (conv != nn::ConvAlgorithms::kDeterministic) {
      throw nn::DeviceError(
          "--reproducible on GPUs needs --conv_algorithms=deterministic (the "
          "default there), not " +
          flags.conv_algorithms);
    }
  }
  if (bf16) nn::RequireBf16Training(devices);
  if (precision != nn::GpuPrecision::kFp32 && !on_gpus) {
    throw nn::DeviceError("--precision=" + flags.precision +
                          " applies to GPUs; CPU devices compute in float32 "
                          "or bf16 (leave --precision out)");
  }
  if (flags.conv_algorithms != "auto" && !on_gpus) {
    throw nn::DeviceError("--conv_algorithms=" + flags.conv_algorithms +
                          " applies to GPUs (cuDNN); CPU devices always give "
                          "the same bits (leave --conv_algorithms out)");
  }
  const nn::MemoryFormat layout = nn::ParseLayout(flags.layout);
  if (layout != nn::MemoryFormat::kContiguous && !on_gpus) {
    throw nn::DeviceError("--layout=" + flags.layout +
                          " applies to GPUs (cuDNN); CPU devices keep their "
                          "own layout (leave --layout out)");
  }
  nn::ComputeOptions options;
  options.gpu_precision = precision;
  options.conv_algorithms = conv;
  options.gpu_layout = layout;
  options.autocast = bf16 ? nn::DType::kBFloat16 : nn::DType::kFloat32;
  return options;
}

std::string DevicePlacement(const std::string& host,
                            const std::vector<nn::Device>& devices) {
  std::string gpus;
  for (const nn::Device& d : devices) {
    if (!d.is_cuda()) return host + " cpu";
    gpus += (gpus.empty() ? "" : ",") + std::to_string(d.index);
  }
  return host + " " + gpus;
}

std::string BackendForPlacements(const std::string& flag,
                                 const std::vector<std::string>& placements) {
  if (flag != "auto") return flag;
  std::set<std::pair<std::string, std::string>> taken;  // (host, gpu)
  for (const std::string& placement : placements) {
    std::istringstream in(placement);
    std::string host, list;
    in >> host >> list;
    if (list == "cpu" || list.empty()) return "ring";
    std::istringstream gpus(list);
    for (std::string gpu; std::getline(gpus, gpu, ',');) {
      if (!taken.emplace(host, gpu).second) return "ring";
    }
  }
  return collectives::NcclCompiledIn() ? "nccl" : "ring";
}

std::string ResolveBackend(const std::string& flag,
                           const std::vector<nn::Device>& devices,
                           collectives::ProcessGroup* processes) {
  const auto* world = dynamic_cast<collectives::ProcessWorld*>(processes);
  const std::string mine =
      DevicePlacement(world != nullptr ? world->host() : "this-host", devices);
  if (processes == nullptr) return BackendForPlacements(flag, {mine});
  // Whatever the flag: a collective every process calls (processes given
  // different backends are told so by the settings check after it).
  return BackendForPlacements(flag, processes->GatherFromProcesses(mine));
}

int ThreadsPerDevice(int requested, int devices) {
  if (requested > 0) return requested;
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // Processes a launcher started on this host share its cores.
  const int processes = collectives::ProcessesOnHostFromLauncher();
  return std::max(1, cores / std::max(1, devices * processes));
}

}  // namespace ringlet::trainers
