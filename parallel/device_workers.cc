#include "parallel/device_workers.h"

#include <stdexcept>
#include <string>

#include "nn/compute_options.h"

namespace ringlet::parallel {

DeviceWorkers::DeviceWorkers(int count, int threads_per_device,
                             const std::vector<nn::ComputeOptions>& compute) {
  if (count < 1 || threads_per_device < 1) {
    throw std::invalid_argument(
        "device workers: need at least one device and one thread per "
        "device, got " +
        std::to_string(count) + " and " + std::to_string(threads_per_device));
  }
  if (!compute.empty() && static_cast<int>(compute.size()) != count) {
    throw std::invalid_argument(
        "device workers: " + std::to_string(compute.size()) +
        " compute options for " + std::to_string(count) +
        " devices; give one per device, or none");
  }
  for (int d = 0; d < count; ++d) {
    nn::ComputeOptions options =
        compute.empty() ? nn::CurrentComputeOptions() : compute[d];
    options.op_threads = threads_per_device;
    threads_.emplace_back([this, d, options] { Loop(d, options); });
  }
}

DeviceWorkers::~DeviceWorkers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void DeviceWorkers::Run(const std::function<void(int)>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  job_ = &fn;
  first_error_ = nullptr;
  running_ = size();
  ++generation_;
  work_ready_.notify_all();
  work_done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
  if (first_error_) std::rethrow_exception(first_error_);
}

void DeviceWorkers::Loop(int device, const nn::ComputeOptions& compute) {
  const nn::ComputeScope scope(compute);
  uint64_t seen = 0;
  while (true) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    std::exception_ptr error;
    try {
      (*job)(device);
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (error && !first_error_) first_error_ = error;
    if (--running_ == 0) work_done_.notify_all();
  }
}

}  // namespace ringlet::parallel
