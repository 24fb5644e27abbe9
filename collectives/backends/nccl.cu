// The nccl backend: one NCCL communicator per GPU of this process, created
// together with ncclCommInitAll, each used from its own rank thread.
//
// Calls go to NCCL with NCCL's own call shape on the rank's stream, then the
// host waits for that stream by polling, so a peer that never arrives
// becomes a CollectiveError at the deadline (after ncclCommAbort) instead of
// a hang. NCCL does not compare calls across ranks; a mismatch shows up as
// that timeout.
//
// Abort may come from any thread, any number of times (a replica's compute
// thread and its gradient reducer both do when a step fails), while
// another thread waits in a call: the NCCL communicator is aborted (freed)
// exactly once, under a lock every NCCL call takes, and is not touched
// again.
#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "collectives/backends/gpu_list.h"
#include "collectives/backends/nccl.h"
#include "collectives/transport/call_desc.h"
#include "gpu/cuda_check.h"
#include "gpu/cuda_error.h"
#include "gpu/device_guard.h"
#include "gpu/device_probe.h"
#include "gpu/stream.h"

namespace ringlet::collectives {
namespace {

#define RINGLET_NCCL_CHECK(call)                                         \
  do {                                                                   \
    const ncclResult_t rc_ = (call);                                     \
    if (rc_ != ncclSuccess) {                                            \
      throw CollectiveError(std::string(__FILE__) + ":" +                \
                            std::to_string(__LINE__) + ": " #call ": " + \
                            ncclGetErrorString(rc_));                    \
    }                                                                    \
  } while (0)

ncclDataType_t ToNccl(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kBFloat16:
      return ncclBfloat16;
  }
  return ncclFloat32;
}

ncclRedOp_t ToNccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return ncclSum;
    case ReduceOp::kAvg:
      return ncclAvg;
    case ReduceOp::kMax:
      return ncclMax;
    case ReduceOp::kMin:
      return ncclMin;
  }
  return ncclSum;
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(int rank, int size, int device, ncclComm_t comm,
                   const CommOptions& options)
      : rank_(rank),
        size_(size),
        device_(device),
        comm_(comm),
        options_(options) {
    gpu::DeviceGuard guard(device_);
    RINGLET_CUDA_CHECK(
        cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~NcclCommunicator() override {
    cudaSetDevice(device_);
    {
      // ncclCommAbort freed it already when aborted (comm_ is null then).
      std::lock_guard<std::mutex> lock(comm_mu_);
      if (comm_ != nullptr) ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
    if (barrier_word_ != nullptr) cudaFree(barrier_word_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "nccl"; }

  void AllReduce(const void* send, void* recv, size_t count, DataType type,
                 ReduceOp op, const CallOptions& options) override {
    const CallDesc call = Begin(OpKind::kAllReduce, type, op, 0, count);
    Run(call, options, [&](ncclComm_t comm) {
      RINGLET_NCCL_CHECK(ncclAllReduce(send, recv, count, ToNccl(type),
                                       ToNccl(op), comm, stream_));
    });
    stats_.bytes_sent += 2 * (size_ - 1) * count * SizeOf(type) / size_;
  }

  void Broadcast(const void* send, void* recv, size_t count, DataType type,
                 int root, const CallOptions& options) override {
    const CallDesc call =
        Begin(OpKind::kBroadcast, type, ReduceOp::kSum, root, count);
    if (root < 0 || root >= size_) {
      Fail(call, "root " + std::to_string(root) + " is out of range for " +
                     std::to_string(size_) + " ranks");
    }
    Run(call, options, [&](ncclComm_t comm) {
      RINGLET_NCCL_CHECK(
          ncclBroadcast(send, recv, count, ToNccl(type), root, comm, stream_));
    });
  }

  void ReduceScatter(const void* send, void* recv, size_t recv_count,
                     DataType type, ReduceOp op,
                     const CallOptions& options) override {
    const CallDesc call =
        Begin(OpKind::kReduceScatter, type, op, 0, recv_count);
    Run(call, options, [&](ncclComm_t comm) {
      RINGLET_NCCL_CHECK(ncclReduceScatter(send, recv, recv_count, ToNccl(type),
                                           ToNccl(op), comm, stream_));
    });
  }

  void AllGather(const void* send, void* recv, size_t send_count, DataType type,
                 const CallOptions& options) override {
    const CallDesc call =
        Begin(OpKind::kAllGather, type, ReduceOp::kSum, 0, send_count);
    Run(call, options, [&](ncclComm_t comm) {
      RINGLET_NCCL_CHECK(
          ncclAllGather(send, recv, send_count, ToNccl(type), comm, stream_));
    });
  }

  void Barrier(const CallOptions& options) override {
    // NCCL has no barrier: an allreduce of one int on the device.
    const CallDesc call =
        Begin(OpKind::kBarrier, DataType::kInt32, ReduceOp::kSum, 0, 0);
    Run(call, options, [&](ncclComm_t comm) {
      if (barrier_word_ == nullptr) {
        RINGLET_CUDA_CHECK(cudaMalloc(&barrier_word_, sizeof(int)));
      }
      RINGLET_NCCL_CHECK(ncclAllReduce(barrier_word_, barrier_word_, 1,
                                       ncclInt32, ncclSum, comm, stream_));
    });
  }

  bool OrdersOnDevice() const override { return true; }

  std::unique_ptr<Work> AllReduceAsync(const void* send, void* recv,
                                       size_t count, DataType type, ReduceOp op,
                                       const gpu::Event* after,
                                       const CallOptions& options) override;

  void Abort(const std::string& reason) override {
    std::lock_guard<std::mutex> lock(comm_mu_);
    if (comm_ == nullptr) return;  // Aborted before: the first reason stays.
    abort_reason_ = "rank " + std::to_string(rank_) + " aborted: " + reason;
    aborted_.store(true);
    gpu::DeviceGuard guard(device_);
    ncclCommAbort(comm_);  // Frees it; NCCL's kernels on the stream stop.
    comm_ = nullptr;
  }

  CommStats stats() const override { return stats_; }

 private:
  friend class NcclWork;

  CallDesc Begin(OpKind kind, DataType type, ReduceOp op, int root,
                 size_t count) {
    CallDesc call;
    call.seq = next_seq_++;
    call.kind = kind;
    call.type = type;
    call.op = op;
    call.root = root;
    call.count = count;
    ThrowIfAborted();
    return call;
  }

  void ThrowIfAborted() {
    if (aborted_.load()) {
      throw CollectiveError("communicator was aborted: " + AbortReason());
    }
  }

  std::string AbortReason() {
    std::lock_guard<std::mutex> lock(comm_mu_);
    return abort_reason_;
  }

  [[noreturn]] void Fail(const CallDesc& call, const std::string& problem) {
    const std::string message =
        "rank " + std::to_string(rank_) + " " + Describe(call) + ": " + problem;
    Abort(message);
    throw CollectiveError(message);
  }

  // Enqueues `launch` on the stream and waits for it until the deadline.
  template <typename LaunchFn>
  void Run(const CallDesc& call, const CallOptions& options, LaunchFn launch) {
    Launch(call, launch);
    Await(call, options);
  }

  // Enqueues launch(comm) on the stream, under the lock Abort takes; a
  // failure fails the group.
  template <typename LaunchFn>
  void Launch(const CallDesc& call, LaunchFn launch) {
    gpu::DeviceGuard guard(device_);
    try {
      std::unique_lock<std::mutex> lock(comm_mu_);
      if (comm_ == nullptr) {
        lock.unlock();
        ThrowIfAborted();
      }
      launch(comm_);
    } catch (const CollectiveError& e) {
      Fail(call, e.what());
    } catch (const gpu::CudaError& e) {
      Fail(call, e.what());
    }
    ++stats_.messages_sent;
  }

  // Waits for everything on the stream until the deadline, watching for
  // NCCL's asynchronous errors; `call` names the wait in errors.
  void Await(const CallDesc& call, const CallOptions& options) {
    Await(call, options, [this] { return cudaStreamQuery(stream_); });
  }

  // Waits until `query` (cudaStreamQuery or cudaEventQuery) says done.
  template <typename QueryFn>
  void Await(const CallDesc& call, const CallOptions& options, QueryFn query) {
    gpu::DeviceGuard guard(device_);
    const auto timeout =
        options.timeout.count() > 0 ? options.timeout : options_.timeout;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      const cudaError_t status = query();
      // An abort from another thread ends the call (its kernels stop): an
      // error, whatever the stream says.
      if (aborted_.load()) Fail(call, AbortReason());
      if (status == cudaSuccess) return;
      if (status != cudaErrorNotReady) {
        Fail(call, std::string("CUDA: ") + cudaGetErrorString(status));
      }
      ncclResult_t async_error = ncclSuccess;
      {
        std::lock_guard<std::mutex> lock(comm_mu_);
        if (comm_ != nullptr) ncclCommGetAsyncError(comm_, &async_error);
      }
      if (async_error != ncclSuccess) {
        Fail(call, std::string("NCCL: ") + ncclGetErrorString(async_error));
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        Fail(call, "timed out after " + std::to_string(timeout.count()) +
                       " ms waiting for NCCL (a peer rank has not made the "
                       "same call)");
      }
      std::this_thread::yield();
    }
  }

  const int rank_, size_;
  const int device_;  // The GPU this rank runs on, in this process.
  // Guards comm_ (null once aborted) and abort_reason_.
  std::mutex comm_mu_;
  ncclComm_t comm_;
  const CommOptions options_;
  cudaStream_t stream_ = nullptr;
  int* barrier_word_ = nullptr;
  uint64_t next_seq_ = 0;
  std::atomic<bool> aborted_{false};
  std::string abort_reason_;
  CommStats stats_;
};

// An allreduce queued on a rank's stream: done when the event recorded
// after it has passed. Waits as a blocking call does (the deadline, NCCL's
// asynchronous errors, an abort from another thread).
class NcclWork : public Work {
 public:
  NcclWork(NcclCommunicator& comm, const CallDesc& call, CallOptions options)
      : comm_(comm),
        call_(call),
        options_(std::move(options)),
        done_(comm.device_) {}

  gpu::Event& done_event() { return done_; }

  void Wait() override {
    if (finished_) {
      if (error_) std::rethrow_exception(error_);
      return;
    }
    try {
      comm_.Await(call_, options_,
                  [this] { return cudaEventQuery(done_.get()); });
    } catch (const CollectiveError&) {
      error_ = std::current_exception();
    }
    finished_ = true;
    if (error_) std::rethrow_exception(error_);
  }

  bool Done() override {
    if (finished_) return true;
    if (comm_.aborted_.load()) return true;
    return done_.Done();
  }

  std::exception_ptr error() override {
    if (finished_) return error_;
    if (comm_.aborted_.load()) {
      return std::make_exception_ptr(
          CollectiveError("rank " + std::to_string(comm_.rank_) + " " +
                          Describe(call_) + ": " + comm_.AbortReason()));
    }
    return nullptr;
  }

  const gpu::Event* event() const override { return &done_; }

 private:
  NcclCommunicator& comm_;
  const CallDesc call_;
  const CallOptions options_;
  gpu::Event done_;
  bool finished_ = false;
  std::exception_ptr error_;
};

std::unique_ptr<Work> NcclCommunicator::AllReduceAsync(
    const void* send, void* recv, size_t count, DataType type, ReduceOp op,
    const gpu::Event* after, const CallOptions& options) {
  const CallDesc call = Begin(OpKind::kAllReduce, type, op, 0, count);
  auto work = std::make_unique<NcclWork>(*this, call, options);
  Launch(call, [&](ncclComm_t comm) {
    if (after != nullptr) gpu::StreamWaitsFor(stream_, *after);
    RINGLET_NCCL_CHECK(ncclAllReduce(send, recv, count, ToNccl(type),
                                     ToNccl(op), comm, stream_));
    work->done_event().Record(stream_);
  });
  stats_.bytes_sent += 2 * (size_ - 1) * count * SizeOf(type) / size_;
  return work;
}

std::vector<std::unique_ptr<Communicator>> CreateGroup(
    const std::vector<int>& gpus, const CommOptions& options) {
  std::string reason;
  CheckGpusExist("nccl", gpus, gpu::CountCudaDevices(&reason), reason);
  const int size = static_cast<int>(gpus.size());
  std::vector<ncclComm_t> comms(size);
  RINGLET_NCCL_CHECK(ncclCommInitAll(comms.data(), size, gpus.data()));
  std::vector<std::unique_ptr<Communicator>> out;
  try {
    for (int i = 0; i < size; ++i) {
      out.push_back(std::make_unique<NcclCommunicator>(i, size, gpus[i],
                                                       comms[i], options));
    }
  } catch (const gpu::CudaError& e) {
    throw CollectiveError("the nccl backend could not start on " +
                          GpuListName(gpus) + ": " + e.what());
  }
  return out;
}

std::vector<std::unique_ptr<Communicator>> CreateRanks(
    const NcclProcessLayout& layout, const NcclIdBroadcast& broadcast_id,
    const CommOptions& options) {
  std::string reason;
  const int devices = gpu::CountCudaDevices(&reason);
  if (devices == 0) {
    throw CollectiveError("the nccl backend needs GPUs; " + reason +
                          ". Use --backend=ring on CPU devices.");
  }
  const int local_ranks = static_cast<int>(layout.gpus.size());
  for (int gpu : layout.gpus) {
    if (gpu < 0 || gpu >= devices) {
      throw CollectiveError(
          "the nccl backend needs " + GpuListName(layout.gpus) +
          " in this process, this host has " + std::to_string(devices) +
          " GPU(s); start fewer processes per host");
    }
  }
  // Rank 0 makes the id; every process receives it before joining.
  ncclUniqueId id;
  if (layout.first_rank == 0) RINGLET_NCCL_CHECK(ncclGetUniqueId(&id));
  broadcast_id(&id, sizeof(id));
  std::vector<ncclComm_t> comms(local_ranks);
  // Several ranks of one process join inside one group call.
  RINGLET_NCCL_CHECK(ncclGroupStart());
  for (int i = 0; i < local_ranks; ++i) {
    gpu::DeviceGuard guard(layout.gpus[i]);
    RINGLET_NCCL_CHECK(
        ncclCommInitRank(&comms[i], layout.size, id, layout.first_rank + i));
  }
  RINGLET_NCCL_CHECK(ncclGroupEnd());
  std::vector<std::unique_ptr<Communicator>> out;
  for (int i = 0; i < local_ranks; ++i) {
    out.push_back(std::make_unique<NcclCommunicator>(
        layout.first_rank + i, layout.size, layout.gpus[i], comms[i], options));
  }
  return out;
}

const NcclLibrary kNccl{&CreateGroup, &CreateRanks};
[[maybe_unused]] const bool kRegistered = (RegisterNcclLibrary(&kNccl), true);

}  // namespace
}  // namespace ringlet::collectives
