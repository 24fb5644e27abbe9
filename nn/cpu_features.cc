#include "nn/cpu_features.h"

#include <cpuid.h>

#include <cstring>

namespace ringlet::nn {
namespace {

std::string BrandString() {
  unsigned int regs[12] = {};
  unsigned int highest = __get_cpuid_max(0x80000000u, nullptr);
  if (highest < 0x80000004u) return "unknown CPU";
  for (unsigned int i = 0; i < 3; ++i) {
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1],
                &regs[4 * i + 2], &regs[4 * i + 3]);
  }
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string brand(text);
  const size_t first = brand.find_first_not_of(' ');
  const size_t last = brand.find_last_not_of(' ');
  return first == std::string::npos ? "unknown CPU"
                                    : brand.substr(first, last - first + 1);
}

CpuFeatures Detect() {
  CpuFeatures f;
  f.model = BrandString();
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  // AMX-BF16 is CPUID leaf 7, subleaf 0, EDX bit 22 (GCC 12 has no name
  // for it in __builtin_cpu_supports).
  unsigned int a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) f.amx_bf16 = (d >> 22) & 1u;
  return f;
}

}  // namespace

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

std::string Bf16InstructionSets(const CpuFeatures& features) {
  if (features.avx512_bf16 && features.amx_bf16) return "avx512_bf16+amx_bf16";
  if (features.avx512_bf16) return "avx512_bf16";
  if (features.amx_bf16) return "amx_bf16";
  return "none";
}

}  // namespace ringlet::nn
