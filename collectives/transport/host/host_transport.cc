#include "collectives/transport/host/host_transport.h"

#include "collectives/transport/host/host_kernels.h"

namespace ringlet::collectives::host {

HostTransport::HostTransport(std::shared_ptr<HostGroup> group, int rank)
    : LinkEndpoint(std::move(group), rank) {}

void HostTransport::BeginCall(const CallDesc& call,
                              std::chrono::milliseconds timeout) {
  LinkEndpoint::BeginCall(call, timeout);
  streaming_ = call.count * SizeOf(call.type) >= kStreamingBytes;
}

void HostTransport::Send(int peer, const Envelope& envelope, const void* src,
                         size_t bytes) {
  Post(peer, envelope, src, bytes, /*copy_inline=*/true);
}

void HostTransport::RecvReduce(int peer, const Envelope& expected, void* dst,
                               const void* local, size_t count, DataType type,
                               ReduceOp op, bool finish) {
  const Message& message = Await(peer, expected, count * SizeOf(type));
  CombineInto(dst, local, message.data, count, type, op,
              finish && op == ReduceOp::kAvg ? size() : 0, streaming_);
  Release(peer);
}

void HostTransport::RecvCombine(
    int peer, const Envelope& expected, size_t bytes,
    const std::function<void(const void* message)>& combine) {
  const Message& message = Await(peer, expected, bytes);
  try {
    combine(message.data);
  } catch (...) {
    Release(peer);
    throw;
  }
  Release(peer);
}

void HostTransport::RecvCopy(int peer, const Envelope& expected, void* dst,
                             size_t bytes) {
  const Message& message = Await(peer, expected, bytes);
  CopyInto(dst, message.data, bytes, streaming_);
  Release(peer);
}

void HostTransport::CopyLocal(void* dst, const void* src, size_t bytes) {
  if (dst != src) CopyInto(dst, src, bytes, streaming_);
}

void* HostTransport::Scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    scratch_.reset(new char[bytes]);
    scratch_bytes_ = bytes;
  }
  return scratch_.get();
}

}  // namespace ringlet::collectives::host
