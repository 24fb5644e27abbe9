#include "nn/layers/layers.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "nn/ops/activation.h"
#include "nn/ops/dropout.h"
#include "nn/ops/elementwise.h"
#include "nn/ops/embedding.h"
#include "nn/ops/gelu.h"
#include "nn/ops/linear.h"
#include "nn/ops/pooling.h"

namespace ringlet::nn {
namespace {

Parameter MakeParameter(const std::string& name, const Shape& shape) {
  return Parameter{name, Tensor(shape), Tensor(shape)};
}

void RequirePositive(const char* kind, const char* what, int64_t value) {
  if (value < 1) {
    throw ShapeError(std::string(kind) + ": " + what +
                     " must be at least 1, got " + std::to_string(value));
  }
}

void Add(const std::string& prefix, Parameter* p,
         std::vector<Parameter*>* out) {
  p->name = JoinName(prefix, p->name.substr(p->name.rfind('.') + 1));
  out->push_back(p);
}

}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, int kernel,
               int stride, int padding, bool bias)
    : params_{stride, padding}, has_bias_(bias) {
  RequirePositive("conv2d", "in_channels", in_channels);
  RequirePositive("conv2d", "out_channels", out_channels);
  RequirePositive("conv2d", "kernel", kernel);
  RequirePositive("conv2d", "stride", stride);
  if (padding < 0) throw ShapeError("conv2d: padding must not be negative");
  weight_ =
      MakeParameter("weight", {out_channels, in_channels, kernel, kernel});
  if (bias) bias_ = MakeParameter("bias", {out_channels});
}

Tensor Conv2d::Forward(const Tensor& x) {
  const Tensor w = Conv2dComputeWeight(x, weight_.value);
  input_ = training() ? x : Tensor();
  compute_weight_ = training() ? w : Tensor();
  return Conv2dForward(x, w, bias_applied() ? bias_.value : Tensor(), params_);
}

Tensor Conv2d::Backward(const Tensor& dy) {
  RequireForwardCache(input_.defined());
  Conv2dGrads g = Conv2dBackward(input_, compute_weight_, bias_applied(), dy,
                                 params_, need_dx_);
  input_ = Tensor();
  compute_weight_ = Tensor();
  AccumulateGrad(weight_, g.dw);
  if (bias_applied()) {
    AccumulateGrad(bias_, g.db);
  } else if (has_bias_) {
    GradReady(bias_);  // Folded: its gradient stays zero.
  }
  return g.dx;
}

bool Conv2d::FoldBiasInto(BatchNorm2d& bn) {
  if (!has_bias_ || bias_folded_) return false;
  if (bn.channels() != bias_.value.numel()) {
    throw ShapeError(
        "conv2d: cannot fold a bias of " + std::to_string(bias_.value.numel()) +
        " channels into a batch norm of " + std::to_string(bn.channels()));
  }
  bn.set_input_bias(&bias_);
  bias_folded_ = true;
  return true;
}

void Conv2d::CollectParameters(const std::string& prefix,
                               std::vector<Parameter*>* out) {
  Add(prefix, &weight_, out);
  if (has_bias_) Add(prefix, &bias_, out);
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : has_bias_(bias) {
  RequirePositive("linear", "in_features", in_features);
  RequirePositive("linear", "out_features", out_features);
  weight_ = MakeParameter("weight", {in_features, out_features});
  if (bias) bias_ = MakeParameter("bias", {out_features});
}

Tensor Linear::Forward(const Tensor& x) {
  input_ = training() ? x : Tensor();
  return LinearForward(x, weight_.value, has_bias_ ? bias_.value : Tensor());
}

Tensor Linear::Backward(const Tensor& dy) {
  RequireForwardCache(input_.defined());
  LinearGrads g = LinearBackward(input_, weight_.value, has_bias_, dy);
  input_ = Tensor();
  AccumulateGrad(weight_, g.dw);
  if (has_bias_) AccumulateGrad(bias_, g.db);
  return g.dx;
}

void Linear::CollectParameters(const std::string& prefix,
                               std::vector<Parameter*>* out) {
  Add(prefix, &weight_, out);
  if (has_bias_) Add(prefix, &bias_, out);
}

Tensor ReLU::Forward(const Tensor& x) {
  Tensor y = ReluForward(x);
  output_ = training() ? y : Tensor();
  return y;
}

Tensor ReLU::Backward(const Tensor& dy) {
  RequireForwardCache(output_.defined());
  Tensor dx = ReluBackward(output_, dy);
  output_ = Tensor();
  return dx;
}

AvgPool2d::AvgPool2d(int kernel, int stride)
    : kernel_(kernel), stride_(stride) {
  RequirePositive("avgpool2d", "kernel", kernel);
  RequirePositive("avgpool2d", "stride", stride);
}

Tensor AvgPool2d::Forward(const Tensor& x) {
  input_shape_ = training() ? x.shape() : Shape();
  return AvgPool2dForward(x, kernel_, stride_);
}

Tensor AvgPool2d::Backward(const Tensor& dy) {
  RequireForwardCache(!input_shape_.empty());
  return AvgPool2dBackward(std::exchange(input_shape_, Shape()), dy, kernel_,
                           stride_);
}

Tensor GlobalAvgPool::Forward(const Tensor& x) {
  input_shape_ = training() ? x.shape() : Shape();
  return GlobalAvgPoolForward(x);
}

Tensor GlobalAvgPool::Backward(const Tensor& dy) {
  RequireForwardCache(!input_shape_.empty());
  return GlobalAvgPoolBackward(std::exchange(input_shape_, Shape()), dy);
}

Tensor Flatten::Forward(const Tensor& x) {
  input_shape_ = training() ? x.shape() : Shape();
  return nn::Flatten(x);
}

Tensor Flatten::Backward(const Tensor& dy) {
  RequireForwardCache(!input_shape_.empty());
  return dy.View(std::exchange(input_shape_, Shape()));
}

BatchNorm2d::BatchNorm2d(int64_t channels, bool relu) : relu_(relu) {
  RequirePositive("batchnorm2d", "channels", channels);
  gamma_ = MakeParameter("gamma", {channels});
  gamma_.value.Fill(1.0f);
  beta_ = MakeParameter("beta", {channels});
  running_mean_ = Buffer{"running_mean", Tensor({channels})};
  running_var_ = Buffer{"running_var", Tensor({channels})};
  running_var_.value.Fill(1.0f);
  OnTensorsMoved();  // stats_ shares the buffers' storage.
}

Tensor BatchNorm2d::Forward(const Tensor& x) {
  BatchNormEpilogue epilogue;
  epilogue.relu = relu_;
  return ForwardWith(x, epilogue);
}

Tensor BatchNorm2d::ForwardAdding(const Tensor& x, const Tensor& residual) {
  if (!residual.defined()) {
    throw std::invalid_argument(kind() + ": the residual to add is undefined");
  }
  BatchNormEpilogue epilogue;
  epilogue.residual = residual;
  epilogue.relu = relu_;
  return ForwardWith(x, epilogue);
}

Tensor BatchNorm2d::ForwardWith(const Tensor& x,
                                const BatchNormEpilogue& epilogue) {
  residual_gradient_ = Tensor();
  if (!training()) {
    cache_ = BatchNormCache();
    if (input_bias_ == nullptr) {
      return BatchNorm2dEvalForward(x, gamma_.value, beta_.value, stats_,
                                    epilogue);
    }
    // (x + b) - running_mean = x - (running_mean - b).
    BatchNormStats shifted = stats_;
    shifted.running_mean = stats_.running_mean.Clone();
    AddScaledInPlace(shifted.running_mean, input_bias_->value, -1.0f);
    return BatchNorm2dEvalForward(x, gamma_.value, beta_.value, shifted,
                                  epilogue);
  }
  Tensor y = BatchNorm2dTrainForward(x, gamma_.value, beta_.value, &stats_,
                                     &cache_, replica_sum_, epilogue);
  if (input_bias_ != nullptr) {
    // The batch mean of x + b is x's plus b: the running mean, updated
    // with x's, gets momentum * b more. (The variance does not change.)
    AddScaledInPlace(stats_.running_mean, input_bias_->value, stats_.momentum);
  }
  return y;
}

Tensor BatchNorm2d::Backward(const Tensor& dy) {
  RequireForwardCache(cache_.filled());
  BatchNormGrads g =
      BatchNorm2dBackward(dy, gamma_.value, cache_, replica_sum_);
  cache_ = BatchNormCache();
  AccumulateGrad(gamma_, g.dgamma);
  AccumulateGrad(beta_, g.dbeta);
  residual_gradient_ = g.d_residual;
  return g.dx;
}

Tensor BatchNorm2d::TakeResidualGradient() {
  if (!residual_gradient_.defined()) {
    throw ModeError(kind() +
                    ": no residual gradient; call Backward after ForwardAdding "
                    "first");
  }
  Tensor g = residual_gradient_;
  residual_gradient_ = Tensor();
  return g;
}

void BatchNorm2d::CollectParameters(const std::string& prefix,
                                    std::vector<Parameter*>* out) {
  Add(prefix, &gamma_, out);
  Add(prefix, &beta_, out);
}

void BatchNorm2d::CollectBuffers(const std::string& prefix,
                                 std::vector<Buffer*>* out) {
  running_mean_.name = JoinName(prefix, "running_mean");
  running_var_.name = JoinName(prefix, "running_var");
  out->push_back(&running_mean_);
  out->push_back(&running_var_);
}

void BatchNorm2d::OnTensorsMoved() {
  stats_.running_mean = running_mean_.value;
  stats_.running_var = running_var_.value;
  cache_ = BatchNormCache();
}

Tensor GELU::Forward(const Tensor& x) {
  input_ = training() ? x : Tensor();
  return GeluForward(x);
}

Tensor GELU::Backward(const Tensor& dy) {
  RequireForwardCache(input_.defined());
  Tensor dx = GeluBackward(input_, dy);
  input_ = Tensor();
  return dx;
}

Dropout::Dropout(float p, uint64_t seed) : p_(p), seed_(seed) {
  if (!(p >= 0.0f && p < 1.0f)) {
    throw ShapeError("dropout: probability " + std::to_string(p) +
                     " is outside [0, 1)");
  }
}

Tensor Dropout::Forward(const Tensor& x) {
  if (!training()) return x;
  mask_seed_ = DropoutBits(DropoutBits(seed_, replica_), forwards_++);
  have_mask_ = true;
  return DropoutForward(x, p_, mask_seed_);
}

Tensor Dropout::Backward(const Tensor& dy) {
  RequireForwardCache(have_mask_);
  have_mask_ = false;
  return DropoutBackward(dy, p_, mask_seed_);
}

LayerNorm::LayerNorm(int64_t features, float eps) : eps_(eps) {
  RequirePositive("layer_norm", "features", features);
  if (!(eps > 0.0f)) throw ShapeError("layer_norm: eps must be above 0");
  weight_ = MakeParameter("weight", {features});
  weight_.value.Fill(1.0f);
  bias_ = MakeParameter("bias", {features});
}

Tensor LayerNorm::Forward(const Tensor& x) {
  cache_ = LayerNormCache();
  return LayerNormForward(x, weight_.value, bias_.value, eps_,
                          training() ? &cache_ : nullptr);
}

Tensor LayerNorm::Backward(const Tensor& dy) {
  RequireForwardCache(cache_.filled());
  LayerNormGrads g = LayerNormBackward(dy, weight_.value, cache_);
  cache_ = LayerNormCache();
  AccumulateGrad(weight_, g.dgamma);
  AccumulateGrad(bias_, g.dbeta);
  return g.dx;
}

void LayerNorm::CollectParameters(const std::string& prefix,
                                  std::vector<Parameter*>* out) {
  Add(prefix, &weight_, out);
  Add(prefix, &bias_, out);
}

Embedding::Embedding(int64_t vocab, int64_t dim) {
  RequirePositive("embedding", "vocab", vocab);
  RequirePositive("embedding", "dim", dim);
  weight_ = MakeParameter("weight", {vocab, dim});
}

Tensor Embedding::Forward(const Tensor& ids) {
  ids_ = training() ? ids : Tensor();
  return EmbeddingForward(ids, weight_.value);
}

Tensor Embedding::Backward(const Tensor& dy) {
  RequireForwardCache(ids_.defined());
  AccumulateGrad(weight_, EmbeddingBackward(ids_, dy, weight_.value.dim(0)));
  ids_ = Tensor();
  return Tensor();
}

void Embedding::CollectParameters(const std::string& prefix,
                                  std::vector<Parameter*>* out) {
  Add(prefix, &weight_, out);
}

}  // namespace ringlet::nn
