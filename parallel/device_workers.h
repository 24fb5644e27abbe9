// One long-lived thread per device: a CPU device is a model replica driven
// by its own thread, with its own share of the cores for the ops it runs.
#ifndef RINGLET_PARALLEL_DEVICE_WORKERS_H_
#define RINGLET_PARALLEL_DEVICE_WORKERS_H_

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "nn/compute_options.h"

namespace ringlet::parallel {

class DeviceWorkers {
 public:
  // `count` threads; thread d computes under compute[d] (nn/compute_options.h;
  // empty: the options of the thread making them, for every device) with
  // its ops on `threads_per_device` cores. Throws std::invalid_argument
  // when either count is below 1 or compute has another size.
  DeviceWorkers(int count, int threads_per_device,
                const std::vector<nn::ComputeOptions>& compute = {});
  ~DeviceWorkers();
  DeviceWorkers(const DeviceWorkers&) = delete;
  DeviceWorkers& operator=(const DeviceWorkers&) = delete;

  // Runs fn(device) on every worker at once and returns when all are done.
  // If any threw, rethrows the exception that happened first (the cause;
  // the others are usually its consequences, such as an aborted collective).
  void Run(const std::function<void(int device)>& fn);

  int size() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop(int device, const nn::ComputeOptions& compute);

  std::mutex mu_;
  std::condition_variable work_ready_, work_done_;
  const std::function<void(int)>* job_ = nullptr;
  uint64_t generation_ = 0;
  int running_ = 0;
  std::exception_ptr first_error_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace ringlet::parallel

#endif  // RINGLET_PARALLEL_DEVICE_WORKERS_H_
