// The reproducible sum (reproducible_sum.h) of buffers in GPU memory, over
// a communicator whose calls take GPU buffers (nccl; cuda_ring, several
// ranks on one GPU allowed). CUDA kernels make the same float64 words as
// the host (grid_arithmetic.h: the same functions, compiled for both) and
// finish them; the communicator sums the words with its own float64 SUM
// allreduce. Every word and every partial sum is an integer below 2^53, so
// each addition is exact: every NCCL algorithm (ring, tree, NVLS), every
// rank count and the CUDA ring give the same bits, and they are the host
// ReproducibleAllReduce's for the same summands, its CPU twin. float64,
// not int64, words: the same 8 bytes, and infinities and NaNs come through
// as IEEE's sum has them, as on the host.
//
// Cost: three small calls (the counts of summands, int32 MAX; the blocks'
// maxima, count / 256 int32 MAX) and a float64 allreduce of count words;
// the kernels read each summand twice and write the words and out once.
#ifndef RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_DEVICE_H_
#define RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_DEVICE_H_

#include <cstddef>
#include <vector>

#include "collectives/api/communicator.h"
#include "collectives/api/types.h"

namespace ringlet::collectives {

// As ReproducibleAllReduce, with summands and recv in the memory of GPU
// `device` (the communicator's GPU for this rank). Returns when recv holds
// the sum. Throws std::invalid_argument for another type, a null buffer,
// a buffer not in that GPU's memory, or too many summands (every rank
// throws); CollectiveError as the communicator does, and where this build
// has no CUDA.
void ReproducibleAllReduceOnDevice(Communicator& comm,
                                   const std::vector<const void*>& summands,
                                   void* recv, size_t count, DataType type,
                                   int device, const CallOptions& options = {});

// Whether this build has the CUDA half (linked in where CUDA was found).
bool ReproducibleOnDeviceCompiledIn();

using ReproducibleOnDeviceFn = void (*)(Communicator&,
                                        const std::vector<const void*>&, void*,
                                        size_t, DataType, int,
                                        const CallOptions&);
// Called by the CUDA half when it is linked in.
void RegisterReproducibleOnDevice(ReproducibleOnDeviceFn fn);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_REPRODUCIBLE_REPRODUCIBLE_SUM_DEVICE_H_
