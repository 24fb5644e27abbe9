// A training step recorded once on a GPU and replayed whole (a CUDA graph):
// the host queues one launch per step instead of hundreds of kernels, which
// is what limits small batches. For benchmarks and fixed-input loops:
//
//   step();                                    // eagerly, once at least
//   CapturedStep graph(device, step);          // records, runs nothing
//   for (...) graph.Replay();                  // one step each
//
// What a step must be to be captured: it queues work on `device` from the
// calling thread and never waits for the GPU or reads a result on the host
// (Capture throws DeviceError saying so); every shape in it ran before
// (cuDNN's algorithms are chosen by timing on first sight); and state that
// lives across steps (parameters, gradients, momentum, batch-norm
// statistics) is updated in place, as nn's layers and optimiser do. Each
// replay runs the captured kernels with the captured arguments on the
// captured memory, which is kept for the graph alone while it lives: host
// data uploaded inside the step (labels) is the data seen at capture, and
// so is every scalar (the learning rate); a tensor made inside the step
// and kept after it holds what the latest replay wrote.
#ifndef RINGLET_NN_EXPERIMENTAL_CAPTURED_STEP_H_
#define RINGLET_NN_EXPERIMENTAL_CAPTURED_STEP_H_

#include <functional>
#include <memory>

#include "nn/device.h"

namespace ringlet::nn {

class GpuCapturedWork;

class CapturedStep {
 public:
  // Records what `step` queues. Throws DeviceError for a CPU device, a
  // build without CUDA, and a step that cannot be captured (the cause and
  // what to do).
  CapturedStep(Device device, const std::function<void()>& step);

  // Queues one run of the step on the stream it was captured on; returns
  // at once.
  void Replay();

 private:
  Device device_;
  std::shared_ptr<GpuCapturedWork> captured_;
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_EXPERIMENTAL_CAPTURED_STEP_H_
