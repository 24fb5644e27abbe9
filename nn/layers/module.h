// Modules with explicit Forward and Backward, in the style of Caffe: no
// general autograd, each module caches what its backward needs.
//
// Forward(x) in training mode keeps what Backward needs; Backward(dy)
// accumulates gradients into the parameters' `grad` tensors, returns dx and
// lets go of what Forward kept (as autograd frees a graph), so activations
// are freed during the backward pass and one Forward serves one Backward.
// Parameters are named by their path ("resnet_block2.0.conv1.weight") and
// shared by handle, so an optimizer or an allreduce can reach them.
#ifndef RINGLET_NN_LAYERS_MODULE_H_
#define RINGLET_NN_LAYERS_MODULE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn/tensor.h"

namespace ringlet::nn {

struct Parameter {
  std::string name;
  Tensor value;
  Tensor grad;  // Same shape; accumulated by Backward, cleared by ZeroGrad.
  // Called by AccumulateGrad and GradReady once a Backward pass is done
  // with this parameter: its gradient is final for the pass, wherever the
  // parameter lives (DataParallel's reducer starts its bucket from here, as
  // c10d's reducer hooks each gradient accumulator, and may be summing it
  // on another thread until the step ends: nothing may read or write the
  // gradient after it reports, until then). Null: nobody asks.
  std::function<void(Parameter&)> on_grad_ready = nullptr;
};

// What a layer's Backward does with each of its parameters, once per pass:
// adds `grad` into p.grad, then calls p.on_grad_ready.
void AccumulateGrad(Parameter& p, const Tensor& grad);
// For a parameter the pass leaves unchanged (a folded bias): its hook is
// still called, so a reducer waiting for it goes on.
void GradReady(Parameter& p);

// A non-trainable state tensor, such as a batch norm running mean.
struct Buffer {
  std::string name;
  Tensor value;
};

// Where a module's replica sits in a data-parallel job, for layers whose
// work depends on it (parallel/'s engine gives it to every module of every
// replica through Module::SetReplicaContext).
struct ReplicaContext {
  int index = 0;  // This replica's rank in the job, 0 .. count - 1.
  int count = 1;  // Replicas in the job.
  // Sums `count` doubles over every replica of the job in place (memory on
  // the replica's device), called by all replicas alike; null: the layer
  // keeps its statistics to itself (batch norm's default).
  std::function<void(double* values, int64_t count)> sum = nullptr;
};

// A call in the wrong order or mode (e.g. Backward without a training
// Forward); the message names the module and what to do.
class ModeError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

class Module {
 public:
  virtual ~Module() = default;

  virtual Tensor Forward(const Tensor& x) = 0;
  virtual Tensor Backward(const Tensor& dy) = 0;
  // A short name for messages: "conv2d", "batchnorm2d", ...
  virtual std::string kind() const = 0;

  // Appends this module's parameters and buffers, named "prefix.<local>"
  // (Parameters() passes path(); containers extend it per child).
  virtual void CollectParameters(const std::string& prefix,
                                 std::vector<Parameter*>* out);
  virtual void CollectBuffers(const std::string& prefix,
                              std::vector<Buffer*>* out);

  // The modules directly inside this one (containers override it).
  virtual std::vector<Module*> Children() { return {}; }

  std::vector<Parameter*> Parameters();
  std::vector<Buffer*> Buffers();
  void ZeroGrad();

  // Where this module sits in its model ("resnet_block2.0"; empty at the
  // top), set by the container that holds it. Parameters() and Buffers()
  // name what they return from it, so asking a child gives the same full
  // names as asking the whole model, and asking changes no name.
  const std::string& path() const { return path_; }
  // Containers pass the path on to what they hold.
  virtual void SetPath(const std::string& path) { path_ = path; }
  // Moves every parameter, gradient and buffer of this module and the ones
  // inside it to `device` (a model built on the CPU, then run on cuda:0).
  // Throws DeviceError when the device does not exist.
  void To(Device device);

  // Whether Backward must return the gradient with respect to the input
  // (the default). An owner that discards it (DataParallel, train_bench)
  // says false, so the first layer skips it: for a convolution, a whole
  // input-gradient pass. Modules that compute it anyway may still return
  // it; a Conv2d returns an undefined tensor.
  virtual void SetInputGradientNeeded(bool needed) { (void)needed; }

  // The replica this module runs as (ReplicaContext). Layers that draw
  // per-replica randomness (dropout) or sum statistics across replicas
  // (batch norm) keep what they need; others ignore it. Not passed on to
  // children: the engine visits every module (VisitModules).
  virtual void SetReplicaContext(const ReplicaContext& context) {
    (void)context;
  }

  // Training mode (the default) caches for Backward and, for batch norm,
  // uses batch statistics; evaluation mode uses running statistics.
  virtual void SetTraining(bool training) { training_ = training; }
  bool training() const { return training_; }

 protected:
  // Throws ModeError unless a training-mode Forward came before Backward.
  void RequireForwardCache(bool have_cache) const;
  // Called on every module after To(): modules holding other handles to
  // their tensors (batch norm's statistics) take the moved ones.
  virtual void OnTensorsMoved() {}

 private:
  bool training_ = true;
  std::string path_;
};

// Calls fn on `root` and every module inside it, parents first.
void VisitModules(Module& root, const std::function<void(Module&)>& fn);

// "prefix.name", or "name" at the top.
std::string JoinName(const std::string& prefix, const std::string& name);

// Total elements of the parameters (or buffers).
int64_t CountElements(const std::vector<Parameter*>& params);
int64_t CountElements(const std::vector<Buffer*>& buffers);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_LAYERS_MODULE_H_
