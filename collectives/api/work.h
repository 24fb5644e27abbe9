// A collective call in flight, as c10d's Work: returned by
// Communicator::AllReduceAsync, waited for once.
//
//   std::unique_ptr<Work> work = comm.AllReduceAsync(grads, grads, n, ...);
//   ...  // other work: backward of earlier layers, the next bucket
//   work->Wait();  // the sums are in `grads` (or a CollectiveError)
//
// A Work must not outlive the communicator that made it. Its buffers belong
// to the call until Done() is true.
#ifndef RINGLET_COLLECTIVES_API_WORK_H_
#define RINGLET_COLLECTIVES_API_WORK_H_

#include <exception>
#include <utility>

namespace ringlet::gpu {
class Event;
}  // namespace ringlet::gpu

namespace ringlet::collectives {

class Work {
 public:
  virtual ~Work() = default;

  // Blocks until this rank's part of the call has finished (on a GPU: has
  // run on the device), or fails the group at the communicator's timeout;
  // rethrows the call's CollectiveError. May be called again: it returns or
  // throws the same way.
  virtual void Wait() = 0;
  // True once the call has finished, successfully or not. Never blocks or
  // throws.
  virtual bool Done() = 0;
  // The call's failure once Done(); null while it runs or when it succeeded.
  virtual std::exception_ptr error() = 0;
  // For a call ordered on a device (Communicator::OrdersOnDevice): recorded
  // on the communicator's stream after the call, so a stream that waits for
  // it sees the result without the host waiting. Null for host calls.
  virtual const gpu::Event* event() const { return nullptr; }
  // Once Done(): the seconds the call ran on the host (on whichever thread
  // ran it); -1 where the host does not run it (a call ordered on a
  // device) or does not know.
  virtual double seconds() const { return -1; }
};

// A call that finished before it was handed back (the host backends run a
// call on the caller's thread): Wait rethrows `error`, if any.
class FinishedWork : public Work {
 public:
  explicit FinishedWork(std::exception_ptr error = nullptr, double seconds = -1)
      : error_(std::move(error)), seconds_(seconds) {}
  void Wait() override {
    if (error_) std::rethrow_exception(error_);
  }
  bool Done() override { return true; }
  std::exception_ptr error() override { return error_; }
  double seconds() const override { return seconds_; }

 private:
  std::exception_ptr error_;
  double seconds_;
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_WORK_H_
