#include "nn/ops/parallel.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ringlet::nn {
namespace {

thread_local int op_threads = 1;

}  // namespace

void SetOpThreads(int threads) {
  if (threads < 1) {
    throw std::invalid_argument("op threads must be at least 1, got " +
                                std::to_string(threads));
  }
  op_threads = threads;
}

int OpThreads() { return op_threads; }

void ParallelFor(int64_t n,
                 const std::function<void(int64_t, int64_t, int)>& fn) {
  const int workers = static_cast<int>(std::min<int64_t>(op_threads, n));
  if (workers <= 1) {
    fn(0, n, 0);
    return;
  }
  // Threads per call: a few tens of microseconds against the milliseconds
  // of the convolutions that use this.
  std::vector<std::thread> threads;
  const auto part = [&](int w) { return n * w / workers; };
  for (int w = 1; w < workers; ++w) {
    threads.emplace_back(fn, part(w), part(w + 1), w);
  }
  fn(part(0), part(1), 0);
  for (std::thread& t : threads) t.join();
}

void ParallelForElements(int64_t n, int64_t grain,
                         const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t parts =
      std::max<int64_t>(1, std::min<int64_t>(OpThreads(), n / grain));
  if (parts == 1) {
    fn(0, n);
    return;
  }
  ParallelFor(parts, [&](int64_t begin, int64_t end, int) {
    fn(n * begin / parts, n * end / parts);
  });
}

}  // namespace ringlet::nn
