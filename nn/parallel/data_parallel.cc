#include "nn/parallel/data_parallel.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "collectives/collectives.h"
#include "nn/ops/loss.h"

namespace ringlet::nn {
namespace {

using collectives::Communicator;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Copies the first replica's values into every replica, as one message.
void BroadcastFromFirst(Communicator& comm, const std::vector<Tensor*>& all,
                        std::vector<float>* flat) {
  size_t total = 0;
  for (const Tensor* t : all) total += t->numel();
  flat->resize(total);
  float* out = flat->data();
  for (const Tensor* t : all) {
    std::memcpy(out, t->data(), t->numel() * sizeof(float));
    out += t->numel();
  }
  comm.Broadcast(flat->data(), flat->data(), total,
                 collectives::DataType::kFloat32, /*root=*/0);
  const float* in = flat->data();
  for (Tensor* t : all) {
    std::memcpy(t->data(), in, t->numel() * sizeof(float));
    in += t->numel();
  }
}

Tensor ShardTensor(const ReplicaInput& shard, const Shape& sample_shape) {
  Shape shape = {shard.count};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  Tensor x = Tensor::Uninitialized(shape);
  if (x.numel() > 0) {
    std::memcpy(x.data(), shard.images, x.numel() * sizeof(float));
  }
  return x;
}

}  // namespace

struct DataParallel::Replica {
  std::unique_ptr<Sequential> model;
  std::unique_ptr<Sgd> optimizer;
  std::unique_ptr<BucketReducer> reducer;
  std::vector<Tensor*> buffers;
  std::vector<float> buffer_flat;
  double bn_comm_seconds = 0;  // Synchronised batch norm, this step.
  TrainStepStats stats;
};

DataParallel::DataParallel(const ModelFactory& make_model,
                           const std::vector<Device>& devices,
                           const DataParallelOptions& options)
    : devices_(devices), options_(options) {
  if (devices_.empty()) {
    throw std::invalid_argument("data parallel: no devices given");
  }
  for (size_t i = 0; i < devices_.size(); ++i) {
    const Device& d = devices_[i];
    for (size_t j = 0; j < i; ++j) {
      if (devices_[j] == d) {
        throw DeviceError("data parallel: " + ToString(d) +
                          " is listed twice in " + ToString(devices_) +
                          "; each replica needs a device of its own");
      }
    }
    if (!d.is_cpu()) {
      throw DeviceError("data parallel: " + ToString(d) +
                        ": nn in this build runs on CPU devices only (its "
                        "CUDA kernels are not written yet); use cpu:N");
    }
  }
  const int n = size();
  grad_comms_ = collectives::CreateGroup(options_.backend, n, options_.comm);
  if (options_.sync_bn) {
    // A second group: batch norm sums happen on the compute thread while
    // the reducer's thread may be inside a gradient allreduce.
    bn_comms_ = collectives::CreateGroup(options_.backend, n, options_.comm);
  }
  workers_ = std::make_unique<DeviceWorkers>(n, options_.threads_per_device);
  replicas_.resize(n);
  RunOnDevices([&](int d) {
    auto r = std::make_unique<Replica>();
    r->model = make_model();
    std::vector<Tensor*> values;
    for (Parameter* p : r->model->Parameters()) values.push_back(&p->value);
    for (Buffer* b : r->model->Buffers()) r->buffers.push_back(&b->value);
    values.insert(values.end(), r->buffers.begin(), r->buffers.end());
    std::vector<float> flat;
    BroadcastFromFirst(*grad_comms_[d], values, &flat);
    r->optimizer = std::make_unique<Sgd>(r->model->Parameters(), options_.sgd);
    if (options_.sync_bn) {
      Communicator* comm = bn_comms_[d].get();
      Replica* raw = r.get();
      ReplicaSum sum = [comm, raw](double* v, int64_t count) {
        const Clock::time_point start = Clock::now();
        comm->AllReduce(v, v, count, collectives::DataType::kFloat64,
                        collectives::ReduceOp::kSum);
        raw->bn_comm_seconds += SecondsSince(start);
      };
      VisitModules(*r->model, [&](Module& m) {
        if (auto* bn = dynamic_cast<BatchNorm2d*>(&m)) bn->set_replica_sum(sum);
      });
    }
    r->reducer = std::make_unique<BucketReducer>(*r->model, *grad_comms_[d],
                                                 options_.bucket_bytes);
    replicas_[d] = std::move(r);
  });
}

DataParallel::~DataParallel() {
  // The reducers' threads use the communicators: stop them first.
  for (auto& r : replicas_) {
    if (r) r->reducer.reset();
  }
}

void DataParallel::Fail(int device, std::exception_ptr error) {
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
  grad_comms_[device]->Abort(reason);
  if (!bn_comms_.empty()) bn_comms_[device]->Abort(reason);
}

void DataParallel::RunOnDevices(const std::function<void(int)>& fn) {
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

void DataParallel::CheckShards(const std::vector<ReplicaInput>& shards) const {
  if (static_cast<int>(shards.size()) != size()) {
    throw std::invalid_argument(
        "data parallel: got " + std::to_string(shards.size()) + " shards for " +
        std::to_string(size()) + " devices " + ToString(devices_) +
        "; split each batch into one shard per device");
  }
  for (size_t d = 0; d < shards.size(); ++d) {
    const ReplicaInput& s = shards[d];
    if (s.count < 0 || (s.count > 0 && (!s.images || !s.labels))) {
      throw std::invalid_argument("data parallel: shard " + std::to_string(d) +
                                  " has count " + std::to_string(s.count) +
                                  " and missing images or labels");
    }
  }
}

TrainStepStats DataParallel::TrainStep(
    const std::vector<ReplicaInput>& shards) {
  CheckShards(shards);
  int64_t total = 0;
  for (const ReplicaInput& s : shards) total += s.count;
  if (total == 0) {
    throw std::invalid_argument("data parallel: a training step needs samples");
  }
  RunOnDevices([&](int d) {
    Replica& r = *replicas_[d];
    r.stats = TrainStepStats();
    r.bn_comm_seconds = 0;
    r.model->ZeroGrad();
    r.reducer->BeginStep();
    try {
      const ReplicaInput& shard = shards[d];
      // With synchronised batch norm an empty shard still takes part in
      // the statistics' sums.
      if (shard.count > 0 || options_.sync_bn) {
        const Tensor logits =
            r.model->Forward(ShardTensor(shard, options_.sample_shape));
        LossResult loss =
            SoftmaxCrossEntropy(logits, shard.labels, Reduction::kSum);
        // The mean over the whole batch, not over this shard.
        const float denominator = static_cast<float>(total);
        for (int64_t i = 0; i < loss.dlogits.numel(); ++i) {
          loss.dlogits.data()[i] /= denominator;
        }
        r.model->Backward(loss.dlogits);
        r.stats.loss_sum = loss.loss;
        r.stats.correct = loss.correct;
        r.stats.samples = shard.count;
      }
      r.reducer->MarkAllReady();
    } catch (...) {
      Fail(d, std::current_exception());
      r.reducer->Cancel();
      try {
        r.reducer->FinishStep();
      } catch (const std::exception&) {
        // The cause is the exception in flight.
      }
      throw;
    }
    r.stats.comm_seconds = r.reducer->FinishStep() + r.bn_comm_seconds;
    r.optimizer->Step();
    if (!options_.sync_bn && !r.buffers.empty()) {
      const Clock::time_point start = Clock::now();
      BroadcastFromFirst(*grad_comms_[d], r.buffers, &r.buffer_flat);
      r.stats.comm_seconds += SecondsSince(start);
    }
  });
  TrainStepStats out;
  for (const auto& r : replicas_) {
    out.loss_sum += r->stats.loss_sum;
    out.correct += r->stats.correct;
    out.samples += r->stats.samples;
  }
  out.comm_seconds = replicas_[0]->stats.comm_seconds;
  return out;
}

int64_t DataParallel::CountCorrect(const std::vector<ReplicaInput>& shards) {
  CheckShards(shards);
  std::vector<int64_t> correct(size(), 0);
  RunOnDevices([&](int d) {
    Sequential& model = *replicas_[d]->model;
    if (shards[d].count == 0) return;
    model.SetTraining(false);
    try {
      const Tensor logits =
          model.Forward(ShardTensor(shards[d], options_.sample_shape));
      correct[d] =
          SoftmaxCrossEntropy(logits, shards[d].labels, Reduction::kSum)
              .correct;
    } catch (...) {
      model.SetTraining(true);
      throw;
    }
    model.SetTraining(true);
  });
  int64_t sum = 0;
  for (int64_t c : correct) sum += c;
  return sum;
}

Sequential& DataParallel::replica(int device) {
  return *replicas_.at(device)->model;
}

int DataParallel::num_buckets() const {
  return replicas_[0]->reducer->num_buckets();
}

void DataParallel::set_lr(float lr) {
  for (auto& r : replicas_) r->optimizer->set_lr(lr);
}

}  // namespace ringlet::nn
