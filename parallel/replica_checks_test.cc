#include "parallel/replica_checks.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ringlet::parallel {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

TEST(RecordLossTest, FillsTheStatsAndNamesANonFiniteLoss) {
  nn::LossResult loss;
  loss.loss = 12.5;
  loss.correct = 7;
  TrainStepStats stats;
  RecordLoss(loss, 9, nn::Device::Cpu(1), &stats);
  EXPECT_EQ(stats.loss_sum, 12.5);
  EXPECT_EQ(stats.correct, 7);
  EXPECT_EQ(stats.samples, 9);
  EXPECT_EQ(stats.divergence, "");
  loss.loss = std::nan("");
  RecordLoss(loss, 9, nn::Device::Cuda(2), &stats);
  EXPECT_EQ(stats.divergence, "the loss became nan on cuda:2");
}

TEST(NonFiniteTest, NamesInfAndNan) {
  EXPECT_EQ(NonFiniteName(1.5), "");
  EXPECT_EQ(NonFiniteName(std::numeric_limits<double>::max()), "");
  EXPECT_EQ(NonFiniteName(kInf), "inf");
  EXPECT_EQ(NonFiniteName(-kInf), "-inf");
  EXPECT_EQ(NonFiniteName(kNan), "nan");
}

TEST(NonFiniteTest, FindsTheFirstBadValueAnywhere) {
  std::vector<float> v(1001, 3e38f);  // Large but finite.
  EXPECT_EQ(FirstNonFinite(v.data(), v.size()), "");
  v[1000] = -kInf;
  EXPECT_EQ(FirstNonFinite(v.data(), v.size()), "-inf");
  v[17] = kNan;
  EXPECT_EQ(FirstNonFinite(v.data(), v.size()), "nan");
  EXPECT_EQ(FirstNonFinite(v.data(), 17), "");
}

TEST(NonFiniteTest, FirstTensorHoldingOne) {
  nn::Tensor a({3}), b({2, 2}), c({4});
  b.data()[3] = kNan;
  c.data()[0] = kInf;
  EXPECT_EQ(FirstNonFiniteTensor({&a}), -1);
  EXPECT_EQ(FirstNonFiniteTensor({&a, &b, &c}), 1);
  EXPECT_EQ(FirstNonFiniteTensor({&a, &c}), 1);
}

TEST(ChecksumTest, EqualValuesEqualSumsAndOneBitChangesIt) {
  std::vector<float> a(1000), b(1000);
  for (int i = 0; i < 1000; ++i) a[i] = b[i] = 0.001f * i;
  EXPECT_EQ(Checksum(a.data(), a.size()), Checksum(b.data(), b.size()));
  b[500] = std::nextafter(b[500], 1.0f);  // One ulp.
  EXPECT_NE(Checksum(a.data(), a.size()), Checksum(b.data(), b.size()));
  // Order matters, and so does length (zeros appended).
  std::vector<float> swapped = a;
  std::swap(swapped[1], swapped[2]);
  EXPECT_NE(Checksum(a.data(), a.size()), Checksum(swapped.data(), 1000));
  std::vector<float> zeros(4, 0.0f);
  EXPECT_NE(Checksum(zeros.data(), 3), Checksum(zeros.data(), 4));
}

class CompareReplicasTest : public ::testing::TestWithParam<int> {};

// Each device holds two tensors; the values of rank `odd` (if any) are
// changed by one ulp in the second one.
std::string Compare(int devices, int odd) {
  ReplicaGroupOptions options;
  options.backend = "ring";
  std::vector<nn::Device> list;
  for (int d = 0; d < devices; ++d) list.push_back(nn::Device::Cpu(d));
  ReplicaGroup group(list, options);
  std::vector<nn::Tensor> first(devices), second(devices);
  for (int d = 0; d < devices; ++d) {
    first[d] = nn::Tensor({5});
    second[d] = nn::Tensor({7});
    for (int i = 0; i < 7; ++i) second[d].data()[i] = 0.25f * i;
  }
  if (odd >= 0) second[odd].data()[6] = std::nextafter(1.5f, 2.0f);
  return CompareReplicas(group, [&](int d) {
    return NamedTensors{{"layer.weight", "layer.bias"},
                        {&first[d], &second[d]}};
  });
}

TEST_P(CompareReplicasTest, EqualReplicasAgree) {
  EXPECT_EQ(Compare(GetParam(), -1), "");
}

TEST_P(CompareReplicasTest, OneUlpOnTheLastRankIsNamed) {
  const int devices = GetParam();
  if (devices == 1) GTEST_SKIP() << "one replica cannot differ";
  const std::string message = Compare(devices, devices - 1);
  EXPECT_NE(message.find("replica of rank " + std::to_string(devices - 1) +
                         " differs from rank 0's in layer.bias"),
            std::string::npos)
      << message;
}

INSTANTIATE_TEST_SUITE_P(Devices, CompareReplicasTest,
                         ::testing::Values(1, 2, 3, 5));

TEST(ReplicaChecks, OnHostKeepsHostTensorsAndCopiesNothing) {
  nn::Tensor a = nn::Tensor::FromVector({2}, {1, 2});
  NamedTensors state{{"a"}, {&a}};
  std::vector<nn::Tensor> copies;
  const NamedTensors host = OnHost(state, &copies);
  EXPECT_EQ(host.tensors.front(), &a);  // The same tensor, not a copy.
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(host.names, state.names);
}

}  // namespace
}  // namespace ringlet::parallel
