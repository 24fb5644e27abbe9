// Which implementation CPU convolutions run: oneDNN (the default; kernels
// chosen for the running CPU) or Eigen (im2col and a matrix product, the
// portable reference that tests compare oneDNN against). Builds with
// --define=ringlet_onednn=off have Eigen only (GPU bundles for
// compute-sanitizer, which stops programs that link oneDNN).
#ifndef RINGLET_NN_OPS_CPU_CONV_BACKEND_H_
#define RINGLET_NN_OPS_CPU_CONV_BACKEND_H_

#include <string>

namespace ringlet::nn {

enum class CpuConvBackend { kOneDnn, kEigen };

// Whether this build links oneDNN.
bool CpuConvHasOneDnn();

// "onednn" or "eigen"; throws std::invalid_argument for anything else,
// naming the accepted values, and for "onednn" in a build without it.
CpuConvBackend ParseCpuConvBackend(const std::string& name);
const char* CpuConvBackendName(CpuConvBackend backend);

// Process-wide. Starts as $RINGLET_CPU_CONV when set (a bad value throws on
// first use), else oneDNN (Eigen in a build without it). Setting oneDNN in
// a build without it throws std::invalid_argument.
CpuConvBackend GetCpuConvBackend();
void SetCpuConvBackend(CpuConvBackend backend);

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_CPU_CONV_BACKEND_H_
