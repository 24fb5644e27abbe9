// The contract every ProcessWorld keeps, whatever carries its messages
// (MPI, TCP): each backend that runs across processes (ring and naive over
// the world's transports; the launcher's own allreduce where it has one) on
// every collective, reduction, type and a range of counts, with data that
// depends on the global rank; the reproducible sum's bits; and a mismatched
// call failing on every rank within the timeout instead of hanging.
//
// A test instantiates ProcessContractTest with its setups: a JobUnderTest
// gives the ranks this test process holds (under mpirun its own; with
// processes as threads, every one) and sums a count over the whole job.
#ifndef RINGLET_COLLECTIVES_TESTING_PROCESS_CONTRACT_H_
#define RINGLET_COLLECTIVES_TESTING_PROCESS_CONTRACT_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "collectives/testing/rank_threads.h"

namespace ringlet::collectives::testing {

class JobUnderTest {
 public:
  virtual ~JobUnderTest() = default;
  virtual int size() const = 0;  // Ranks over the whole job.
  // The communicators of the ranks this test process runs.
  virtual Group& group() = 0;
  // `value` summed over the job's test processes (itself when one test
  // process holds every rank).
  virtual double SumOverJob(double value) = 0;
};

struct ProcessSetup {
  std::string name;  // For test names: letters, digits and _.
  std::function<std::unique_ptr<JobUnderTest>()> make;
};

std::string ProcessSetupName(
    const ::testing::TestParamInfo<ProcessSetup>& info);

class ProcessContractTest : public ::testing::TestWithParam<ProcessSetup> {
 protected:
  void SetUp() override { job_ = GetParam().make(); }
  void TearDown() override { job_.reset(); }
  // Fails the test, naming the rank, unless every rank here finished
  // without an exception.
  static void ExpectNoErrors(const std::vector<std::string>& errors);

  std::unique_ptr<JobUnderTest> job_;
};

}  // namespace ringlet::collectives::testing

#endif  // RINGLET_COLLECTIVES_TESTING_PROCESS_CONTRACT_H_
