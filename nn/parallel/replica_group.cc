#include "nn/parallel/replica_group.h"

#include <stdexcept>

#include "collectives/collectives.h"

namespace ringlet::nn {

ReplicaGroup::ReplicaGroup(const std::vector<Device>& devices,
                           const ReplicaGroupOptions& options)
    : devices_(devices), options_(options) {
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
                        ": nn in this build computes on CPU devices only (its "
                        "CUDA kernels are not written yet); use cpu:N");
    }
  }
  if (options_.comm_groups < 1) {
    throw std::invalid_argument("replicas: comm_groups must be at least 1");
  }
  for (int g = 0; g < options_.comm_groups; ++g) {
    comms_.push_back(
        collectives::CreateGroup(options_.backend, size(), options_.comm));
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

}  // namespace ringlet::nn
