#include "collectives/transport/host/cross_process_transport.h"

#include <string>

#include "collectives/transport/host/host_kernels.h"

namespace ringlet::collectives::host {

void CrossProcessTransport::Send(int peer, const Envelope& envelope,
                                 const void* src, size_t bytes) {
  if (IsLocal(peer)) {
    HostTransport::Send(peer, envelope, src, bytes);
    return;
  }
  SendRemote(peer, envelope, src, bytes);
  CountSent(bytes);
}

void CrossProcessTransport::RecvHeader(int peer, const Envelope& expected,
                                       size_t bytes) {
  Envelope got;
  uint64_t got_bytes = 0;
  ReadHeader(peer, &got, &got_bytes);
  if (got.call != expected.call) {
    Fail("rank " + std::to_string(peer) + " " + Describe(got.call) +
         " does not match rank " + std::to_string(rank()) + " " +
         Describe(expected.call));
  }
  if (got.step != expected.step || got.segment != expected.segment ||
      got_bytes != bytes) {
    Fail("rank " + std::to_string(rank()) + " " + Describe(call()) +
         ": internal error: message from rank " + std::to_string(peer) +
         " is step " + std::to_string(got.step) + " segment " +
         std::to_string(got.segment) + " of " + std::to_string(got_bytes) +
         " bytes, expected step " + std::to_string(expected.step) +
         " segment " + std::to_string(expected.segment) + " of " +
         std::to_string(bytes));
  }
}

void CrossProcessTransport::RecvReduce(int peer, const Envelope& expected,
                                       void* dst, const void* local,
                                       size_t count, DataType type, ReduceOp op,
                                       bool finish) {
  if (IsLocal(peer)) {
    HostTransport::RecvReduce(peer, expected, dst, local, count, type, op,
                              finish);
    return;
  }
  const size_t bytes = count * SizeOf(type);
  RecvHeader(peer, expected, bytes);
  if (staging_.size() < bytes) staging_.resize(bytes);
  ReadPayload(peer, staging_.data(), bytes);
  CombineInto(dst, local, staging_.data(), count, type, op,
              finish && op == ReduceOp::kAvg ? size() : 0,
              /*streaming=*/false);
}

void CrossProcessTransport::RecvCombine(
    int peer, const Envelope& expected, size_t bytes,
    const std::function<void(const void* message)>& combine) {
  if (IsLocal(peer)) {
    HostTransport::RecvCombine(peer, expected, bytes, combine);
    return;
  }
  RecvHeader(peer, expected, bytes);
  if (staging_.size() < bytes) staging_.resize(bytes);
  ReadPayload(peer, staging_.data(), bytes);
  combine(staging_.data());
}

void CrossProcessTransport::RecvCopy(int peer, const Envelope& expected,
                                     void* dst, size_t bytes) {
  if (IsLocal(peer)) {
    HostTransport::RecvCopy(peer, expected, dst, bytes);
    return;
  }
  RecvHeader(peer, expected, bytes);
  ReadPayload(peer, dst, bytes);
}

}  // namespace ringlet::collectives::host
