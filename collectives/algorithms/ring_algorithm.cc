#include "collectives/algorithms/ring_algorithm.h"

#include <algorithm>

#include "collectives/algorithms/segments.h"

namespace ringlet::collectives {
namespace {

// The geometry of one ring call: neighbours, chunks and segments.
class Ring {
 public:
  // `chunk_count` elements per chunk (or the whole count cut in `size`
  // chunks when `equal_chunks` is false); `sends_per_segment` is how many
  // messages one segment index puts on a link over the whole call. Chunks
  // and segments start at multiples of `grain` elements (with 1, as even
  // as the count allows).
  Ring(const Transport& t, const CallDesc& call, size_t total_count,
       bool equal_chunks, size_t segment_bytes, size_t sends_per_segment,
       size_t grain = 1)
      : n_(t.size()),
        r_(t.rank()),
        call_(call),
        esize_(SizeOf(call.type)),
        total_(total_count),
        grain_(grain),
        units_((total_count + grain - 1) / grain) {
    const size_t largest = equal_chunks ? units_ / n_ : (units_ + n_ - 1) / n_;
    segments_ = SegmentCount(largest * grain_ * esize_, segment_bytes,
                             t.max_messages_per_link() / sends_per_segment);
  }

  int next() const { return (r_ + 1) % n_; }
  int prev() const { return (r_ + n_ - 1) % n_; }
  // Chunk index of r + delta, wrapped into [0, n).
  int chunk(int delta) const { return ((r_ + delta) % n_ + n_) % n_; }
  size_t segments() const { return segments_; }

  // Element range of segment k of chunk c.
  Range Segment(int c, size_t k) const {
    const Range ch = EvenPart(units_, n_, c);
    const Range s = EvenPart(ch.count, segments_, k);
    const size_t begin = std::min(total_, (ch.offset + s.offset) * grain_);
    const size_t end =
        std::min(total_, (ch.offset + s.offset + s.count) * grain_);
    return {begin, end - begin};
  }
  size_t Bytes(const Range& g) const { return g.count * esize_; }
  const char* At(const void* base, const Range& g) const {
    return static_cast<const char*>(base) + g.offset * esize_;
  }
  char* At(void* base, const Range& g) const {
    return static_cast<char*>(base) + g.offset * esize_;
  }
  Envelope Env(uint32_t step, size_t k) const {
    return Envelope{call_, step, static_cast<uint32_t>(k)};
  }

 private:
  const int n_, r_;
  const CallDesc& call_;
  const size_t esize_, total_, grain_, units_;
  size_t segments_ = 1;
};

// Reduce-scatter over the ring. Chunk `first` (as an offset from r) is the
// one this rank sends first, from `send`; step s combines chunk first-s-1.
// Partial sums go to `partial` (indexed like send), the finished chunk
// (first - n + 1 + ... = first+1 after n-1 steps) to `finished` when it is
// not null, else to `partial`. After the last step the finished chunk is
// sent on as all-gather step n-1 when `continue_to_allgather`.
void ReduceScatterSteps(Transport& t, const Ring& ring, const CallDesc& call,
                        int first, const void* send, void* partial,
                        void* finished, bool continue_to_allgather) {
  const int n = t.size();
  for (size_t k = 0; k < ring.segments(); ++k) {
    const Range g = ring.Segment(ring.chunk(first), k);
    t.Send(ring.next(), ring.Env(0, k), ring.At(send, g), ring.Bytes(g));
  }
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const int c = ring.chunk(first - s - 1);
    for (size_t k = 0; k < ring.segments(); ++k) {
      const Range g = ring.Segment(c, k);
      // The finished chunk of a reduce-scatter lands in recv, which holds
      // only that chunk: offset 0 there.
      char* dst =
          last && finished != nullptr
              ? static_cast<char*>(finished) +
                    (g.offset - ring.Segment(c, 0).offset) * SizeOf(call.type)
              : ring.At(partial, g);
      t.RecvReduce(ring.prev(), ring.Env(s, k), dst, ring.At(send, g), g.count,
                   call.type, call.op, last);
      // What was just combined is the next step's message: the next partial
      // sum, or after the last step the finished chunk (all-gather's first).
      if (!last || continue_to_allgather) {
        t.Send(ring.next(), ring.Env(s + 1, k), dst, ring.Bytes(g));
      }
    }
  }
}

// An allreduce's all-gather: step n-1+j receives chunk r-j into recv,
// finished by its owner r-j-1, and passes it on unless the next rank is
// that owner.
void AllGatherSteps(Transport& t, const Ring& ring, void* recv) {
  const int n = t.size();
  for (int j = 0; j < n - 1; ++j) {
    const int c = ring.chunk(-j);
    for (size_t k = 0; k < ring.segments(); ++k) {
      const Range g = ring.Segment(c, k);
      t.RecvCopy(ring.prev(), ring.Env(n - 1 + j, k), ring.At(recv, g),
                 ring.Bytes(g));
      if (j < n - 2) {
        t.Send(ring.next(), ring.Env(n + j, k), ring.At(recv, g),
               ring.Bytes(g));
      }
    }
  }
}

// n-1 rounds of empty messages around the ring, from step `first_step` on:
// after round s a rank has heard, through its neighbour, from the s+1 ranks
// before it, so no rank returns before every rank got this far.
void RingAgree(Transport& t, const CallDesc& call, uint32_t first_step) {
  const int n = t.size();
  const int next = (t.rank() + 1) % n;
  const int prev = (t.rank() + n - 1) % n;
  for (int s = 0; s < n - 1; ++s) {
    const Envelope env{call, first_step + s, 0};
    t.Send(next, env, nullptr, 0);
    t.RecvCopy(prev, env, nullptr, 0);
  }
}

}  // namespace

void RingAlgorithm::AllReduce(Transport& t, const CallDesc& call,
                              const void* send, void* recv) const {
  const int n = t.size();
  // Per segment index, a link carries 2(n-1) messages over the call.
  const Ring ring(t, call, call.count, false, segment_bytes_, 2 * (n - 1));
  ReduceScatterSteps(t, ring, call, /*first=*/0, send, recv, nullptr, true);
  AllGatherSteps(t, ring, recv);
  t.WaitSends();
}

void RingAlgorithm::AllReduceWire(Transport& t, const CallDesc& call,
                                  const WireReduction& reduction) const {
  const int n = t.size();
  const Ring ring(t, call, call.count, false, segment_bytes_, 2 * (n - 1),
                  reduction.grain());
  const size_t wire = reduction.wire_bytes();
  const void* values = reduction.values();
  void* out = reduction.out();
  // Partial sums, indexed like the buffer: a message stays readable until
  // the call's end, so no two steps share memory. Two ranks sending values
  // first make none.
  char* words = n > 2 || values == nullptr
                    ? static_cast<char*>(t.Scratch(call.count * wire))
                    : nullptr;
  const auto words_at = [&](const Range& g) {
    return words != nullptr ? words + g.offset * wire : nullptr;
  };
  // Chunk r leaves first, as values or as words.
  for (size_t k = 0; k < ring.segments(); ++k) {
    const Range g = ring.Segment(ring.chunk(0), k);
    if (values != nullptr) {
      t.Send(ring.next(), ring.Env(0, k), ring.At(values, g), ring.Bytes(g));
    } else {
      reduction.Encode(g.offset, g.count, words_at(g));
      t.Send(ring.next(), ring.Env(0, k), words_at(g), g.count * wire);
    }
  }
  // Step s combines chunk r-s-1; the last one finishes chunk r+1 into out,
  // the all-gather's first message.
  for (int s = 0; s < n - 1; ++s) {
    const bool last = s == n - 2;
    const bool as_values = s == 0 && values != nullptr;
    const int c = ring.chunk(-s - 1);
    for (size_t k = 0; k < ring.segments(); ++k) {
      const Range g = ring.Segment(c, k);
      t.RecvCombine(ring.prev(), ring.Env(s, k),
                    as_values ? ring.Bytes(g) : g.count * wire,
                    [&](const void* message) {
                      reduction.Combine(g.offset, g.count, message, as_values,
                                        words_at(g), last);
                    });
      if (last) {
        t.Send(ring.next(), ring.Env(s + 1, k), ring.At(out, g), ring.Bytes(g));
      } else {
        t.Send(ring.next(), ring.Env(s + 1, k), words_at(g), g.count * wire);
      }
    }
  }
  AllGatherSteps(t, ring, out);
  t.WaitSends();
}

void RingAlgorithm::ReduceScatter(Transport& t, const CallDesc& call,
                                  const void* send, void* recv) const {
  const int n = t.size();
  const size_t total = call.count * n;
  const Ring ring(t, call, total, true, segment_bytes_, n - 1);
  // Start one chunk earlier than allreduce, so rank r finishes chunk r, as
  // NCCL's reduce-scatter gives it. Partial sums need memory of their own:
  // send is read-only and recv holds one chunk.
  void* partial = t.Scratch(total * SizeOf(call.type));
  ReduceScatterSteps(t, ring, call, /*first=*/-1, send, partial, recv, false);
  t.WaitSends();
}

void RingAlgorithm::AllGather(Transport& t, const CallDesc& call,
                              const void* send, void* recv) const {
  const int n = t.size();
  const Ring ring(t, call, call.count * n, true, segment_bytes_, n - 1);
  char* own = ring.At(recv, ring.Segment(ring.chunk(0), 0));
  t.CopyLocal(own, send, call.count * SizeOf(call.type));
  // Step j receives block r-j-1 and passes it on unless the next rank
  // started it.
  for (size_t k = 0; k < ring.segments(); ++k) {
    const Range g = ring.Segment(ring.chunk(0), k);
    t.Send(ring.next(), ring.Env(0, k), ring.At(recv, g), ring.Bytes(g));
  }
  for (int j = 0; j < n - 1; ++j) {
    const int c = ring.chunk(-j - 1);
    for (size_t k = 0; k < ring.segments(); ++k) {
      const Range g = ring.Segment(c, k);
      t.RecvCopy(ring.prev(), ring.Env(j, k), ring.At(recv, g), ring.Bytes(g));
      if (j < n - 2) {
        t.Send(ring.next(), ring.Env(j + 1, k), ring.At(recv, g),
               ring.Bytes(g));
      }
    }
  }
  t.WaitSends();
}

void RingAlgorithm::Broadcast(Transport& t, const CallDesc& call,
                              const void* send, void* recv) const {
  const int n = t.size();
  // A chain from the root around the ring, pipelined by segments: each
  // rank but the last sends S bytes once.
  const size_t esize = SizeOf(call.type);
  const size_t segments = SegmentCount(call.count * esize, segment_bytes_,
                                       t.max_messages_per_link());
  const int distance = (t.rank() - call.root + n) % n;
  const int next = (t.rank() + 1) % n;
  const int prev = (t.rank() + n - 1) % n;
  // Every rank first sends an empty message to its neighbour and receives
  // one, so every rank hears from its neighbour before it waits for data:
  // ranks that disagree on the call or the root are caught at once.
  const Envelope hello{call, 0, 0};
  t.Send(next, hello, nullptr, 0);
  t.RecvCopy(prev, hello, nullptr, 0);
  if (distance == 0) t.CopyLocal(recv, send, call.count * esize);
  for (size_t k = 0; k < segments; ++k) {
    const Range g = EvenPart(call.count, segments, k);
    char* data = static_cast<char*>(recv) + g.offset * esize;
    const Envelope env{call, 1, static_cast<uint32_t>(k)};
    if (distance > 0) t.RecvCopy(prev, env, data, g.count * esize);
    if (distance < n - 1) t.Send(next, env, data, g.count * esize);
  }
  // Data flows one way, so a rank near the root could finish before a rank
  // further on finds a mismatch; agreeing at the end fails them all.
  RingAgree(t, call, 2);
  t.WaitSends();
}

void RingAlgorithm::Barrier(Transport& t, const CallDesc& call) const {
  RingAgree(t, call, 0);
  t.WaitSends();
}

}  // namespace ringlet::collectives
