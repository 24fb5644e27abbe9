#include "nn/ops/op_threads.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nn/compute_options.h"

namespace ringlet::nn {
namespace {

// Set while this thread runs a ParallelFor part: a ParallelFor inside one
// runs on the thread alone (the helpers are busy with the outer one).
thread_local bool inside_parallel_for = false;

// The helper threads of one calling thread, kept for its lifetime. A
// thread per call cost 8% of a 2-thread ResNet-18 step: each new thread
// started cold (stack, OpenMP and oneDNN per-thread state, caches, a core
// to be scheduled on), and a step makes hundreds of calls.
class HelperThreads {
 public:
  explicit HelperThreads(int count) {
    for (int i = 0; i < count; ++i) {
      threads_.emplace_back([this, i] { Loop(i + 1); });
    }
  }
  ~HelperThreads() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  int size() const { return static_cast<int>(threads_.size()); }

  // Runs task(w) for w in [1, workers) on helpers and task(0) here;
  // returns when all are done. workers - 1 <= size().
  void Run(int workers, const std::function<void(int)>& task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      task_ = &task;
      workers_ = workers;
      pending_ = workers - 1;
      ++generation_;
    }
    wake_.notify_all();
    try {
      task(0);
    } catch (...) {
      Wait();  // the helpers still use `task`
      throw;
    }
    Wait();
  }

 private:
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_ == 0; });
    task_ = nullptr;
  }

  void Loop(int worker) {
    inside_parallel_for = true;
    uint64_t seen = 0;
    while (true) {
      const std::function<void(int)>* task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
        if (stopping_) return;
        seen = generation_;
        if (worker >= workers_) continue;  // not needed this time
        task = task_;
      }
      (*task)(worker);
      bool last;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last = --pending_ == 0;
      }
      if (last) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_, done_;
  const std::function<void(int)>* task_ = nullptr;
  int workers_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// This thread's helpers: OpThreads() - 1 of them, made on first use.
HelperThreads& Helpers() {
  thread_local std::unique_ptr<HelperThreads> helpers;
  const int wanted = OpThreads() - 1;
  if (!helpers || helpers->size() != wanted) {
    helpers.reset();  // joins the old ones first
    helpers = std::make_unique<HelperThreads>(wanted);
  }
  return *helpers;
}

}  // namespace

int OpThreads() { return CurrentComputeOptions().op_threads; }

void ParallelFor(int64_t n,
                 const std::function<void(int64_t, int64_t, int)>& fn) {
  const int workers = static_cast<int>(std::min<int64_t>(OpThreads(), n));
  if (workers <= 1 || inside_parallel_for) {
    fn(0, n, 0);
    return;
  }
  const auto part = [&](int w) { return n * w / workers; };
  struct Inside {
    Inside() { inside_parallel_for = true; }
    ~Inside() { inside_parallel_for = false; }
  } inside;
  Helpers().Run(workers, [&](int w) { fn(part(w), part(w + 1), w); });
}

void ParallelForEachItem(int64_t n,
                         const std::function<void(int64_t, int)>& fn) {
  std::atomic<int64_t> next{0};
  ParallelFor(std::min<int64_t>(n, OpThreads()),
              [&](int64_t, int64_t, int worker) {
                for (int64_t item = next++; item < n; item = next++) {
                  fn(item, worker);
                }
              });
}

void ParallelForElements(int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t parts =
      std::max<int64_t>(1, std::min<int64_t>(OpThreads(), n / grain));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  ParallelFor(parts, [&](int64_t begin, int64_t end, int) {
    fn(n * begin / parts, n * end / parts);
  });
}

}  // namespace ringlet::nn
