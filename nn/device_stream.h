// A device's queue of work for one thread of control, such as one replica
// of a data-parallel model. On a GPU it is a CUDA stream of its own with its
// own cuDNN and cuBLAS handles and memory pool; on a CPU it is nothing (CPU
// ops finish before they return).
//
// Why: several replicas may share one GPU (--devices=cuda:0,cuda:0), each
// driven by its own thread, and cuDNN forbids two threads using one handle
// at once. With a stream each, their work also runs side by side instead of
// queueing on one.
//
// While a DeviceStream::Use is alive, nn's work on the stream's device from
// that thread goes to the stream. Work of two streams is not ordered:
// before a tensor made on a stream is used elsewhere, Synchronize() the
// stream (or hand a DeviceEvent across).
#ifndef RINGLET_NN_DEVICE_STREAM_H_
#define RINGLET_NN_DEVICE_STREAM_H_

#include <memory>

#include "nn/device.h"

namespace ringlet::nn {

class GpuStream;
class GpuStreamBinding;

class DeviceStream {
 public:
  DeviceStream() = default;  // A CPU stream: Use and Synchronize do nothing.
  // A stream of `device`; on a GPU, a new one. Throws DeviceError for a GPU
  // that does not exist or a build without CUDA.
  explicit DeviceStream(Device device);

  const Device& device() const { return device_; }
  // Waits until the stream's queued work has run.
  void Synchronize() const;

  // Binds the stream to the calling thread for the scope.
  class Use {
   public:
    explicit Use(const DeviceStream& stream);
    ~Use();
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;

   private:
    std::unique_ptr<GpuStreamBinding> binding_;
  };

 private:
  Device device_;
  std::shared_ptr<GpuStream> context_;  // Null on CPUs.
};

}  // namespace ringlet::nn

#endif  // RINGLET_NN_DEVICE_STREAM_H_
