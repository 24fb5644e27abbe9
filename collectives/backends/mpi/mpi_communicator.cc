#include "collectives/backends/mpi/mpi_communicator.h"

#include <chrono>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <vector>

#include "collectives/api/collective_error.h"
#include "collectives/transport/host/host_kernels.h"

namespace ringlet::collectives::mpi {
namespace {

MPI_Datatype ToMpi(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return MPI_FLOAT;
    case DataType::kFloat64:
      return MPI_DOUBLE;
    case DataType::kInt32:
      return MPI_INT;
    case DataType::kBFloat16:
      return MPI_UINT16_T;  // MPI has no bfloat16: 16-bit words, our ops.
  }
  return MPI_DATATYPE_NULL;
}

// bfloat16 words combined as the host transport does: in float32, rounded
// once per step.
template <ReduceOp kOp>
void CombineBf16(void* in, void* inout, int* len, MPI_Datatype*) {
  host::CombineInto(inout, in, inout, static_cast<size_t>(*len),
                    DataType::kBFloat16, kOp, 0, false);
}

// Our MPI_Op for bfloat16 `op` (sum for avg), made on first use. Called
// under the MPI lock (MpiWorld::Call), which also guards the table; the
// ops live until MPI_Finalize.
MPI_Op Bf16Op(ReduceOp op) {
  static MPI_Op ops[3] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* const functions[3] = {&CombineBf16<ReduceOp::kSum>,
                                                  &CombineBf16<ReduceOp::kMax>,
                                                  &CombineBf16<ReduceOp::kMin>};
  const int k = op == ReduceOp::kMax ? 1 : op == ReduceOp::kMin ? 2 : 0;
  if (ops[k] == MPI_OP_NULL) {
    MPI_Op_create(functions[k], /*commute=*/1, &ops[k]);
  }
  return ops[k];
}

// avg is sum followed by a division (MPI has no average).
MPI_Op ToMpi(DataType type, ReduceOp op) {
  if (type == DataType::kBFloat16) return Bf16Op(op);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
  }
  return MPI_OP_NULL;
}

}  // namespace

MpiCommunicator::MpiCommunicator(std::shared_ptr<MpiWorld> world,
                                 const CommOptions& options)
    : world_(std::move(world)), options_(options) {
  if (world_->size() != world_->processes()) {
    throw CollectiveError(
        "the mpi backend runs one rank per process, and this job has " +
        std::to_string(world_->size()) + " ranks in " +
        std::to_string(world_->processes()) +
        " processes; give each process one device, or use --backend=ring");
  }
  comm_ = world_->DupWorld();
}

void MpiCommunicator::Fail(const CallDesc& call, const std::string& problem) {
  const std::string message =
      "rank " + std::to_string(rank()) + " " + Describe(call) + ": " + problem;
  {
    std::lock_guard<std::mutex> lock(reason_mu_);
    if (!aborted_.exchange(true)) reason_ = message;
  }
  throw CollectiveError(message);
}

void MpiCommunicator::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(reason_mu_);
  if (!aborted_.exchange(true)) {
    reason_ = "rank " + std::to_string(rank()) + " aborted: " + reason;
  }
}

void MpiCommunicator::Finish(const CallDesc& call, MPI_Request* request,
                             Clock::time_point deadline) {
  const bool done = world_->Wait(request, [&] {
    return aborted_.load(std::memory_order_acquire) || Clock::now() >= deadline;
  });
  if (done) return;
  // A started collective cannot be cancelled; the communicator is unusable
  // from here on, which the abort records.
  if (aborted_.load()) {
    std::lock_guard<std::mutex> lock(reason_mu_);
    throw CollectiveError(reason_);
  }
  Fail(call,
       "timed out waiting for the other ranks (a rank has not made this "
       "call, or has failed)");
}

Clock::time_point MpiCommunicator::Begin(CallDesc* call,
                                         const CallOptions& options) {
  call->seq = next_seq_++;
  if (aborted_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(reason_mu_);
    throw CollectiveError("communicator was aborted: " + reason_);
  }
  if (!options.algorithm.empty() && options.algorithm != "mpi") {
    Fail(*call, "unknown algorithm '" + options.algorithm +
                    "'; this communicator has: mpi");
  }
  if (call->count > static_cast<uint64_t>(std::numeric_limits<int>::max())) {
    Fail(*call, "more elements than one MPI call takes (2^31 - 1)");
  }
  const auto timeout =
      options.timeout.count() > 0 ? options.timeout : options_.timeout;
  const Clock::time_point deadline = Clock::now() + timeout;
  // Every rank's description of the call, compared with ours.
  std::vector<CallDesc> calls(size());
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Iallgather (call check)", [&] {
    return MPI_Iallgather(call, sizeof(CallDesc), MPI_BYTE, calls.data(),
                          sizeof(CallDesc), MPI_BYTE, comm_, &request);
  });
  Finish(*call, &request, deadline);
  for (int r = 0; r < size(); ++r) {
    if (calls[r] != *call) {
      Fail(*call, "rank " + std::to_string(r) + " called " +
                      Describe(calls[r]) + " instead");
    }
  }
  return deadline;
}

void MpiCommunicator::Count(const CallDesc& call, size_t elements) {
  stats_.bytes_sent += elements * SizeOf(call.type);
  ++stats_.messages_sent;
}

MPI_Request MpiCommunicator::StartAllReduce(const CallDesc& call,
                                            const void* send, void* recv) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (call.count == 0) return request;
  if (send == nullptr || recv == nullptr) Fail(call, "a buffer is null");
  world_->Call("MPI_Iallreduce", [&] {
    return MPI_Iallreduce(send == recv ? MPI_IN_PLACE : send, recv,
                          static_cast<int>(call.count), ToMpi(call.type),
                          ToMpi(call.type, call.op), comm_, &request);
  });
  return request;
}

void MpiCommunicator::EndAllReduce(const CallDesc& call, void* recv) {
  if (call.count == 0) return;
  if (call.op == ReduceOp::kAvg) {
    host::DivideInPlace(recv, call.count, call.type, size());
  }
  Count(call, call.count);
}

// A collective started on MPI (MPI_I*); Wait's deadline starts when Wait
// is called, and `after` (the average's division, the statistics) runs
// once the request has completed.
class MpiWork : public Work {
 public:
  MpiWork(MpiCommunicator& comm, const CallDesc& call, MPI_Request request,
          std::chrono::milliseconds timeout, std::function<void()> after)
      : comm_(comm),
        call_(call),
        request_(request),
        timeout_(timeout),
        after_(std::move(after)) {}

  void Wait() override {
    if (!finished_) {
      try {
        if (request_ != MPI_REQUEST_NULL) {
          comm_.Finish(call_, &request_, Clock::now() + timeout_);
        }
        End();
      } catch (const CollectiveError&) {
        error_ = std::current_exception();
      }
      finished_ = true;
    }
    if (error_) std::rethrow_exception(error_);
  }

  bool Done() override {
    if (finished_) return true;
    if (comm_.aborted_.load()) return true;
    try {
      int flag = 1;
      if (request_ != MPI_REQUEST_NULL) {
        comm_.world_->Call("MPI_Test", [&] {
          return MPI_Test(&request_, &flag, MPI_STATUS_IGNORE);
        });
      }
      if (flag == 0) return false;
      End();
    } catch (const CollectiveError&) {
      error_ = std::current_exception();
    }
    finished_ = true;
    return true;
  }

  std::exception_ptr error() override {
    if (finished_) return error_;
    if (comm_.aborted_.load()) {
      std::lock_guard<std::mutex> lock(comm_.reason_mu_);
      return std::make_exception_ptr(CollectiveError(comm_.reason_));
    }
    return nullptr;
  }

  double seconds() const override { return finished_ ? seconds_ : -1; }

 private:
  void End() {
    if (after_) after_();
    seconds_ = std::chrono::duration<double>(Clock::now() - start_).count();
  }

  MpiCommunicator& comm_;
  const CallDesc call_;
  MPI_Request request_;
  const std::chrono::milliseconds timeout_;
  const std::function<void()> after_;
  const Clock::time_point start_ = Clock::now();
  bool finished_ = false;
  double seconds_ = -1;
  std::exception_ptr error_;
};

std::chrono::milliseconds MpiCommunicator::TimeoutOf(
    const CallOptions& options) const {
  return options.timeout.count() > 0 ? options.timeout : options_.timeout;
}

std::unique_ptr<Work> MpiCommunicator::Started(const CallDesc& call,
                                               MPI_Request request,
                                               const CallOptions& options,
                                               std::function<void()> after) {
  return std::make_unique<MpiWork>(*this, call, request, TimeoutOf(options),
                                   std::move(after));
}

std::unique_ptr<Work> MpiCommunicator::AllReduceAsync(
    const void* send, void* recv, size_t count, DataType type, ReduceOp op,
    const gpu::Event* after, const CallOptions& options) {
  if (after != nullptr) {
    return Communicator::AllReduceAsync(send, recv, count, type, op, after,
                                        options);  // Its error, said once.
  }
  CallDesc call{};
  call.kind = OpKind::kAllReduce;
  call.type = type;
  call.op = op;
  call.count = count;
  Begin(&call, options);
  const MPI_Request request = StartAllReduce(call, send, recv);
  return Started(call, request, options,
                 [this, call, recv] { EndAllReduce(call, recv); });
}

std::unique_ptr<Work> MpiCommunicator::BroadcastAsync(
    const void* send, void* recv, size_t count, DataType type, int root,
    const CallOptions& options) {
  CallDesc call{};
  call.kind = OpKind::kBroadcast;
  call.type = type;
  call.root = root;
  call.count = count;
  Begin(&call, options);
  if (root < 0 || root >= size()) {
    Fail(call, "root " + std::to_string(root) + " is out of range for " +
                   std::to_string(size()) + " ranks");
  }
  if (count == 0) return Started(call, MPI_REQUEST_NULL, options, nullptr);
  if (recv == nullptr || (rank() == root && send == nullptr)) {
    Fail(call, "a buffer is null");
  }
  if (rank() == root && send != recv) {
    std::memcpy(recv, send, count * SizeOf(type));
  }
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Ibcast", [&] {
    return MPI_Ibcast(recv, static_cast<int>(count), ToMpi(type), root, comm_,
                      &request);
  });
  return Started(call, request, options,
                 [this, call, count] { Count(call, count); });
}

std::unique_ptr<Work> MpiCommunicator::ReduceScatterAsync(
    const void* send, void* recv, size_t recv_count, DataType type, ReduceOp op,
    const CallOptions& options) {
  CallDesc call{};
  call.kind = OpKind::kReduceScatter;
  call.type = type;
  call.op = op;
  call.count = recv_count;
  Begin(&call, options);
  if (recv_count == 0) {
    return Started(call, MPI_REQUEST_NULL, options, nullptr);
  }
  if (send == nullptr || recv == nullptr) Fail(call, "a buffer is null");
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Ireduce_scatter_block", [&] {
    return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(recv_count),
                                     ToMpi(type), ToMpi(type, op), comm_,
                                     &request);
  });
  return Started(call, request, options, [this, call, recv] {
    if (call.op == ReduceOp::kAvg) {
      host::DivideInPlace(recv, call.count, call.type, size());
    }
    Count(call, call.count * size());
  });
}

std::unique_ptr<Work> MpiCommunicator::AllGatherAsync(
    const void* send, void* recv, size_t send_count, DataType type,
    const CallOptions& options) {
  CallDesc call{};
  call.kind = OpKind::kAllGather;
  call.type = type;
  call.count = send_count;
  Begin(&call, options);
  if (send_count == 0) {
    return Started(call, MPI_REQUEST_NULL, options, nullptr);
  }
  if (send == nullptr || recv == nullptr) Fail(call, "a buffer is null");
  // In place means send is this rank's block of recv, as in NCCL.
  const char* own =
      static_cast<const char*>(recv) + rank() * send_count * SizeOf(type);
  MPI_Request request = MPI_REQUEST_NULL;
  world_->Call("MPI_Iallgather", [&] {
    return MPI_Iallgather(send == own ? MPI_IN_PLACE : send,
                          static_cast<int>(send_count), ToMpi(type), recv,
                          static_cast<int>(send_count), ToMpi(type), comm_,
                          &request);
  });
  return Started(call, request, options,
                 [this, call] { Count(call, call.count * size()); });
}

std::unique_ptr<Work> MpiCommunicator::BarrierAsync(
    const CallOptions& options) {
  CallDesc call{};
  call.kind = OpKind::kBarrier;
  call.type = DataType::kInt32;
  // The call check is itself a barrier: every rank has arrived once it ends.
  Begin(&call, options);
  return Started(call, MPI_REQUEST_NULL, options, nullptr);
}

// The blocking calls: started, then waited for at once (one path for both).
void MpiCommunicator::AllReduce(const void* send, void* recv, size_t count,
                                DataType type, ReduceOp op,
                                const CallOptions& options) {
  AllReduceAsync(send, recv, count, type, op, nullptr, options)->Wait();
}

void MpiCommunicator::Broadcast(const void* send, void* recv, size_t count,
                                DataType type, int root,
                                const CallOptions& options) {
  BroadcastAsync(send, recv, count, type, root, options)->Wait();
}

void MpiCommunicator::ReduceScatter(const void* send, void* recv,
                                    size_t recv_count, DataType type,
                                    ReduceOp op, const CallOptions& options) {
  ReduceScatterAsync(send, recv, recv_count, type, op, options)->Wait();
}

void MpiCommunicator::AllGather(const void* send, void* recv, size_t send_count,
                                DataType type, const CallOptions& options) {
  AllGatherAsync(send, recv, send_count, type, options)->Wait();
}

void MpiCommunicator::Barrier(const CallOptions& options) {
  BarrierAsync(options)->Wait();
}

}  // namespace ringlet::collectives::mpi
