// A collective algorithm: which chunk goes to which rank in which step,
// written against the Transport interface only (see transport/transport.h).
//
// The communicator has validated the call and handled the trivial cases
// (one rank, zero elements) before an algorithm runs. Every method ends
// with transport.WaitSends(), so the caller's buffers are free on return.
#ifndef RINGLET_COLLECTIVES_ALGORITHMS_ALGORITHM_H_
#define RINGLET_COLLECTIVES_ALGORITHMS_ALGORITHM_H_

#include <stdexcept>
#include <string>

#include "collectives/api/wire_reduction.h"
#include "collectives/transport/call_desc.h"
#include "collectives/transport/transport.h"

namespace ringlet::collectives {

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual const char* name() const = 0;

  // call.count elements in send and recv.
  virtual void AllReduce(Transport& t, const CallDesc& call, const void* send,
                         void* recv) const = 0;
  // call.count elements; send is read on call.root only.
  virtual void Broadcast(Transport& t, const CallDesc& call, const void* send,
                         void* recv) const = 0;
  // call.count elements in recv, size() times as many in send.
  virtual void ReduceScatter(Transport& t, const CallDesc& call,
                             const void* send, void* recv) const = 0;
  // call.count elements in send, size() times as many in recv.
  virtual void AllGather(Transport& t, const CallDesc& call, const void* send,
                         void* recv) const = 0;
  virtual void Barrier(Transport& t, const CallDesc& call) const = 0;

  // Whether AllReduceWire runs here (it needs a transport that reads on
  // the host).
  virtual bool RunsWire() const { return false; }
  // call.count elements summed in `reduction`'s words (wire_reduction.h).
  virtual void AllReduceWire(Transport& t, const CallDesc& call,
                             const WireReduction& reduction) const {
    (void)t, (void)call, (void)reduction;
    throw std::logic_error(std::string(name()) + " has no wire allreduce");
  }
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_ALGORITHMS_ALGORITHM_H_
