// The host backends a contract test runs over, each a name (for test
// names) and a factory of groups of n ranks.
#ifndef RINGLET_COLLECTIVES_TESTING_HOST_BACKENDS_H_
#define RINGLET_COLLECTIVES_TESTING_HOST_BACKENDS_H_

#include <functional>
#include <string>
#include <vector>

#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives::testing {

struct HostBackend {
  std::string name;
  std::function<Group(int)> make;
};

// Ring, RingSmallSegments, Naive, NaiveSmallSegments: small segments make
// even short buffers take the pipelined, many-message paths; the default
// segment size covers the large-buffer paths. A 60 s timeout.
std::vector<HostBackend> HostBackends();

}  // namespace ringlet::collectives::testing

#endif  // RINGLET_COLLECTIVES_TESTING_HOST_BACKENDS_H_
