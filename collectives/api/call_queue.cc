#include "collectives/api/call_queue.h"

#include <chrono>
#include <exception>
#include <utility>

namespace ringlet::collectives {

struct CallQueue::Pending {
  std::function<void()> before, call;
  std::mutex mu;
  std::condition_variable done_changed;
  bool done = false;
  std::exception_ptr error;
  double seconds = -1;  // How long `call` ran.
};

namespace {

// The Work of a queued call: done once the queue's thread has run it.
template <typename P>
class PendingWork : public Work {
 public:
  explicit PendingWork(std::shared_ptr<P> pending)
      : pending_(std::move(pending)) {}
  void Wait() override {
    std::unique_lock<std::mutex> lock(pending_->mu);
    pending_->done_changed.wait(lock, [this] { return pending_->done; });
    if (pending_->error) std::rethrow_exception(pending_->error);
  }
  bool Done() override {
    std::lock_guard<std::mutex> lock(pending_->mu);
    return pending_->done;
  }
  std::exception_ptr error() override {
    std::lock_guard<std::mutex> lock(pending_->mu);
    return pending_->done ? pending_->error : nullptr;
  }
  double seconds() const override {
    std::lock_guard<std::mutex> lock(pending_->mu);
    return pending_->done ? pending_->seconds : -1;
  }

 private:
  std::shared_ptr<P> pending_;
};

}  // namespace

CallQueue::~CallQueue() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::unique_ptr<Work> CallQueue::Enqueue(std::function<void()> before,
                                         std::function<void()> call) {
  auto pending = std::make_shared<Pending>();
  pending->before = std::move(before);
  pending->call = std::move(call);
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(pending);
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  changed_.notify_all();
  return std::make_unique<PendingWork<Pending>>(std::move(pending));
}

void CallQueue::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return queue_.empty() && !running_; });
}

void CallQueue::Loop() {
  while (true) {
    std::shared_ptr<Pending> next;
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // Stopping, and nothing left to run.
      next = queue_.front();
      queue_.pop_front();
      running_ = true;
    }
    std::exception_ptr error;
    auto start = std::chrono::steady_clock::now();
    try {
      if (next->before) next->before();
      start = std::chrono::steady_clock::now();
      next->call();
    } catch (...) {
      error = std::current_exception();
    }
    const std::chrono::duration<double> took =
        std::chrono::steady_clock::now() - start;
    next->before = nullptr;  // What they captured goes now.
    next->call = nullptr;
    {
      std::lock_guard<std::mutex> lock(next->mu);
      next->done = true;
      next->error = error;
      next->seconds = took.count();
    }
    next->done_changed.notify_all();
    {
      std::lock_guard<std::mutex> lock(mu_);
      running_ = false;
    }
    changed_.notify_all();
  }
}

}  // namespace ringlet::collectives
