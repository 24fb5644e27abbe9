#include <string>

#include "collectives/transport/cuda/cuda_kernels.h"
#include "collectives/transport/cuda/cuda_transport.h"

namespace ringlet::collectives::cuda {

CudaRanks::CudaRanks(const std::vector<int>& devices) {
  ranks_.resize(devices.size());
  for (size_t r = 0; r < devices.size(); ++r) {
    Rank& rank = ranks_[r];
    rank.device = devices[r];
    streams_.push_back(std::make_unique<gpu::Stream>(rank.device));
    rank.stream = streams_.back()->get();
    events_.push_back(std::make_unique<gpu::Event>(rank.device));
    rank.ready = events_.back()->get();
    events_.push_back(std::make_unique<gpu::Event>(rank.device));
    rank.consumed = events_.back()->get();
  }
}

CudaRanks::~CudaRanks() = default;

CudaTransport::CudaTransport(std::shared_ptr<host::HostGroup> group,
                             std::shared_ptr<CudaRanks> ranks, int rank)
    : LinkEndpoint(std::move(group), rank),
      ranks_(std::move(ranks)),
      sent_to_(size(), 0) {}

CudaTransport::~CudaTransport() {
  cudaSetDevice(me().device);
  cudaStreamSynchronize(me().stream);
  if (staging_ != nullptr) cudaFree(staging_);
  if (scratch_ != nullptr) cudaFree(scratch_);
}

void CudaTransport::Check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    Fail("rank " + std::to_string(rank()) + " " + Describe(call()) + ": " +
         what + ": " + cudaGetErrorName(status) + ": " +
         cudaGetErrorString(status));
  }
}

void CudaTransport::BeginCall(const CallDesc& call,
                              std::chrono::milliseconds timeout) {
  LinkEndpoint::BeginCall(call, timeout);
  Check(cudaSetDevice(me().device), "cudaSetDevice");
}

void* CudaTransport::Grow(void** buffer, size_t* capacity, size_t bytes) {
  if (bytes > *capacity) {
    // Work in flight may still use the old buffer.
    Check(cudaStreamSynchronize(me().stream), "cudaStreamSynchronize");
    if (*buffer != nullptr) Check(cudaFree(*buffer), "cudaFree");
    *buffer = nullptr;
    Check(cudaMalloc(buffer, bytes), "cudaMalloc");
    *capacity = bytes;
  }
  return *buffer;
}

void CudaTransport::Send(int peer, const Envelope& envelope, const void* src,
                         size_t bytes) {
  // Everything this rank enqueued so far (including what produced src)
  // happens before the peer's copy, which waits for this event.
  Check(cudaEventRecord(me().ready, me().stream), "cudaEventRecord");
  Post(peer, envelope, src, bytes, /*copy_inline=*/false);
  sent_to_[peer] = 1;
}

void CudaTransport::RecvReduce(int peer, const Envelope& expected, void* dst,
                               const void* local, size_t count, DataType type,
                               ReduceOp op, bool finish) {
  const size_t bytes = count * SizeOf(type);
  const host::Message& message = Await(peer, expected, bytes);
  const CudaRanks::Rank& from = (*ranks_)[peer];
  void* staging = Grow(&staging_, &staging_bytes_, bytes);
  Check(cudaStreamWaitEvent(me().stream, from.ready, 0), "cudaStreamWaitEvent");
  Check(cudaMemcpyPeerAsync(staging, me().device, message.data, from.device,
                            bytes, me().stream),
        "cudaMemcpyPeerAsync");
  Check(cudaEventRecord(me().consumed, me().stream), "cudaEventRecord");
  Release(peer);
  Check(
      combine_forward(dst, local, staging, count, type, op,
                      finish && op == ReduceOp::kAvg ? size() : 0, me().stream),
      "combine_forward_kernel");
}

void CudaTransport::RecvCombine(
    int /*peer*/, const Envelope& /*expected*/, size_t /*bytes*/,
    const std::function<void(const void* message)>& /*combine*/) {
  Fail("rank " + std::to_string(rank()) + " " + Describe(call()) +
       ": the CUDA transport's messages are in GPU memory, which host code "
       "cannot combine");
}

void CudaTransport::RecvCopy(int peer, const Envelope& expected, void* dst,
                             size_t bytes) {
  const host::Message& message = Await(peer, expected, bytes);
  const CudaRanks::Rank& from = (*ranks_)[peer];
  if (bytes > 0) {
    Check(cudaStreamWaitEvent(me().stream, from.ready, 0),
          "cudaStreamWaitEvent");
    Check(cudaMemcpyPeerAsync(dst, me().device, message.data, from.device,
                              bytes, me().stream),
          "cudaMemcpyPeerAsync");
    Check(cudaEventRecord(me().consumed, me().stream), "cudaEventRecord");
  }
  Release(peer);
}

void CudaTransport::CopyLocal(void* dst, const void* src, size_t bytes) {
  if (dst == src || bytes == 0) return;
  Check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, me().stream),
        "cudaMemcpyAsync");
}

void* CudaTransport::Scratch(size_t bytes) {
  return Grow(&scratch_, &scratch_bytes_, bytes);
}

void CudaTransport::WaitSends() {
  // Host side: every peer has enqueued its reads of our memory...
  LinkEndpoint::WaitSends();
  // ...device side: and our stream waits until those reads are done.
  for (int peer = 0; peer < size(); ++peer) {
    if (!sent_to_[peer]) continue;
    Check(cudaStreamWaitEvent(me().stream, (*ranks_)[peer].consumed, 0),
          "cudaStreamWaitEvent");
    sent_to_[peer] = 0;
  }
  // The Communicator contract: buffers are final when the call returns.
  Check(cudaStreamSynchronize(me().stream), "cudaStreamSynchronize");
}

void CudaTransport::LeaveFailedCall() {
  // No peer's host thread reads our messages any more...
  LinkEndpoint::LeaveFailedCall();
  // ...and the device copies they queued from our memory have run (each
  // peer records its `consumed` event after its copies, before it
  // releases the message). Errors are ignored: the call is failing.
  for (int peer = 0; peer < size(); ++peer) {
    if (!sent_to_[peer]) continue;
    cudaEventSynchronize((*ranks_)[peer].consumed);
    sent_to_[peer] = 0;
  }
  cudaStreamSynchronize(me().stream);
  cudaGetLastError();
}

}  // namespace ringlet::collectives::cuda
