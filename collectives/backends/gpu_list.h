// Checks of a list of GPUs given to a group (rank i runs on gpus[i]), shared
// by every GPU backend and by builds without CUDA, so a bad list gets the
// same clear error everywhere, before any GPU is touched.
#ifndef RINGLET_COLLECTIVES_BACKENDS_GPU_LIST_H_
#define RINGLET_COLLECTIVES_BACKENDS_GPU_LIST_H_

#include <string>
#include <vector>

namespace ringlet::collectives {

// "[cuda:0, cuda:0, cuda:1]".
std::string GpuListName(const std::vector<int>& gpus);

// Throws std::invalid_argument for an empty list or a negative index.
// When `one_rank_per_gpu` (NCCL refuses two ranks on one GPU), throws
// CollectiveError naming the first two ranks that share a GPU and the
// backends that allow it.
void CheckGpuList(const std::string& backend, const std::vector<int>& gpus,
                  bool one_rank_per_gpu);

// Throws CollectiveError when a listed GPU is not among the `available`
// ones the CUDA runtime reports (`reason` says why there are so few).
void CheckGpusExist(const std::string& backend, const std::vector<int>& gpus,
                    int available, const std::string& reason);

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_BACKENDS_GPU_LIST_H_
