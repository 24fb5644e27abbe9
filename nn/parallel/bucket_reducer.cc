#include "nn/parallel/bucket_reducer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "collectives/collective_error.h"

namespace ringlet::nn {

BucketReducer::BucketReducer(Module& model, collectives::Communicator& comm,
                             int64_t bucket_bytes, const DeviceLane& lane)
    : comm_(comm),
      lane_(lane),
      on_device_(lane.device().is_cuda() && comm.OrdersOnDevice()),
      alone_(comm.size() == 1) {
  // Which parameters each module holds.
  VisitModules(model, [&](Module& m) { params_of_[&m] = m.Parameters(); });
  std::vector<Parameter*> params = model.Parameters();

  // Backward finishes the last parameters first: bucket in reverse order.
  std::reverse(params.begin(), params.end());
  int64_t bucket_elements = 0;
  for (Parameter* p : params) {
    if (buckets_.empty() ||
        bucket_elements * static_cast<int64_t>(sizeof(float)) >= bucket_bytes) {
      buckets_.emplace_back();
      bucket_elements = 0;
    }
    Bucket& b = buckets_.back();
    b.params.push_back(p);
    bucket_elements += p->grad.numel();
    bucket_of_[p] = static_cast<int>(buckets_.size()) - 1;
  }
  // One rank in the whole job: its gradients are the sums already (no flat
  // buffers, no hooks, no thread).
  if (alone_) return;
  for (Bucket& b : buckets_) {
    std::vector<Tensor*> grads;
    for (Parameter* p : b.params) grads.push_back(&p->grad);
    b.flat = FlatTensors(grads);
    b.reduced = DeviceFence(b.flat.device());
  }
  VisitModules(model, [this](Module& m) {
    if (auto* seq = dynamic_cast<Sequential*>(&m)) {
      seq->set_child_backward_done([this](Module& child) { MarkReady(child); });
    }
  });
  thread_ = std::thread([this] { Loop(); });
}

BucketReducer::~BucketReducer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void BucketReducer::BeginStep() {
  if (alone_) return;  // step_done_ stays true: FinishStep returns at once.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [param, ready] : ready_) ready = false;
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  cancelled_ = false;
  error_ = nullptr;
  comm_seconds_ = 0;
  step_done_ = false;
  ++step_;
  changed_.notify_all();
}

void BucketReducer::MarkReadyLocked(Parameter* param) {
  bool& ready = ready_[param];
  if (ready) return;  // A nested Sequential reported it already.
  ready = true;
  --buckets_[bucket_of_.at(param)].pending;
}

void BucketReducer::MarkReady(Module& module) {
  if (alone_) return;
  auto it = params_of_.find(&module);
  if (it == params_of_.end() || it->second.empty()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Outside a step (the micro-batches before an accumulated step's last)
    // backward only adds to the gradients.
    if (step_done_) return;
    for (Parameter* p : it->second) MarkReadyLocked(p);
  }
  changed_.notify_all();
}

void BucketReducer::MarkAllReady() {
  if (alone_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [param, index] : bucket_of_) MarkReadyLocked(param);
  }
  changed_.notify_all();
}

void BucketReducer::Cancel() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  changed_.notify_all();
}

double BucketReducer::FinishStep() {
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock, [this] { return step_done_; });
  if (error_) std::rethrow_exception(error_);
  return comm_seconds_;
}

void BucketReducer::ReduceBucket(Bucket& b) {
  b.flat.PackForCollective();
  const auto start = std::chrono::steady_clock::now();
  comm_.AllReduce(b.flat.data(), b.flat.data(), b.flat.count(),
                  collectives::DataType::kFloat32, collectives::ReduceOp::kSum);
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  // Queued before FinishStep returns, so the optimizer's step (queued
  // after it on the same stream) sees the sums.
  b.flat.Unpack();
  std::lock_guard<std::mutex> lock(mu_);
  comm_seconds_ += took.count();
}

void BucketReducer::QueueBucket(Bucket& b) {
  b.flat.Pack();  // Records b.flat.packed() on the lane; no wait.
  comm_.QueueAllReduce(b.flat.data(), b.flat.count(),
                       collectives::DataType::kFloat32,
                       collectives::ReduceOp::kSum, b.flat.packed().native(),
                       b.reduced.native());
}

void BucketReducer::FinishQueued(int queued) {
  // The one host wait of the step, with the communicator's timeout.
  const auto start = std::chrono::steady_clock::now();
  comm_.WaitQueued();
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  for (int i = 0; i < queued; ++i) {
    // Ordered by the allreduce's event, before the optimizer's step.
    buckets_[i].reduced.QueueWait();
    buckets_[i].flat.Unpack();
  }
  std::lock_guard<std::mutex> lock(mu_);
  comm_seconds_ += took.count();
}

void BucketReducer::Loop() {
  const DeviceLane::Use use(lane_);
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return stopping_ || step_ != seen; });
      if (stopping_) return;
      seen = step_;
    }
    std::exception_ptr error;
    int queued = 0;
    try {
      bool cancelled = false;
      for (Bucket& b : buckets_) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          changed_.wait(lock, [&] { return cancelled_ || b.pending == 0; });
          cancelled = cancelled_;
        }
        if (cancelled) break;
        if (on_device_) {
          QueueBucket(b);
          ++queued;
        } else {
          ReduceBucket(b);
        }
      }
      if (on_device_ && !cancelled) FinishQueued(queued);
      if (on_device_ && cancelled && queued > 0) {
        // Queued calls still read the buckets: let them end (the group is
        // being aborted, so they do soon) before the step is over.
        try {
          comm_.WaitQueued();
        } catch (const std::exception&) {
          // The cause is the compute thread's failure.
        }
      }
    } catch (const std::exception& e) {
      error = std::current_exception();
      comm_.Abort(std::string("gradient allreduce failed: ") + e.what());
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      error_ = error;
      step_done_ = true;
    }
    changed_.notify_all();
  }
}

}  // namespace ringlet::nn
