// A sum whose partial results travel in a form of the caller's own: how the
// reproducible sum (reproducible/reproducible_sum.h) folds its rounding to
// fixed point into the ring's first send and the rounding back into its
// last receive, so no pass over the whole buffer is spent on either.
//
// The buffers hold `type()` values; partial results are `wire_bytes()`
// words per element. A backend that runs it (Communicator::AllReduceWire)
// calls these methods for element ranges [offset, offset + count) of at
// most one segment (cut at multiples of grain()), from the calling rank's
// own thread, in an order of its choosing; it never combines a range twice
// on one rank. What the words
// mean is the reduction's business: the backend only moves them.
#ifndef RINGLET_COLLECTIVES_API_WIRE_REDUCTION_H_
#define RINGLET_COLLECTIVES_API_WIRE_REDUCTION_H_

#include <cstddef>

#include "collectives/api/types.h"

namespace ringlet::collectives {

class WireReduction {
 public:
  virtual ~WireReduction() = default;

  // The element type of values() and out().
  virtual DataType type() const = 0;
  // Bytes of one element's word on the wire.
  virtual size_t wire_bytes() const = 0;
  // Ranges handed to Encode, Combine and Finish start at a multiple of
  // grain() elements and end at one or at the call's count (empty ones
  // aside, which any may be).
  virtual size_t grain() const { return 1; }

  // This rank's values, which a first send may carry as they are (the
  // receiver turns them into words), or null: first sends then carry
  // Encode()'s words. Null on one rank means null on every rank.
  virtual const void* values() const = 0;
  // Where the finished sums go (it may be values()).
  virtual void* out() const = 0;

  // words[0, count) = this rank's contribution to elements
  // [offset, offset + count).
  virtual void Encode(size_t offset, size_t count, void* words) const = 0;

  // Adds this rank's contribution to a peer's message for elements
  // [offset, offset + count): `message` holds that peer's values (as
  // values() gives them) when `message_is_values`, else words. The result
  // goes to words[0, count), or, with `finish`, as finished sums to
  // out() + offset (words unused).
  virtual void Combine(size_t offset, size_t count, const void* message,
                       bool message_is_values, void* words,
                       bool finish) const = 0;

  // out()[offset, offset + count) = the finished sums of words that hold
  // every rank's contribution already.
  virtual void Finish(size_t offset, size_t count, const void* words) const = 0;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_WIRE_REDUCTION_H_
