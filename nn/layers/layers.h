// The layers of the d2l models as modules: Conv2d, Linear, ReLU,
// AvgPool2d, GlobalAvgPool, Flatten, BatchNorm2d; and what a model of
// one's own reaches for next: GELU, Dropout, LayerNorm, Embedding. Weights
// start at zero; InitParameters (init.h) sets them.
#ifndef RINGLET_NN_LAYERS_LAYERS_H_
#define RINGLET_NN_LAYERS_LAYERS_H_

#include <utility>

#include "nn/layers/module.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/layer_norm.h"

namespace ringlet::nn {

class BatchNorm2d;

class Conv2d : public Module {
 public:
  // Throws ShapeError for non-positive sizes, stride or negative padding.
  Conv2d(int64_t in_channels, int64_t out_channels, int kernel, int stride = 1,
         int padding = 0, bool bias = true);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "conv2d"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;
  void SetInputGradientNeeded(bool needed) override { need_dx_ = needed; }

  // Leaves this convolution's bias to `bn`, the batch norm its output goes
  // straight into. A per-channel bias before a batch norm changes only the
  // batch mean: the training output and every other gradient are the same
  // without it, and its own gradient is zero (in exact arithmetic; rounding
  // noise when computed). So the bias is not added to every output nor its
  // gradient summed; `bn` accounts for it in its running mean (the numbers
  // d2l's model gives, without the cost). The bias stays a parameter, with
  // a zero gradient. Returns false (and changes nothing) without a bias or
  // when already folded; throws ShapeError when the channels differ.
  bool FoldBiasInto(BatchNorm2d& bn);
  bool bias_folded() const { return bias_folded_; }

 private:
  bool bias_applied() const { return has_bias_ && !bias_folded_; }

  Conv2dParams params_;
  bool has_bias_;
  bool bias_folded_ = false;
  bool need_dx_ = true;
  Parameter weight_, bias_;
  Tensor input_;
  // The weights as this step's convolutions take them
  // (Conv2dComputeWeight): converted once for forward and backward.
  Tensor compute_weight_;
};

class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "linear"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;

 private:
  bool has_bias_;
  Parameter weight_, bias_;  // weight [in, out]
  Tensor input_;
};

class ReLU : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "relu"; }

 private:
  Tensor output_;
};

class AvgPool2d : public Module {
 public:
  AvgPool2d(int kernel, int stride);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "avgpool2d"; }

 private:
  int kernel_, stride_;
  Shape input_shape_;
};

class GlobalAvgPool : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "global_avg_pool"; }

 private:
  Shape input_shape_;
};

class Flatten : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "flatten"; }

 private:
  Shape input_shape_;
};

// Batch norm, with the ReLU after it fused in when `relu` (relu(bn(x)) in
// batch norm's own passes over memory, BatchNormEpilogue): the same values
// as a ReLU module after it, in fewer passes.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels, bool relu = false);
  Tensor Forward(const Tensor& x) override;
  // bn(x) + residual, then the ReLU if fused, in the same passes: a
  // residual unit's end. The Backward after it keeps the residual's
  // gradient for TakeResidualGradient.
  Tensor ForwardAdding(const Tensor& x, const Tensor& residual);
  Tensor Backward(const Tensor& dy) override;
  // The residual's gradient from the last Backward (once; then undefined).
  Tensor TakeResidualGradient();
  std::string kind() const override {
    return relu_ ? "batchnorm2d+relu" : "batchnorm2d";
  }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;
  void CollectBuffers(const std::string& prefix,
                      std::vector<Buffer*>* out) override;
  // Synchronised batch norm: training statistics summed across replicas
  // through `sum` (see ReplicaSum); null (the default) keeps them local.
  void set_replica_sum(ReplicaSum sum) { replica_sum_ = std::move(sum); }
  // Takes the context's sum (synchronised batch norm when it has one).
  void SetReplicaContext(const ReplicaContext& context) override {
    set_replica_sum(context.sum);
  }
  // The per-channel bias its input lacks (Conv2d::FoldBiasInto): added to
  // the running mean in training, subtracted from it in evaluation.
  void set_input_bias(const Parameter* bias) { input_bias_ = bias; }
  int64_t channels() const { return gamma_.value.numel(); }

 protected:
  void OnTensorsMoved() override;

 private:
  Tensor ForwardWith(const Tensor& x, const BatchNormEpilogue& epilogue);

  bool relu_;
  ReplicaSum replica_sum_;
  const Parameter* input_bias_ = nullptr;  // The convolution's, when folded.
  Parameter gamma_, beta_;
  Buffer running_mean_, running_var_;
  BatchNormStats stats_;
  BatchNormCache cache_;
  Tensor residual_gradient_;
};

class GELU : public Module {
 public:
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "gelu"; }

 private:
  Tensor input_;
};

// Inverted dropout with probability p in [0, 1) (ShapeError otherwise), off
// in evaluation mode. Each training Forward draws a new mask from (seed,
// replica, the count of training Forwards so far) alone: deterministic per
// step and replica, the same on CPUs and GPUs. Each replica of a
// data-parallel job draws its own (SetReplicaContext's index).
class Dropout : public Module {
 public:
  explicit Dropout(float p = 0.5f, uint64_t seed = 0);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "dropout"; }
  void set_replica(int replica) { replica_ = replica; }
  void SetReplicaContext(const ReplicaContext& context) override {
    set_replica(context.index);
  }
  float p() const { return p_; }

 private:
  float p_;
  uint64_t seed_;
  int replica_ = 0;
  uint64_t forwards_ = 0;
  bool have_mask_ = false;
  uint64_t mask_seed_ = 0;
};

// Layer normalisation over the last dimension of `features` values, with
// a learned scale ("weight", ones) and shift ("bias", zeros), PyTorch's
// names.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t features, float eps = 1e-5f);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "layer_norm"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;

 private:
  float eps_;
  Parameter weight_, bias_;
  LayerNormCache cache_;
};

// A table of `vocab` rows of `dim` values ("weight", set by
// InitParameters): Forward takes ids [...] (integers held in floats) and
// returns [..., dim]. Ids have no gradient: Backward returns an undefined
// tensor, so an Embedding is a model's first layer.
class Embedding : public Module {
 public:
  Embedding(int64_t vocab, int64_t dim);
  Tensor Forward(const Tensor& ids) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "embedding"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;

 private:
  Parameter weight_;  // [vocab, dim]
  Tensor ids_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_LAYERS_H_
