#include "nn/ops/bf16_support.h"

#include <string>

#include "nn/cpu_features.h"
#include "nn/ops/cpu_conv_backend.h"

namespace ringlet::nn {

void RequireBf16Training(const std::vector<Device>& devices) {
  // GPUs run cuDNN's bfloat16 convolutions (its bfloat16 configuration is
  // for sm_80 and later).
  bool any_cpu = false;
  for (const Device& d : devices) any_cpu = any_cpu || d.is_cpu();
  if (!any_cpu) return;
  const CpuFeatures& cpu = GetCpuFeatures();
  if (!cpu.avx512_bf16 && !cpu.amx_bf16) {
    throw DeviceError(
        "--precision=bf16 on CPU devices runs oneDNN's bfloat16 kernels, "
        "which need the AVX512_BF16 or AMX-BF16 instructions; this CPU (" +
        cpu.model +
        ") has neither: use --precision=fp32 (the default), or a CPU that "
        "has them (Intel Cooper Lake or Sapphire Rapids, AMD Zen 4 and "
        "later)");
  }
  if (GetCpuConvBackend() != CpuConvBackend::kOneDnn) {
    throw DeviceError(
        "--precision=bf16 on CPU devices runs oneDNN's bfloat16 "
        "convolutions, but this run uses the " +
        std::string(CpuConvBackendName(GetCpuConvBackend())) + " ones" +
        (CpuConvHasOneDnn() ? ": leave RINGLET_CPU_CONV (or --cpu_conv) out"
                            : " (a build without oneDNN)") +
        ", or use --precision=fp32");
  }
}

}  // namespace ringlet::nn
