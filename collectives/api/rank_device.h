// Where one rank of a group runs: a thread of this process on host memory,
// or a GPU of this process (buffers in its memory).
#ifndef RINGLET_COLLECTIVES_API_RANK_DEVICE_H_
#define RINGLET_COLLECTIVES_API_RANK_DEVICE_H_

namespace ringlet::collectives {

struct RankDevice {
  bool is_gpu = false;
  int gpu = 0;  // The CUDA device index when is_gpu.

  static RankDevice Host() { return {}; }
  static RankDevice Gpu(int index) { return {true, index}; }
  bool operator==(const RankDevice& o) const {
    return is_gpu == o.is_gpu && (!is_gpu || gpu == o.gpu);
  }
};

}  // namespace ringlet::collectives

#endif  // RINGLET_COLLECTIVES_API_RANK_DEVICE_H_
