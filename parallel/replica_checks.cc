#include "parallel/replica_checks.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace ringlet::parallel {

std::string NonFiniteName(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return "";
}

void RecordLoss(const nn::LossResult& loss, int64_t samples, nn::Device device,
                TrainStepStats* stats) {
  const std::string bad_loss = NonFiniteName(loss.loss);
  if (!bad_loss.empty()) {
    stats->divergence =
        "the loss became " + bad_loss + " on " + ToString(device);
  }
  stats->loss_sum = loss.loss;
  stats->correct = loss.correct;
  stats->samples = samples;
}

std::string FirstNonFinite(const float* values, int64_t count) {
  // A float is inf or NaN exactly when its exponent bits are all ones; an
  // integer test over the bits vectorises, so the common (finite) case is
  // one fast pass.
  constexpr uint32_t kExponent = 0x7f800000u;
  uint32_t bad = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    bad |= (bits & kExponent) == kExponent;
  }
  if (bad == 0) return "";
  for (int64_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return NonFiniteName(values[i]);
  }
  return "";
}

int FirstNonFiniteTensor(const std::vector<const nn::Tensor*>& tensors) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    const nn::Tensor& t = *tensors[i];
    if (!t.device().is_cpu()) continue;
    if (!FirstNonFinite(t.data(), t.numel()).empty())
      return static_cast<int>(i);
  }
  return -1;
}

uint64_t Checksum(const float* values, int64_t count) {
  // FNV-1a over 32-bit words, then a final mix: fast enough to run over
  // ResNet-18's 11M parameters in a few milliseconds.
  uint64_t h = 0xcbf29ce484222325ull ^ static_cast<uint64_t>(count);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof(bits));
    h = (h ^ bits) * 0x100000001b3ull;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

NamedTensors OnHost(NamedTensors state, std::vector<nn::Tensor>* copies) {
  copies->clear();
  copies->reserve(state.tensors.size());  // Pointers into it stay valid.
  for (const nn::Tensor*& t : state.tensors) {
    if (t->device().is_cpu()) continue;
    copies->push_back(t->To(nn::Device::Cpu()));
    t = &copies->back();
  }
  return state;
}

void LoadFromHost(const std::vector<const float*>& values,
                  const NamedTensors& live, const std::string& who) {
  if (values.size() != live.tensors.size()) {
    throw std::invalid_argument(who + ": " + std::to_string(values.size()) +
                                " state tensors given for a model with " +
                                std::to_string(live.tensors.size()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    nn::CopyFromHost(values[i], *const_cast<nn::Tensor*>(live.tensors[i]));
  }
}

std::string CompareReplicas(ReplicaGroup& group,
                            const std::function<NamedTensors(int)>& state) {
  const int ranks = group.ranks();
  std::vector<NamedTensors> local(group.size());
  std::vector<std::vector<int32_t>> gathered(group.size());
  group.Run([&](int d) {
    local[d] = state(d);
    const std::vector<const nn::Tensor*>& tensors = local[d].tensors;
    // Two int32 halves per checksum: the collectives move int32 exactly.
    std::vector<int32_t> mine(2 * tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (!tensors[i]->device().is_cpu()) {
        throw std::invalid_argument(
            "replica check: tensors on a GPU are not supported yet");
      }
      const uint64_t h = Checksum(tensors[i]->data(), tensors[i]->numel());
      mine[2 * i] = static_cast<int32_t>(h >> 32);
      mine[2 * i + 1] = static_cast<int32_t>(h & 0xffffffffu);
    }
    gathered[d].resize(mine.size() * ranks);
    const nn::Device device = group.devices()[d];
    if (device.is_cpu()) {
      group.comm(d).AllGather(mine.data(), gathered[d].data(), mine.size(),
                              collectives::DataType::kInt32);
      return;
    }
    // A GPU group's communicators move device memory: the checksums go
    // through device tensors (4-byte elements, copied bit for bit).
    const int64_t n = static_cast<int64_t>(mine.size());
    nn::Tensor send = nn::Tensor::Uninitialized({n}, device);
    nn::Tensor recv = nn::Tensor::Uninitialized({n * ranks}, device);
    nn::CopyFromHost(reinterpret_cast<const float*>(mine.data()), send);
    group.comm(d).AllGather(send.device_data(), recv.device_data(), mine.size(),
                            collectives::DataType::kInt32);
    nn::CopyToHost(recv, reinterpret_cast<float*>(gathered[d].data()));
  });
  const std::vector<int32_t>& all = gathered[0];
  const size_t per_rank = all.size() / ranks;
  for (int r = 1; r < ranks; ++r) {
    for (size_t w = 0; w < per_rank; ++w) {
      if (all[r * per_rank + w] != all[w]) {
        const std::string& name = local[0].names.at(w / 2);
        return "replica of rank " + std::to_string(r) +
               " differs from rank 0's in " + name +
               " (replicas take the same steps from the same values and must "
               "stay bitwise equal: a bug or a hardware fault)";
      }
    }
  }
  return "";
}

}  // namespace ringlet::parallel
