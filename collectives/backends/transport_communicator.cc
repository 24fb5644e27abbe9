#include "collectives/backends/transport_communicator.h"

#include <stdexcept>

#include "collectives/api/collective_error.h"

namespace ringlet::collectives {

TransportCommunicator::TransportCommunicator(
    std::unique_ptr<Transport> transport, AlgorithmList algorithms,
    const CommOptions& options, bool own_thread)
    : transport_(std::move(transport)),
      algorithms_(std::move(algorithms)),
      options_(options),
      queue_(own_thread ? std::make_unique<CallQueue>() : nullptr) {
  if (algorithms_.empty()) {
    throw std::invalid_argument("TransportCommunicator needs an algorithm");
  }
}

void TransportCommunicator::Fail(const CallDesc& call,
                                 const std::string& problem) {
  const std::string message =
      "rank " + std::to_string(rank()) + " " + Describe(call) + ": " + problem;
  transport_->Abort(message);
  throw CollectiveError(message);
}

CallDesc TransportCommunicator::Begin(OpKind kind, DataType type, ReduceOp op,
                                      int root, size_t count,
                                      const CallOptions& options,
                                      const Algorithm** algorithm) {
  CallDesc call;
  call.seq = next_seq_++;
  call.kind = kind;
  call.type = type;
  call.op = op;
  call.root = root;
  call.count = count;
  transport_->ThrowIfAborted();

  *algorithm = algorithms_[0].get();
  if (!options.algorithm.empty()) {
    bool found = false;
    for (size_t i = 0; i < algorithms_.size() && !found; ++i) {
      if (options.algorithm == algorithms_[i]->name()) {
        *algorithm = algorithms_[i].get();
        call.algorithm = static_cast<uint8_t>(i);
        found = true;
      }
    }
    if (!found) {
      std::string names;
      for (const auto& a : algorithms_) names += std::string(" ") + a->name();
      Fail(call, "unknown algorithm '" + options.algorithm +
                     "'; this communicator has:" + names);
    }
  }
  const auto timeout =
      options.timeout.count() > 0 ? options.timeout : options_.timeout;
  transport_->BeginCall(call, timeout);
  return call;
}

void TransportCommunicator::RequireBuffer(const CallDesc& call,
                                          const void* buffer,
                                          const char* name) {
  if (buffer == nullptr) {
    Fail(call, std::string(name) + " buffer is null with " +
                   std::to_string(call.count) + " elements");
  }
}

// Messages point into the callers' buffers: a call that fails while
// sending leaves only once no peer reads them (the caller frees them when
// the error reaches it). Before the algorithm runs nothing is sent.
template <typename Call>
void TransportCommunicator::Guarded(Call&& call) {
  try {
    call();
  } catch (...) {
    transport_->LeaveFailedCall();
    throw;
  }
}

void TransportCommunicator::DoAllReduce(const void* send, void* recv,
                                        size_t count, DataType type,
                                        ReduceOp op,
                                        const CallOptions& options) {
  const Algorithm* algorithm;
  const CallDesc call =
      Begin(OpKind::kAllReduce, type, op, 0, count, options, &algorithm);
  if (count == 0) return;
  RequireBuffer(call, send, "send");
  RequireBuffer(call, recv, "recv");
  if (size() == 1) {
    transport_->CopyLocal(recv, send, count * SizeOf(type));
    return;
  }
  Guarded([&] { algorithm->AllReduce(*transport_, call, send, recv); });
}

void TransportCommunicator::DoBroadcast(const void* send, void* recv,
                                        size_t count, DataType type, int root,
                                        const CallOptions& options) {
  const Algorithm* algorithm;
  const CallDesc call = Begin(OpKind::kBroadcast, type, ReduceOp::kSum, root,
                              count, options, &algorithm);
  if (root < 0 || root >= size()) {
    Fail(call, "root " + std::to_string(root) + " is out of range for " +
                   std::to_string(size()) + " ranks");
  }
  if (count == 0) return;
  if (rank() == root) RequireBuffer(call, send, "send");
  RequireBuffer(call, recv, "recv");
  if (size() == 1) {
    transport_->CopyLocal(recv, send, count * SizeOf(type));
    return;
  }
  Guarded([&] { algorithm->Broadcast(*transport_, call, send, recv); });
}

void TransportCommunicator::DoReduceScatter(const void* send, void* recv,
                                            size_t recv_count, DataType type,
                                            ReduceOp op,
                                            const CallOptions& options) {
  const Algorithm* algorithm;
  const CallDesc call = Begin(OpKind::kReduceScatter, type, op, 0, recv_count,
                              options, &algorithm);
  if (recv_count == 0) return;
  RequireBuffer(call, send, "send");
  RequireBuffer(call, recv, "recv");
  if (size() == 1) {
    transport_->CopyLocal(recv, send, recv_count * SizeOf(type));
    return;
  }
  Guarded([&] { algorithm->ReduceScatter(*transport_, call, send, recv); });
}

void TransportCommunicator::DoAllGather(const void* send, void* recv,
                                        size_t send_count, DataType type,
                                        const CallOptions& options) {
  const Algorithm* algorithm;
  const CallDesc call = Begin(OpKind::kAllGather, type, ReduceOp::kSum, 0,
                              send_count, options, &algorithm);
  if (send_count == 0) return;
  RequireBuffer(call, send, "send");
  RequireBuffer(call, recv, "recv");
  if (size() == 1) {
    transport_->CopyLocal(recv, send, send_count * SizeOf(type));
    return;
  }
  Guarded([&] { algorithm->AllGather(*transport_, call, send, recv); });
}

void TransportCommunicator::DoBarrier(const CallOptions& options) {
  const Algorithm* algorithm;
  const CallDesc call = Begin(OpKind::kBarrier, DataType::kInt32,
                              ReduceOp::kSum, 0, 0, options, &algorithm);
  if (size() == 1) return;
  Guarded([&] { algorithm->Barrier(*transport_, call); });
}

const Algorithm* TransportCommunicator::Find(const CallOptions& options) const {
  if (options.algorithm.empty()) return algorithms_[0].get();
  for (const auto& a : algorithms_) {
    if (options.algorithm == a->name()) return a.get();
  }
  return nullptr;
}

bool TransportCommunicator::AllReduceWire(const WireReduction& reduction,
                                          size_t count,
                                          const CallOptions& options) {
  const Algorithm* found = Find(options);
  // An unknown name fails in Begin, as for every call.
  if (found != nullptr &&
      (!found->RunsWire() || !transport_->reads_on_host())) {
    return false;
  }
  if (queue_) queue_->Drain();
  const Algorithm* algorithm;
  const CallDesc call = Begin(OpKind::kWireAllReduce, reduction.type(),
                              ReduceOp::kSum, 0, count, options, &algorithm);
  if (count == 0) return true;
  RequireBuffer(call, reduction.out(), "out");
  if (size() == 1) {
    void* words = transport_->Scratch(count * reduction.wire_bytes());
    reduction.Encode(0, count, words);
    reduction.Finish(0, count, words);
    return true;
  }
  Guarded([&] { algorithm->AllReduceWire(*transport_, call, reduction); });
  return true;
}

void TransportCommunicator::AllReduce(const void* send, void* recv,
                                      size_t count, DataType type, ReduceOp op,
                                      const CallOptions& options) {
  if (queue_) queue_->Drain();
  DoAllReduce(send, recv, count, type, op, options);
}

void TransportCommunicator::Broadcast(const void* send, void* recv,
                                      size_t count, DataType type, int root,
                                      const CallOptions& options) {
  if (queue_) queue_->Drain();
  DoBroadcast(send, recv, count, type, root, options);
}

void TransportCommunicator::ReduceScatter(const void* send, void* recv,
                                          size_t recv_count, DataType type,
                                          ReduceOp op,
                                          const CallOptions& options) {
  if (queue_) queue_->Drain();
  DoReduceScatter(send, recv, recv_count, type, op, options);
}

void TransportCommunicator::AllGather(const void* send, void* recv,
                                      size_t send_count, DataType type,
                                      const CallOptions& options) {
  if (queue_) queue_->Drain();
  DoAllGather(send, recv, send_count, type, options);
}

void TransportCommunicator::Barrier(const CallOptions& options) {
  if (queue_) queue_->Drain();
  DoBarrier(options);
}

std::unique_ptr<Work> TransportCommunicator::Queue(const CallOptions& options,
                                                   std::function<void()> call) {
  return queue_->Enqueue(options.before, std::move(call));
}

std::unique_ptr<Work> TransportCommunicator::AllReduceAsync(
    const void* send, void* recv, size_t count, DataType type, ReduceOp op,
    const gpu::Event* after, const CallOptions& options) {
  if (!queue_ || after != nullptr) {
    return Communicator::AllReduceAsync(send, recv, count, type, op, after,
                                        options);
  }
  return Queue(options,
               [=] { DoAllReduce(send, recv, count, type, op, options); });
}

std::unique_ptr<Work> TransportCommunicator::BroadcastAsync(
    const void* send, void* recv, size_t count, DataType type, int root,
    const CallOptions& options) {
  if (!queue_) {
    return Communicator::BroadcastAsync(send, recv, count, type, root, options);
  }
  return Queue(options,
               [=] { DoBroadcast(send, recv, count, type, root, options); });
}

std::unique_ptr<Work> TransportCommunicator::ReduceScatterAsync(
    const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
    const CallOptions& options) {
  if (!queue_) {
    return Communicator::ReduceScatterAsync(send, recv, recv_count, type, op,
                                            options);
  }
  return Queue(options, [=] {
    DoReduceScatter(send, recv, recv_count, type, op, options);
  });
}

std::unique_ptr<Work> TransportCommunicator::AllGatherAsync(
    const void* send, void* recv, size_t send_count, DataType type,
    const CallOptions& options) {
  if (!queue_) {
    return Communicator::AllGatherAsync(send, recv, send_count, type, options);
  }
  return Queue(options,
               [=] { DoAllGather(send, recv, send_count, type, options); });
}

std::unique_ptr<Work> TransportCommunicator::BarrierAsync(
    const CallOptions& options) {
  if (!queue_) return Communicator::BarrierAsync(options);
  return Queue(options, [=] { DoBarrier(options); });
}

void TransportCommunicator::Abort(const std::string& reason) {
  transport_->Abort("rank " + std::to_string(rank()) + " aborted: " + reason);
}

CommStats TransportCommunicator::stats() const {
  return CommStats{transport_->bytes_sent(), transport_->messages_sent()};
}

}  // namespace ringlet::collectives
