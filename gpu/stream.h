// Owned CUDA streams and events, and the one way work on two streams is
// ordered here: the consumer's stream waits on an event the producer's
// stream recorded (StreamWaitsFor), never the host in between.
//
//   producer: kernels on s1; ready.Record(s1);
//   consumer: StreamWaitsFor(s2, ready); kernels on s2;
//
// Both are bound to the GPU that was given when they were made; each call
// makes that GPU current for its duration (DeviceGuard).
#ifndef RINGLET_GPU_STREAM_H_
#define RINGLET_GPU_STREAM_H_

#include <cuda_runtime.h>

namespace ringlet::gpu {

// A non-blocking stream (it does not synchronise with the legacy default
// stream) on `device`.
class Stream {
 public:
  explicit Stream(int device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  cudaStream_t get() const { return stream_; }
  // Blocks the host until everything enqueued so far has run; throws
  // CudaError with the first asynchronous error.
  void Synchronize() const;
  // True when everything enqueued so far has run (does not block).
  bool Idle() const;

 private:
  int device_;
  cudaStream_t stream_ = nullptr;
};

// An event without timing (cheapest kind), for ordering only.
class Event {
 public:
  explicit Event(int device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  int device() const { return device_; }
  cudaEvent_t get() const { return event_; }
  // Marks the point in `stream` after everything enqueued on it so far.
  void Record(cudaStream_t stream);
  // Blocks the host until the recorded point has been reached.
  void Synchronize() const;
  // True when the recorded point has been reached (or nothing was recorded).
  bool Done() const;

 private:
  int device_;
  cudaEvent_t event_ = nullptr;
};

// Work enqueued on `stream` after this call starts only once `event`'s
// recorded point has been reached. The event may belong to another GPU.
void StreamWaitsFor(cudaStream_t stream, const Event& event);

}  // namespace ringlet::gpu

#endif  // RINGLET_GPU_STREAM_H_
