#include "nn/parallel/replica_group.h"

#include <stdexcept>

#include "collectives/collectives.h"

namespace ringlet::nn {

ReplicaGroup::ReplicaGroup(const std::vector<Device>& devices,
                           const ReplicaGroupOptions& options)
    : devices_(devices), options_(options), processes_(options.processes) {
  if (devices_.empty()) throw DeviceError("replicas: no devices given");
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    for (size_t j = 0; j < i; ++j) {
      if (devices_[j] == d) {
        throw DeviceError("replicas: " + ToString(d) + " is listed twice in " +
                          ToString(devices_) +
                          "; each replica needs a device of its own");
      }
    }
    if (!d.is_cpu()) {
      throw DeviceError("replicas: " + ToString(d) +
                        ": data-parallel replicas run on CPU devices only so "
                        "far (nn's ops run on GPUs, but moving replicas and "
                        "gradients between GPUs is not written yet); use "
                        "cpu:N");
    }
  }
  if (options_.comm_groups < 1) {
    throw std::invalid_argument("replicas: comm_groups must be at least 1");
  }
  if (processes_ && processes_->local_ranks() != size()) {
    throw std::invalid_argument(
        "replicas: this process holds " +
        std::to_string(processes_->local_ranks()) + " ranks of the job but " +
        std::to_string(size()) + " devices " + ToString(devices_));
  }
  for (int g = 0; g < options_.comm_groups; ++g) {
    comms_.push_back(
        processes_ ? processes_->CreateGroup(options_.backend, options_.comm)
                   : collectives::CreateGroup(options_.backend, size(),
                                              options_.comm));
  }
  workers_ =
      std::make_unique<DeviceWorkers>(size(), options_.threads_per_device);
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
}

void ReplicaGroup::Run(const std::function<void(int)>& fn) {
  first_failure_ = nullptr;
  try {
    workers_->Run([&](int d) {
      try {
        fn(d);
      } catch (...) {
        Fail(d, std::current_exception());
        throw;
      }
    });
  } catch (...) {
    if (first_failure_) std::rethrow_exception(first_failure_);
    throw;
  }
}

TrainStepStats ReplicaGroup::SumOverProcesses(const TrainStepStats& local) {
  if (!processes_ || processes_->processes() == 1) return local;
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

int64_t ReplicaGroup::SumOverProcesses(int64_t local) {
  if (!processes_ || processes_->processes() == 1) return local;
  double value = static_cast<double>(local);
  processes_->SumOverProcesses(&value, 1);
  return static_cast<int64_t>(value);
}

std::vector<ReplicaInput> ReplicaGroup::LocalShards(
    const std::vector<ReplicaInput>& shards, const char* who) const {
  if (static_cast<int>(shards.size()) != ranks()) {
    throw std::invalid_argument(
        std::string(who) + ": got " + std::to_string(shards.size()) +
        " shards for " + std::to_string(ranks()) +
        " ranks; split each batch into one shard per device of the job");
  }
  for (size_t r = 0; r < shards.size(); ++r) {
    const ReplicaInput& s = shards[r];
    if (s.count < 0 || (s.count > 0 && (!s.images || !s.labels))) {
      throw std::invalid_argument(
          std::string(who) + ": shard " + std::to_string(r) + " has count " +
          std::to_string(s.count) + " and missing images or labels");
    }
  }
  return std::vector<ReplicaInput>(shards.begin() + first_rank(),
                                   shards.begin() + first_rank() + size());
}

}  // namespace ringlet::nn
