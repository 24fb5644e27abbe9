#include "nn/cuda/cublas_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "nn/device.h"

namespace ringlet::nn::cuda {
namespace {

template <typename Fn>
void Resolve(void* handle, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*fn == nullptr) {
    throw DeviceError(std::string("cuBLAS has no ") + name + ": " + dlerror());
  }
}

CublasLibrary Load() {
  // The major version nn was compiled against, as its runtime soname.
  const std::string file = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    throw DeviceError("cannot load " + file + " (" + dlerror() +
                      "); install cuBLAS " + std::to_string(CUBLAS_VER_MAJOR) +
                      " or add its folder to LD_LIBRARY_PATH");
  }
  CublasLibrary lib;
  Resolve(handle, "cublasCreate_v2", &lib.create);
  Resolve(handle, "cublasDestroy_v2", &lib.destroy);
  Resolve(handle, "cublasSetStream_v2", &lib.set_stream);
  Resolve(handle, "cublasSetMathMode", &lib.set_math_mode);
  Resolve(handle, "cublasSgemm_v2", &lib.sgemm);
  Resolve(handle, "cublasSgemv_v2", &lib.sgemv);
  Resolve(handle, "cublasGemmEx", &lib.gemm_ex);
  Resolve(handle, "cublasGetStatusString", &lib.status_string);
  return lib;  // The handle stays open for the life of the process.
}

}  // namespace

const CublasLibrary& Cublas() {
  static std::once_flag once;
  static CublasLibrary lib;
  std::call_once(once, [] { lib = Load(); });
  return lib;
}

}  // namespace ringlet::nn::cuda
