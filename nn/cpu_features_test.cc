// The CPU's features as CPUID reports them, checked against the kernel's
// own reading (/proc/cpuinfo's flags) where Linux offers it.
#include "nn/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ringlet::nn {
namespace {

std::string CpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) return line + " ";
  }
  return "";
}

bool HasFlag(const std::string& flags, const std::string& flag) {
  return flags.find(" " + flag + " ") != std::string::npos;
}

TEST(CpuFeatures, AgreeWithTheKernelsReading) {
  const CpuFeatures& f = GetCpuFeatures();
  EXPECT_FALSE(f.model.empty());
  EXPECT_NE(f.model.front(), ' ');
  const std::string flags = CpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no /proc/cpuinfo flags to compare with";
  EXPECT_EQ(f.avx2, HasFlag(flags, "avx2"));
  EXPECT_EQ(f.avx512f, HasFlag(flags, "avx512f"));
  EXPECT_EQ(f.avx512_bf16, HasFlag(flags, "avx512_bf16"));
  EXPECT_EQ(f.amx_bf16, HasFlag(flags, "amx_bf16"));
  std::printf("CPU: %s; bfloat16 instruction sets: %s\n", f.model.c_str(),
              Bf16InstructionSets(f).c_str());
}

TEST(CpuFeatures, Bf16InstructionSetsNamesWhatIsThere) {
  CpuFeatures f;
  EXPECT_EQ(Bf16InstructionSets(f), "none");
  f.avx512_bf16 = true;
  EXPECT_EQ(Bf16InstructionSets(f), "avx512_bf16");
  f.amx_bf16 = true;
  EXPECT_EQ(Bf16InstructionSets(f), "avx512_bf16+amx_bf16");
}

}  // namespace
}  // namespace ringlet::nn
