// The layers of the d2l models as modules: Conv2d, Linear, ReLU,
// AvgPool2d, GlobalAvgPool, Flatten, BatchNorm2d. Weights start at zero;
// InitParameters (init.h) sets them.
#ifndef RINGLET_NN_LAYERS_LAYERS_H_
#define RINGLET_NN_LAYERS_LAYERS_H_

#include <utility>

#include "nn/layers/module.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/conv2d.h"

namespace ringlet::nn {

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

 private:
  Conv2dParams params_;
  bool has_bias_;
  bool need_dx_ = true;
  Parameter weight_, bias_;
  Tensor input_;
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

class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t channels);
  Tensor Forward(const Tensor& x) override;
  Tensor Backward(const Tensor& dy) override;
  std::string kind() const override { return "batchnorm2d"; }
  void CollectParameters(const std::string& prefix,
                         std::vector<Parameter*>* out) override;
  void CollectBuffers(const std::string& prefix,
                      std::vector<Buffer*>* out) override;
  // Synchronised batch norm: training statistics summed across replicas
  // through `sum` (see ReplicaSum); null (the default) keeps them local.
  void set_replica_sum(ReplicaSum sum) { replica_sum_ = std::move(sum); }

 protected:
  void OnTensorsMoved() override;

 private:
  ReplicaSum replica_sum_;
  Parameter gamma_, beta_;
  Buffer running_mean_, running_var_;
  BatchNormStats stats_;
  BatchNormCache cache_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_LAYERS_H_
