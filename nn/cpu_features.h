// What this CPU offers for bfloat16 arithmetic, read at run time (the same
// binary runs on AVX2-only, AVX-512 and AMX machines): the instruction sets
// oneDNN's bfloat16 kernels need, and the CPU's name for messages and
// benchmark records.
#ifndef RINGLET_NN_CPU_FEATURES_H_
#define RINGLET_NN_CPU_FEATURES_H_

#include <string>

namespace ringlet::nn {

struct CpuFeatures {
  std::string model;  // "AMD EPYC 7B13", from CPUID's brand string.
  bool avx2 = false;
  bool avx512f = false;
  bool avx512_bf16 = false;  // VCVTNE2PS2BF16, VDPBF16PS.
  bool amx_bf16 = false;     // TDPBF16PS (Sapphire Rapids and later).
};

// Read once, then cached.
const CpuFeatures& GetCpuFeatures();

// "avx512_bf16+amx_bf16", "avx512_bf16", or "none" (the instruction sets
// for bfloat16 arithmetic this CPU has), for JSON records.
std::string Bf16InstructionSets(const CpuFeatures& features);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_CPU_FEATURES_H_
