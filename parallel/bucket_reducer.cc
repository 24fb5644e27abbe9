#include "parallel/bucket_reducer.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

#include "collectives/api/collective_error.h"
#include "nn/device_event.h"
#include "parallel/bf16_wire.h"

namespace ringlet::parallel {

BucketReducer::BucketReducer(nn::Module& model, collectives::Communicator& comm,
                             int64_t bucket_bytes,
                             const nn::DeviceStream& stream,
                             collectives::DataType wire)
    : comm_(comm),
      stream_(stream),
      wire_(wire),
      on_device_(stream.device().is_cuda() && comm.OrdersOnDevice()),
      alone_(comm.size() == 1) {
  CheckGradWire(wire);
  std::vector<nn::Parameter*> params = model.Parameters();

  // Backward finishes the last parameters first: bucket in reverse order.
  std::reverse(params.begin(), params.end());
  int64_t bucket_elements = 0;
  for (nn::Parameter* p : params) {
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
  // buffers, no hooks).
  if (alone_) return;
  for (Bucket& b : buckets_) {
    std::vector<nn::Tensor*> grads;
    for (nn::Parameter* p : b.params) grads.push_back(&p->grad);
    b.flat = FlatTensors(grads, FlatTensors::kViews);
    b.wire = GradWire(wire_, b.flat.flat());
  }
  // Each parameter reports its own gradient, wherever it lives in the model.
  for (nn::Parameter* p : params) {
    p->on_grad_ready = [this](nn::Parameter& param) { MarkReady(&param); };
    hooked_.push_back(p);
  }
}

BucketReducer::~BucketReducer() {
  for (nn::Parameter* p : hooked_) p->on_grad_ready = nullptr;
  // A step left unfinished (its replica threw and never finished it): its
  // calls still use the buckets, so they end before the buckets go.
  for (auto& work : started_) {
    try {
      work->Wait();
    } catch (const std::exception&) {
      // The step's failure was reported where it happened.
    }
  }
}

void BucketReducer::BeginStep() {
  if (alone_) return;  // Nothing is started: FinishStep returns at once.
  for (auto& [param, ready] : ready_) ready = false;
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size());
  next_ = 0;
  cancelled_ = false;
  comm_seconds_ = 0;
  host_seconds_ = 0;
  in_step_ = true;
}

void BucketReducer::CountReady(nn::Parameter* param) {
  bool& ready = ready_[param];
  if (ready) return;  // Reported already (a parameter used twice).
  ready = true;
  --buckets_[bucket_of_.at(param)].pending;
}

void BucketReducer::MarkReady(nn::Parameter* param) {
  // Outside a step (the micro-batches before an accumulated step's last)
  // backward only adds to the gradients.
  if (!in_step_) return;
  CountReady(param);
  StartReadyBuckets();
}

void BucketReducer::MarkAllReady() {
  if (alone_ || !in_step_) return;
  for (auto& [param, index] : bucket_of_) CountReady(param);
  StartReadyBuckets();
}

void BucketReducer::Cancel() { cancelled_ = true; }

void BucketReducer::StartReadyBuckets() {
  // Strictly in order, so every replica makes the same sequence of calls.
  while (!cancelled_ && next_ < buckets_.size() &&
         buckets_[next_].pending == 0) {
    try {
      StartBucket(buckets_[next_]);
    } catch (const std::exception& e) {
      comm_.Abort(std::string("gradient allreduce failed: ") + e.what());
      throw;
    }
    ++next_;
  }
}

double BucketReducer::FinishStep() {
  if (!in_step_) return 0;
  in_step_ = false;
  // A cancelled step's calls still use the buckets: let them end (the
  // group is being aborted, so they do soon) before the step is over.
  FinishStarted(/*rethrow=*/!cancelled_);
  return comm_seconds_;
}

void BucketReducer::StartBucket(Bucket& b) {
  // Marks the end of the bucket's backward on the stream, and casts it to
  // the wire's type after it. A communicator ordering calls on the device
  // is handed the event; the others read the buffer on the host, so their
  // call's thread waits for it first (never the compute thread, which goes
  // on queueing the earlier layers' backward).
  b.flat.Pack();
  const auto start = std::chrono::steady_clock::now();
  const nn::DeviceEvent& ready =
      b.wire.Prepare(b.flat.packed(), /*host_wait=*/false);
  collectives::CallOptions options;
  if (!on_device_) options.before = [&ready] { ready.Wait(); };
  void* data = b.wire.data();
  started_.push_back(comm_.AllReduceAsync(
      data, data, b.wire.count(), b.wire.type(), collectives::ReduceOp::kSum,
      on_device_ ? ready.event() : nullptr, options));
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  host_seconds_ += took.count();
}

void BucketReducer::FinishStarted(bool rethrow) {
  // The one host wait of the step, with the communicator's timeout.
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr error;
  double ran = 0;
  bool all_known = !started_.empty();
  for (auto& work : started_) {
    try {
      work->Wait();
    } catch (const std::exception&) {
      if (!error) error = std::current_exception();
    }
    const double seconds = work->seconds();
    if (seconds < 0) all_known = false;
    ran += seconds;
  }
  const std::chrono::duration<double> took =
      std::chrono::steady_clock::now() - start;
  host_seconds_ += took.count();
  // Time in collectives: how long the calls ran where the host ran them
  // (on the communicator's thread, hidden behind backward or not); else
  // the host's time starting and waiting for them (calls on a device).
  comm_seconds_ = all_known ? ran : host_seconds_;
  if (error || !rethrow) {
    started_.clear();
    if (error && rethrow) std::rethrow_exception(error);
    return;  // A cancelled step's sums are not used.
  }
  for (size_t i = 0; i < started_.size(); ++i) {
    // Queued before FinishStep returns, so the optimizer's step (queued
    // after it on the stream) sees the sums.
    if (const gpu::Event* done = started_[i]->event()) {
      nn::QueueWaitForEvent(stream_.device(), *done);
    }
    Bucket& b = buckets_[i];
    // After the sum, on the stream (at once on a CPU).
    b.wire.Finish();
    b.flat.Unpack();  // Copies only a replaced gradient.
  }
  started_.clear();
}

namespace {

class Bucketed : public GradientReducer {
 public:
  Bucketed(nn::Module& model, const ReducerContext& c, int64_t bucket_bytes)
      : reducer_(model, *c.comm, bucket_bytes, c.stream, c.wire) {}
  void BeginLastMicroBatch() override { reducer_.BeginStep(); }
  void AllReady() override { reducer_.MarkAllReady(); }
  double Reduce(const std::vector<nn::Tensor*>& grads) override {
    (void)grads;  // Views into the buckets, summed in place.
    return reducer_.FinishStep();
  }
  void Cancel() override {
    reducer_.Cancel();
    try {
      reducer_.FinishStep();
    } catch (const std::exception&) {
      // The cause is the exception in flight.
    }
  }
  int num_buckets() const override { return reducer_.num_buckets(); }

 private:
  BucketReducer reducer_;
};

}  // namespace

ReducerFactory BucketedReducer(int64_t bucket_bytes) {
  return [bucket_bytes](
             const ReducerContext& c) -> std::unique_ptr<GradientReducer> {
    nn::Module* model = c.body != nullptr ? c.body->module() : nullptr;
    if (model == nullptr) {
      throw std::invalid_argument(
          "bucketed reducer: buckets start from each parameter's hook, so "
          "the body needs a Module; sum a body of functions with one flat "
          "allreduce instead");
    }
    return std::make_unique<Bucketed>(*model, c, bucket_bytes);
  };
}

}  // namespace ringlet::parallel
