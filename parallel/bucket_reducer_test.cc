// The reducer starts a bucket from its parameters' hooks, wherever the
// parameters live: a model that is not a Sequential overlaps its
// allreduce with the rest of its backward too.
#include "parallel/bucket_reducer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "nn/layers/layers.h"
#include "nn/testing/gradient_check.h"

namespace ringlet::parallel {
namespace {

using collectives::CallOptions;
using collectives::CommStats;
using collectives::DataType;
using collectives::ReduceOp;

// Rank 0 of two whose other rank holds the same values: an allreduce (sum)
// doubles them. Records each call's element count.
class RecordingComm : public collectives::Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  std::string backend() const override { return "recording"; }
  void AllReduce(const void* send, void* recv, size_t count, DataType type,
                 ReduceOp, const CallOptions&) override {
    if (type != DataType::kFloat32) throw std::logic_error("float32 only");
    std::vector<float> values(count);
    std::memcpy(values.data(), send, count * sizeof(float));
    for (float& v : values) v *= 2;
    std::memcpy(recv, values.data(), count * sizeof(float));
    std::lock_guard<std::mutex> lock(mu_);
    counts_.push_back(count);
    called_.notify_all();
  }
  // Waits up to 10 s for `n` calls; the calls so far.
  size_t WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    called_.wait_for(lock, std::chrono::seconds(10),
                     [&] { return counts_.size() >= n; });
    return counts_.size();
  }
  void Broadcast(const void*, void*, size_t, DataType, int,
                 const CallOptions&) override {
    throw std::logic_error("not used");
  }
  void ReduceScatter(const void*, void*, size_t, DataType, ReduceOp,
                     const CallOptions&) override {
    throw std::logic_error("not used");
  }
  void AllGather(const void*, void*, size_t, DataType,
                 const CallOptions&) override {
    throw std::logic_error("not used");
  }
  void Barrier(const CallOptions&) override {}
  void Abort(const std::string&) override {}
  CommStats stats() const override { return {}; }

 private:
  std::mutex mu_;
  std::condition_variable called_;
  std::vector<size_t> counts_;
};

// Two linear layers as plain members: no Sequential anywhere.
struct TwoLayers : nn::Module {
  nn::Linear first{4, 3}, second{3, 2};
  nn::Tensor Forward(const nn::Tensor& x) override {
    return second.Forward(first.Forward(x));
  }
  nn::Tensor Backward(const nn::Tensor& dy) override {
    return first.Backward(second.Backward(dy));
  }
  std::string kind() const override { return "two_layers"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<nn::Parameter*>* out) override {
    first.CollectParameters(prefix + "first", out);
    second.CollectParameters(prefix + "second", out);
  }
  std::vector<nn::Module*> Children() override { return {&first, &second}; }
};

TEST(BucketReducer, ABucketStartsOnceItsParametersReportInAnyModule) {
  TwoLayers model;
  RecordingComm comm;
  // One bucket per parameter, in backward's order: second's bias and
  // weight, then first's.
  BucketReducer reducer(model, comm, /*bucket_bytes=*/1);
  ASSERT_EQ(reducer.num_buckets(), 4);
  reducer.BeginStep();
  const nn::Tensor h =
      model.first.Forward(nn::testing::RandomTensor({5, 4}, 1));
  model.second.Forward(h);
  const nn::Tensor dh =
      model.second.Backward(nn::testing::RandomTensor({5, 2}, 2));
  // The second layer's two buckets start while the first layer has not
  // run its backward yet.
  EXPECT_EQ(comm.WaitForCalls(2), 2u);
  model.first.Backward(dh);
  reducer.MarkAllReady();
  reducer.FinishStep();
  EXPECT_EQ(comm.WaitForCalls(4), 4u);
}

TEST(BucketReducer, ItUnhooksTheModelWhenItGoes) {
  TwoLayers model;
  RecordingComm comm;
  { BucketReducer reducer(model, comm, 1); }
  for (nn::Parameter* p : model.Parameters()) EXPECT_FALSE(p->on_grad_ready);
}

}  // namespace
}  // namespace ringlet::parallel
