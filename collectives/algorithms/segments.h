// How the algorithms cut a buffer into chunks (one per rank) and chunks into
// segments (the unit of pipelining), identically on every rank.
//
// Nomenclature, as in the ring's comments:
//   chunk    the part of the buffer one rank reduces: count / size elements,
//            the count % size left over spread one each over the first
//            chunks, so chunk sizes differ by at most one element;
//   segment  a piece of a chunk sent as one message, so that a rank can
//            pass segment k on while it still receives segment k + 1;
//   step     one exchange of a chunk with the neighbours.
#ifndef RINGLET_COLLECTIVES_ALGORITHMS_SEGMENTS_H_
#define RINGLET_COLLECTIVES_ALGORITHMS_SEGMENTS_H_

#include <cstddef>

namespace ringlet::collectives {

struct Range {
  size_t offset = 0;  // In elements.
  size_t count = 0;
};

// Part `index` of `count` elements cut into `parts`, remainder first.
inline Range EvenPart(size_t count, size_t parts, size_t index) {
  const size_t base = count / parts;
  const size_t extra = count % parts;
  return {index * base + (index < extra ? index : extra),
          base + (index < extra ? 1 : 0)};
}

// Segments per chunk: enough that none exceeds `segment_bytes`, at least
// one, and no more than `max_segments`.
inline size_t SegmentCount(size_t chunk_bytes, size_t segment_bytes,
                           size_t max_segments) {
  size_t n = (chunk_bytes + segment_bytes - 1) / segment_bytes;
  if (n < 1) n = 1;
  if (n > max_segments) n = max_segments;
  return n;
}

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_ALGORITHMS_SEGMENTS_H_
