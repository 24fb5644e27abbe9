#include "collectives/backends/host_staged.h"

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

#include "collectives/api/collective_error.h"
#include "collectives/api/types.h"
#include "gpu/registration.h"

namespace ringlet::collectives {
namespace {

gpu::Registration<CudaStagingFactory> registered_staging;

class HostStagedCommunicator : public Communicator {
 public:
  HostStagedCommunicator(std::unique_ptr<Communicator> host,
                         StagingCopies copies)
      : host_(std::move(host)), copies_(std::move(copies)) {}

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string backend() const override { return host_->backend(); }

  void AllReduce(const void* send, void* recv, size_t count, DataType type,
                 ReduceOp op, const CallOptions& options) override {
    const size_t bytes = count * SizeOf(type);
    char* buffer = Staging(bytes);
    ToHost(buffer, send, bytes, "allreduce");
    host_->AllReduce(buffer, buffer, count, type, op, options);
    ToDevice(recv, buffer, bytes, "allreduce");
  }

  void Broadcast(const void* send, void* recv, size_t count, DataType type,
                 int root, const CallOptions& options) override {
    const size_t bytes = count * SizeOf(type);
    char* buffer = Staging(bytes);
    if (rank() == root) ToHost(buffer, send, bytes, "broadcast");
    host_->Broadcast(buffer, buffer, count, type, root, options);
    ToDevice(recv, buffer, bytes, "broadcast");
  }

  void ReduceScatter(const void* send, void* recv, size_t recv_count,
                     DataType type, ReduceOp op,
                     const CallOptions& options) override {
    const size_t block = recv_count * SizeOf(type);
    const size_t whole = block * static_cast<size_t>(size());
    char* buffer = Staging(whole + block);  // The input, then the result.
    ToHost(buffer, send, whole, "reduce-scatter");
    host_->ReduceScatter(buffer, buffer + whole, recv_count, type, op, options);
    ToDevice(recv, buffer + whole, block, "reduce-scatter");
  }

  void AllGather(const void* send, void* recv, size_t send_count, DataType type,
                 const CallOptions& options) override {
    const size_t block = send_count * SizeOf(type);
    const size_t whole = block * static_cast<size_t>(size());
    char* buffer = Staging(block + whole);  // This rank's block, the result.
    ToHost(buffer, send, block, "allgather");
    host_->AllGather(buffer, buffer + block, send_count, type, options);
    ToDevice(recv, buffer + block, whole, "allgather");
  }

  void Barrier(const CallOptions& options) override { host_->Barrier(options); }
  void Abort(const std::string& reason) override { host_->Abort(reason); }
  CommStats stats() const override { return host_->stats(); }

 private:
  // At least `bytes` of host staging memory, grown by doubling and kept.
  char* Staging(size_t bytes) {
    if (bytes > staging_bytes_) {
      Guard("allocating host memory for", "a collective", [&] {
        staging_ = copies_.allocate_host(std::max(bytes, 2 * staging_bytes_));
      });
      staging_bytes_ = std::max(bytes, 2 * staging_bytes_);
    }
    return static_cast<char*>(staging_.get());
  }
  void ToHost(void* host, const void* device, size_t bytes, const char* op) {
    Guard("copying from the device for", op,
          [&] { copies_.to_host(host, device, bytes); });
  }
  void ToDevice(void* device, const void* host, size_t bytes, const char* op) {
    Guard("copying to the device after", op,
          [&] { copies_.to_device(device, host, bytes); });
  }
  // A failed copy fails the group, so no peer waits for this rank until
  // its timeout; the caller gets a CollectiveError naming rank and op.
  template <typename Fn>
  void Guard(const char* doing, const char* op, const Fn& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      const std::string reason = "rank " + std::to_string(rank()) + ": " +
                                 doing + " " + op + " failed: " + e.what();
      host_->Abort(reason);
      throw CollectiveError(reason);
    }
  }

  std::unique_ptr<Communicator> host_;
  StagingCopies copies_;
  std::shared_ptr<void> staging_;
  size_t staging_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> StageThroughHost(
    std::unique_ptr<Communicator> host, StagingCopies copies) {
  return std::make_unique<HostStagedCommunicator>(std::move(host),
                                                  std::move(copies));
}

void RegisterCudaStagingFactory(CudaStagingFactory factory) {
  registered_staging.Set(factory);
}

StagingCopies CudaStaging(int gpu) {
  const CudaStagingFactory factory = registered_staging.Get();
  if (factory == nullptr) {
    throw CollectiveError(
        "cuda:" + std::to_string(gpu) +
        " cannot take part in a collective: this build has no CUDA (no CUDA "
        "toolkit was found, or --config=cpu_only); use CPU devices, or "
        "rebuild where CUDA is installed");
  }
  return factory(gpu);
}

}  // namespace ringlet::collectives
