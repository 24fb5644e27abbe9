#include "parallel/bucket_reducer.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "collectives/api/collective_error.h"
#include "nn/device_event.h"
#include "parallel/bf16_wire.h"

namespace ringlet::nn {

BucketReducer::BucketReducer(Module& model, collectives::Communicator& comm,
                             int64_t bucket_bytes, const DeviceStream& stream,
                             collectives::DataType wire)
    : comm_(comm),
      stream_(stream),
      wire_(wire),
      on_device_(stream.device().is_cuda() && comm.OrdersOnDevice()),
      alone_(comm.size() == 1) {
  CheckGradWire(wire);
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
    b.flat = FlatTensors(grads, FlatTensors::kViews);
    b.wire = GradWire(wire_, b.flat.flat());
  }
  // Each parameter reports its own gradient, wherever it lives in the model.
  for (Parameter* p : params) {
    p->on_grad_ready = [this](Parameter& param) { MarkReady(&param); };
    hooked_.push_back(p);
  }
  thread_ = std::thread([this] { Loop(); });
}

BucketReducer::~BucketReducer() {
  for (Parameter* p : hooked_) p->on_grad_ready = nullptr;
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
  if (ready) return;  // Reported already (a parameter used twice).
  ready = true;
  --buckets_[bucket_of_.at(param)].pending;
}

void BucketReducer::MarkReady(Parameter* param) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Outside a step (the micro-batches before an accumulated step's last)
    // backward only adds to the gradients.
    if (step_done_) return;
    MarkReadyLocked(param);
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

void BucketReducer::StartBucket(Bucket& b) {
  // Marks the end of the bucket's backward on the stream. A communicator
  // ordering calls on the device is handed the event; the others read the
  // buffer at once, so the host waits for it (the backward, not comm).
  b.flat.Pack();
  if (!on_device_) b.flat.WaitUntilPacked();
  // Communication time only: from here, the cast to the wire type counts.
  const auto start = std::chrono::steady_clock::now();
  const DeviceEvent& ready =
      b.wire.Prepare(b.flat.packed(), /*host_wait=*/!on_device_);
  void* data = b.wire.data();
  started_.push_back(comm_.AllReduceAsync(
      data, data, b.wire.count(), b.wire.type(), collectives::ReduceOp::kSum,
      on_device_ ? ready.event() : nullptr));
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  std::lock_guard<std::mutex> lock(mu_);
  comm_seconds_ += took.count();
}

void BucketReducer::FinishStarted(bool rethrow) {
  // The one host wait of the step, with the communicator's timeout.
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  for (auto& work : started_) {
    try {
      work->Wait();
    } catch (const std::exception&) {
      if (!error) error = std::current_exception();
    }
  }
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  {
    std::lock_guard<std::mutex> lock(mu_);
    comm_seconds_ += took.count();
  }
  if (error || !rethrow) {
    started_.clear();
    if (error && rethrow) std::rethrow_exception(error);
    return;  // A cancelled step's sums are not used.
  }
  for (size_t i = 0; i < started_.size(); ++i) {
    // Queued before FinishStep returns, so the optimizer's step (queued
    // after it on the stream) sees the sums.
    if (const gpu::Event* done = started_[i]->event()) {
      QueueWaitForEvent(stream_.device(), *done);
    }
    Bucket& b = buckets_[i];
    // After the sum, on the stream (at once on a CPU).
    b.wire.Finish();
    b.flat.Unpack();  // Copies only a replaced gradient.
  }
  started_.clear();
}

void BucketReducer::Loop() {
  const DeviceStream::Use use(stream_);
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      changed_.wait(lock, [&] { return stopping_ || step_ != seen; });
      if (stopping_) return;
      seen = step_;
    }
    std::exception_ptr error;
    try {
      bool cancelled = false;
      for (Bucket& b : buckets_) {
        {
          std::unique_lock<std::mutex> lock(mu_);
          changed_.wait(lock, [&] { return cancelled_ || b.pending == 0; });
          cancelled = cancelled_;
        }
        if (cancelled) break;
        StartBucket(b);
      }
      // A cancelled step's calls still use the buckets: let them end (the
      // group is being aborted, so they do soon) before the step is over.
      FinishStarted(/*rethrow=*/!cancelled);
    } catch (const std::exception& e) {
      error = std::current_exception();
      comm_.Abort(std::string("gradient allreduce failed: ") + e.what());
      FinishStarted(/*rethrow=*/false);
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
