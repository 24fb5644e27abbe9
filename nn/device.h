// Devices, as in d2l: `cpu:N` (a model replica driven by its own thread)
// or `cuda:N` (a GPU). Parsing, printing and discovery (try_all_gpus).
#ifndef RINGLET_NN_DEVICE_H_
#define RINGLET_NN_DEVICE_H_

#include <stdexcept>
#include <string>
#include <vector>

namespace ringlet::nn {

enum class DeviceType { kCpu, kCuda };

struct Device {
  DeviceType type = DeviceType::kCpu;
  int index = 0;

  static Device Cpu(int index = 0) { return {DeviceType::kCpu, index}; }
  static Device Cuda(int index) { return {DeviceType::kCuda, index}; }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  bool is_cuda() const { return type == DeviceType::kCuda; }
  bool operator==(const Device& o) const {
    return type == o.type && index == o.index;
  }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// "cpu:0", "cuda:1".
std::string ToString(const Device& device);
// "[cpu:0, cpu:1]", as d2l prints device lists.
std::string ToString(const std::vector<Device>& devices);

// A device that does not exist, or a spec that does not parse.
class DeviceError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// The most CPU devices one process may ask for: each is a thread and a full
// model replica, and beyond this many the replicas alone outgrow a
// machine's memory (ResNet-18: 45 MiB of parameters and gradients each).
inline constexpr int kMaxCpuDevices = 256;

// One device: "cpu", "cpu:N", "cuda:N". Throws DeviceError.
Device ParseDevice(const std::string& text);

// The devices a --devices flag names, given how many usable GPUs there are:
//   auto        every GPU (cuda:0 .. cuda:G-1); with no GPU, `cpu_fallback`
//               CPU devices (d2l's try_all_gpus falls back to the CPU)
//   cpu:K       K CPU devices, cpu:0 .. cpu:K-1 (CPU devices are replicas,
//               each with a worker thread; K at most kMaxCpuDevices)
//   cpu:I,J..   the listed CPU devices ("cpu:0,cpu:1" too), each once
//   cuda:I,J..  the listed GPUs ("cuda:0,cuda:1" too); each must exist; a
//               GPU may repeat (cuda:0,0: two replicas on one GPU)
// Throws DeviceError naming the spec, and for a missing GPU how many exist
// and what to use instead.
std::vector<Device> ResolveDevices(const std::string& spec, int usable_gpus,
                                   int cpu_fallback = 1);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_DEVICE_H_
