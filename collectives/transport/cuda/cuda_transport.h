// The transport between GPUs of one process: each rank is a GPU with its
// own stream. Messages travel through the same in-process mailboxes as the
// host transport (by device address); the payload moves with
// cudaMemcpyPeerAsync on the receiver's stream, and a kernel combines it.
// Streams are ordered with events, not host waits: the receiver's stream
// waits for the sender's "ready" event before copying, and the sender's
// stream waits for the receiver's "consumed" event before it may reuse the
// memory. Each call ends with one host wait on the rank's stream.
//
// Several ranks may share one GPU: each has its own stream, events and
// buffers, and a "peer" copy between them is a copy within the GPU.
#ifndef RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_TRANSPORT_H_
#define RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_TRANSPORT_H_

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "collectives/transport/host/link_endpoint.h"
#include "gpu/stream.h"

namespace ringlet::collectives::cuda {

// The CUDA objects of every rank, shared so peers can wait on each other's
// events. Owns them; destroyed with the last transport of the group.
class CudaRanks {
 public:
  // Rank i uses device devices[i]. Throws gpu::CudaError on CUDA errors.
  explicit CudaRanks(const std::vector<int>& devices);
  ~CudaRanks();
  CudaRanks(const CudaRanks&) = delete;
  CudaRanks& operator=(const CudaRanks&) = delete;

  struct Rank {
    int device = 0;
    cudaStream_t stream = nullptr;
    cudaEvent_t ready = nullptr;     // Recorded after data it sends is made.
    cudaEvent_t consumed = nullptr;  // Recorded after it read a peer's data.
  };
  const Rank& operator[](int rank) const { return ranks_[rank]; }

 private:
  std::vector<Rank> ranks_;
  // The owners of the handles in ranks_.
  std::vector<std::unique_ptr<gpu::Stream>> streams_;
  std::vector<std::unique_ptr<gpu::Event>> events_;
};

class CudaTransport : public host::LinkEndpoint {
 public:
  CudaTransport(std::shared_ptr<host::HostGroup> group,
                std::shared_ptr<CudaRanks> ranks, int rank);
  ~CudaTransport() override;

  void BeginCall(const CallDesc& call,
                 std::chrono::milliseconds timeout) override;
  void Send(int peer, const Envelope& envelope, const void* src,
            size_t bytes) override;
  void RecvReduce(int peer, const Envelope& expected, void* dst,
                  const void* local, size_t count, DataType type, ReduceOp op,
                  bool finish) override;
  // Payloads live in GPU memory: refused (reads_on_host() is false).
  void RecvCombine(
      int peer, const Envelope& expected, size_t bytes,
      const std::function<void(const void* message)>& combine) override;
  bool reads_on_host() const override { return false; }
  void RecvCopy(int peer, const Envelope& expected, void* dst,
                size_t bytes) override;
  void CopyLocal(void* dst, const void* src, size_t bytes) override;
  void* Scratch(size_t bytes) override;
  void WaitSends() override;
  void LeaveFailedCall() override;

 private:
  // Throws (aborting the group) when `status` is an error.
  void Check(cudaError_t status, const char* what);
  // Device memory of at least `bytes`, grown (after a stream sync) as needed.
  void* Grow(void** buffer, size_t* capacity, size_t bytes);
  const CudaRanks::Rank& me() const { return (*ranks_)[rank()]; }

  std::shared_ptr<CudaRanks> ranks_;
  std::vector<char> sent_to_;
  void* staging_ = nullptr;  // Where a peer's segment lands before combining.
  size_t staging_bytes_ = 0;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
};

}  // namespace ringlet::collectives::cuda

#endif  // RINGLET_COLLECTIVES_TRANSPORT_CUDA_CUDA_TRANSPORT_H_
