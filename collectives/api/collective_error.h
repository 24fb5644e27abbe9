// The error every collective throws when it cannot complete: a mismatch
// between ranks, a timeout, a bad argument, an aborted or destroyed peer.
//
// Collectives never hang and never abort the process: every failure becomes
// a CollectiveError on every rank of the group, with a message naming the
// rank, the operation and the sizes, for example
//   rank 1 allreduce #12 float32[61706] does not match rank 0 allreduce #12
//   float32[61696]
// After an error the communicator is aborted; later calls throw at once.
#ifndef RINGLET_COLLECTIVES_API_COLLECTIVE_ERROR_H_
#define RINGLET_COLLECTIVES_API_COLLECTIVE_ERROR_H_

#include <stdexcept>
#include <string>

namespace ringlet::collectives {

class CollectiveError : public std::runtime_error {
 public:
  explicit CollectiveError(const std::string& message)
      : std::runtime_error(message) {}
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_COLLECTIVE_ERROR_H_
