#include "collectives/testing/host_backends.h"

#include <chrono>
#include <memory>

#include "collectives/algorithms/naive_algorithm.h"
#include "collectives/algorithms/ring_algorithm.h"
#include "collectives/backends/host_group_factory.h"

namespace ringlet::collectives::testing {

std::vector<HostBackend> HostBackends() {
  const CommOptions options{std::chrono::seconds(60)};
  return {
      {"Ring",
       [=](int n) {
         return CreateHostGroup(n, {std::make_shared<RingAlgorithm>()},
                                options);
       }},
      {"RingSmallSegments",
       [=](int n) {
         return CreateHostGroup(n, {std::make_shared<RingAlgorithm>(64)},
                                options);
       }},
      {"Naive",
       [=](int n) {
         return CreateHostGroup(n, {std::make_shared<NaiveAlgorithm>()},
                                options);
       }},
      {"NaiveSmallSegments",
       [=](int n) {
         return CreateHostGroup(n, {std::make_shared<NaiveAlgorithm>(64)},
                                options);
       }},
  };
}

}  // namespace ringlet::collectives::testing
