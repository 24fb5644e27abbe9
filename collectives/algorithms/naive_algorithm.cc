#include "collectives/algorithms/naive_algorithm.h"

#include "collectives/algorithms/segments.h"

namespace ringlet::collectives {

namespace {

// Every rank checks in with rank 0 (step first_step), which answers all
// (first_step + 1) once everyone has: no rank returns before all got here.
void StarAgree(Transport& t, const CallDesc& call, uint32_t first_step) {
  if (t.rank() == 0) {
    for (int peer = 1; peer < t.size(); ++peer) {
      t.RecvCopy(peer, Envelope{call, first_step, 0}, nullptr, 0);
    }
    for (int peer = 1; peer < t.size(); ++peer) {
      t.Send(peer, Envelope{call, first_step + 1, 0}, nullptr, 0);
    }
  } else {
    t.Send(0, Envelope{call, first_step, 0}, nullptr, 0);
    t.RecvCopy(0, Envelope{call, first_step + 1, 0}, nullptr, 0);
  }
}

}  // namespace

size_t NaiveAlgorithm::Segments(const Transport& t, size_t bytes) const {
  return SegmentCount(bytes, segment_bytes_, t.max_messages_per_link());
}

void NaiveAlgorithm::ReduceToRoot(Transport& t, const CallDesc& call,
                                  size_t count, const void* send,
                                  void* dst) const {
  const size_t esize = SizeOf(call.type);
  const size_t segments = Segments(t, count * esize);
  const auto at = [&](const void* base, const Range& g) {
    return static_cast<const char*>(base) + g.offset * esize;
  };
  const auto at_mut = [&](void* base, const Range& g) {
    return static_cast<char*>(base) + g.offset * esize;
  };
  if (t.rank() != 0) {
    for (size_t k = 0; k < segments; ++k) {
      const Range g = EvenPart(count, segments, k);
      t.Send(0, Envelope{call, 0, static_cast<uint32_t>(k)}, at(send, g),
             g.count * esize);
    }
    return;
  }
  // Rank 0 adds the other ranks' buffers to its own, in rank order.
  const int n = t.size();
  for (int peer = 1; peer < n; ++peer) {
    const void* local = peer == 1 ? send : dst;
    for (size_t k = 0; k < segments; ++k) {
      const Range g = EvenPart(count, segments, k);
      t.RecvReduce(peer, Envelope{call, 0, static_cast<uint32_t>(k)},
                   at_mut(dst, g), at(local, g), g.count, call.type, call.op,
                   /*finish=*/peer == n - 1);
    }
  }
}

void NaiveAlgorithm::BroadcastFromRoot(Transport& t, const CallDesc& call,
                                       size_t count, int root, const void* src,
                                       void* dst, uint32_t step) const {
  const size_t esize = SizeOf(call.type);
  const size_t bytes = count * esize;
  const size_t segments = Segments(t, bytes);
  for (size_t k = 0; k < segments; ++k) {
    const Range g = EvenPart(count, segments, k);
    const Envelope env{call, step, static_cast<uint32_t>(k)};
    if (t.rank() == root) {
      for (int peer = 0; peer < t.size(); ++peer) {
        if (peer == root) continue;
        t.Send(peer, env, static_cast<const char*>(src) + g.offset * esize,
               g.count * esize);
      }
    } else {
      t.RecvCopy(root, env, static_cast<char*>(dst) + g.offset * esize,
                 g.count * esize);
    }
  }
}

void NaiveAlgorithm::AllReduce(Transport& t, const CallDesc& call,
                               const void* send, void* recv) const {
  ReduceToRoot(t, call, call.count, send, recv);
  // Rank 0 must not hand out recv before the others have read their sends.
  BroadcastFromRoot(t, call, call.count, 0, recv, recv, 1);
  t.WaitSends();
}

void NaiveAlgorithm::Broadcast(Transport& t, const CallDesc& call,
                               const void* send, void* recv) const {
  // Every rank first checks in with rank 0, as in every naive collective,
  // so rank 0 compares every rank's call with its own: ranks that disagree
  // on the call or the root are caught at once, not by the timeout.
  const Envelope hello{call, 0, 0};
  if (t.rank() == 0) {
    for (int peer = 1; peer < t.size(); ++peer) {
      t.RecvCopy(peer, hello, nullptr, 0);
    }
  } else {
    t.Send(0, hello, nullptr, 0);
  }
  if (t.rank() == call.root) {
    t.CopyLocal(recv, send, call.count * SizeOf(call.type));
  }
  BroadcastFromRoot(t, call, call.count, call.root, recv, recv, 1);
  // Data flows one way, so a rank could finish before another finds a
  // mismatch; checking in with rank 0 again at the end fails them all.
  StarAgree(t, call, 2);
  t.WaitSends();
}

void NaiveAlgorithm::ReduceScatter(Transport& t, const CallDesc& call,
                                   const void* send, void* recv) const {
  const int n = t.size();
  const size_t esize = SizeOf(call.type);
  const size_t block = call.count * esize;
  void* sum = t.rank() == 0 ? t.Scratch(block * n) : nullptr;
  ReduceToRoot(t, call, call.count * n, send, sum);
  if (t.rank() == 0) {
    t.CopyLocal(recv, sum, block);
    for (int peer = 1; peer < n; ++peer) {
      t.Send(peer, Envelope{call, 1, 0}, static_cast<char*>(sum) + peer * block,
             block);
    }
  } else {
    t.RecvCopy(0, Envelope{call, 1, 0}, recv, block);
  }
  t.WaitSends();
}

void NaiveAlgorithm::AllGather(Transport& t, const CallDesc& call,
                               const void* send, void* recv) const {
  const int n = t.size();
  const size_t block = call.count * SizeOf(call.type);
  if (t.rank() == 0) {
    t.CopyLocal(recv, send, block);
    for (int peer = 1; peer < n; ++peer) {
      t.RecvCopy(peer, Envelope{call, 0, 0},
                 static_cast<char*>(recv) + peer * block, block);
    }
  } else {
    t.Send(0, Envelope{call, 0, 0}, send, block);
  }
  BroadcastFromRoot(t, call, call.count * n, 0, recv, recv, 1);
  t.WaitSends();
}

void NaiveAlgorithm::Barrier(Transport& t, const CallDesc& call) const {
  StarAgree(t, call, 0);
  t.WaitSends();
}

}  // namespace ringlet::collectives
