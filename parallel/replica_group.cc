#include "parallel/replica_group.h"

#include <stdexcept>
#include <string>

#include "collectives/collectives.h"
#include "collectives/in_process_group.h"
#include "gpu/device_probe.h"

namespace ringlet::parallel {
namespace {

// Every device exists and all are CPUs or all GPUs; a CPU device at most
// once (it is a thread), a GPU as often as wanted (each replica on it gets
// its own buffers; the ring backends give each its own stream).
void CheckDevices(const std::vector<nn::Device>& devices) {
  if (devices.empty()) throw nn::DeviceError("replicas: no devices given");
  int gpus_listed = 0;
  for (size_t i = 0; i < devices.size(); ++i) {
    const nn::Device& d = devices[i];
    gpus_listed += d.is_cuda() ? 1 : 0;
    for (size_t j = 0; j < i && d.is_cpu(); ++j) {
      if (devices[j] == d) {
        throw nn::DeviceError("replicas: " + ToString(d) +
                              " is listed twice in " + ToString(devices) +
                              "; each CPU replica needs a device of its own");
      }
    }
  }
  if (gpus_listed == 0) return;
  if (gpus_listed != static_cast<int>(devices.size())) {
    throw nn::DeviceError(
        "replicas: " + ToString(devices) +
        " mixes CPU and GPU devices; use GPUs only (cuda:0,1) "
        "or CPU devices only (cpu:2)");
  }
  for (const nn::Device& d : devices) {
    const std::string missing = gpu::MissingGpu(d.index);
    if (!missing.empty()) {
      throw nn::DeviceError(
          "replicas: " + missing +
          "; list GPUs that exist, or use CPU devices (cpu:N)");
    }
  }
}

}  // namespace

nn::Tensor ShardInputs(const data::Shard& shard, nn::Device device) {
  if (shard.count > 0 && shard.inputs.shape.empty()) {
    throw nn::ShapeError(
        "a shard of " + std::to_string(shard.count) +
        " samples has no input shape: set Shard::inputs.shape to one "
        "sample's dimensions (an image: {channels, height, width})");
  }
  nn::Shape shape = {shard.count};
  shape.insert(shape.end(), shard.inputs.shape.begin(),
               shard.inputs.shape.end());
  nn::Tensor x = nn::Tensor::Uninitialized(shape, device);
  if (shard.count == 0) return x;
  // Queued on the replica's stream, where only its own model reads it.
  nn::CopyFromHostAsync(shard.inputs.As<float>("a model's input"), x);
  return x;
}

ReplicaGroup::ReplicaGroup(const std::vector<nn::Device>& devices,
                           const ReplicaGroupOptions& options)
    : devices_(devices), options_(options), processes_(options.processes) {
  CheckDevices(devices_);
  if (options_.comm_groups < 1) {
    throw std::invalid_argument("replicas: comm_groups must be at least 1");
  }
  std::vector<collectives::RankDevice> ranks;
  for (const nn::Device& d : devices_) {
    ranks.push_back(d.is_cuda() ? collectives::RankDevice::Gpu(d.index)
                                : collectives::RankDevice::Host());
  }
  if (!processes_) {
    // This process is the whole job: one code path for both cases.
    processes_ = std::make_shared<collectives::InProcessGroup>(ranks);
  }
  if (processes_->local_ranks() != size()) {
    throw std::invalid_argument(
        "replicas: this process holds " +
        std::to_string(processes_->local_ranks()) + " ranks of the job but " +
        std::to_string(size()) + " devices " + ToString(devices_));
  }
  // Under mpirun the job's communicators then move device memory (NCCL, or
  // the host backends through host staging).
  processes_->SetLocalDevices(ranks);
  for (int g = 0; g < options_.comm_groups; ++g) {
    comms_.push_back(processes_->CreateGroup(options_.backend, options_.comm));
  }
  if (options_.host_comms && on_gpus()) {
    // The ring runs over host memory in one process and through MPI across
    // processes, whatever backend moves the GPUs' buffers.
    processes_->SetLocalDevices(std::vector<collectives::RankDevice>(
        size(), collectives::RankDevice::Host()));
    host_comms_ = processes_->CreateGroup("ring", options_.comm);
    processes_->SetLocalDevices(ranks);
  }
  for (const nn::Device& d : devices_) streams_.emplace_back(d);
  // nn's ops on a GPU queue their work and use no op threads.
  workers_ = std::make_unique<DeviceWorkers>(
      size(), on_gpus() ? 1 : options_.threads_per_device, options_.compute);
}

void ReplicaGroup::Fail(int device, std::exception_ptr error) {
  std::string reason = ToString(devices_[device]) + " failed";
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    reason += std::string(": ") + e.what();
  } catch (...) {
  }
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!first_failure_) first_failure_ = error;
  }
  for (auto& group : comms_) group[device]->Abort(reason);
  if (!host_comms_.empty()) host_comms_[device]->Abort(reason);
}

collectives::Communicator& ReplicaGroup::host_comm(int device) {
  if (!on_gpus()) return comm(device);
  if (host_comms_.empty()) {
    throw std::logic_error(
        "replicas: host_comm on GPUs needs ReplicaGroupOptions::host_comms");
  }
  return *host_comms_.at(device);
}

void ReplicaGroup::Run(const std::function<void(int)>& fn) {
  RunOnWorkers(fn, /*wait_for_streams=*/true);
}

void ReplicaGroup::RunQueued(const std::function<void(int)>& fn) {
  RunOnWorkers(fn, /*wait_for_streams=*/false);
}

void ReplicaGroup::RunOnWorkers(const std::function<void(int)>& fn,
                                bool wait_for_streams) {
  first_failure_ = nullptr;
  try {
    workers_->Run([&](int d) {
      const nn::DeviceStream& stream = streams_[d];
      nn::DeviceStream::Use use(stream);
      try {
        fn(d);
        if (wait_for_streams) stream.Synchronize();
      } catch (...) {
        Fail(d, std::current_exception());
        try {
          // Queued work may still read memory its tensors are giving back.
          stream.Synchronize();
        } catch (const std::exception&) {
          // The cause is the exception in flight.
        }
        throw;
      }
    });
  } catch (...) {
    if (first_failure_) std::rethrow_exception(first_failure_);
    throw;
  }
}

TrainStepStats ReplicaGroup::SumOverProcesses(const TrainStepStats& local) {
  if (processes_->processes() == 1) return local;
  // Sample and correct counts stay exact in a double up to 2^53.
  double values[3] = {local.loss_sum, static_cast<double>(local.correct),
                      static_cast<double>(local.samples)};
  processes_->SumOverProcesses(values, 3);
  TrainStepStats out = local;
  out.loss_sum = values[0];
  out.correct = static_cast<int64_t>(values[1]);
  out.samples = static_cast<int64_t>(values[2]);
  return out;
}

void ReplicaGroup::SumOverProcesses(std::vector<double>* values) {
  if (processes_->processes() == 1 || values->empty()) return;
  processes_->SumOverProcesses(values->data(), values->size());
}

int64_t ReplicaGroup::SumOverProcesses(int64_t local) {
  if (processes_->processes() == 1) return local;
  double value = static_cast<double>(local);
  processes_->SumOverProcesses(&value, 1);
  return static_cast<int64_t>(value);
}

}  // namespace ringlet::parallel
