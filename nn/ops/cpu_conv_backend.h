// Which implementation CPU convolutions run: oneDNN (the default; kernels
// chosen for the running CPU) or Eigen (im2col and a matrix product, the
// portable reference that tests compare oneDNN against). Builds with
// --define=ringlet_onednn=off have Eigen only (GPU bundles for
// compute-sanitizer, which stops programs that link oneDNN).
#ifndef RINGLET_NN_OPS_CPU_CONV_BACKEND_H_
#define RINGLET_NN_OPS_CPU_CONV_BACKEND_H_

#include <string>

#include "nn/compute_options.h"

namespace ringlet::nn {

// Whether this build links oneDNN.
bool CpuConvHasOneDnn();

// "onednn" or "eigen"; throws std::invalid_argument for anything else,
// naming the accepted values, and for "onednn" in a build without it.
CpuConvBackend ParseCpuConvBackend(const std::string& name);
const char* CpuConvBackendName(CpuConvBackend backend);

// The calling thread's (ComputeOptions::cpu_conv, nn/compute_options.h),
// kDefault resolved: $RINGLET_CPU_CONV when set (a bad value throws), else
// oneDNN (Eigen in a build without it). oneDNN in a build without it
// throws std::invalid_argument.
CpuConvBackend GetCpuConvBackend();

}  // namespace ringlet::nn

#endif  // RINGLET_NN_OPS_CPU_CONV_BACKEND_H_
