#include "nn/compute_options.h"

#include <stdexcept>
#include <string>

namespace ringlet::nn {
namespace {

const ComputeOptions kDefaults;
thread_local const ComputeOptions* current = nullptr;

}  // namespace

const ComputeOptions& CurrentComputeOptions() {
  return current != nullptr ? *current : kDefaults;
}

ComputeScope::ComputeScope(const ComputeOptions& options)
    : options_(options), outer_(current) {
  if (options.op_threads < 1) {
    throw std::invalid_argument("op threads must be at least 1, got " +
                                std::to_string(options.op_threads));
  }
  current = &options_;
}

ComputeScope::~ComputeScope() { current = outer_; }

}  // namespace ringlet::nn
