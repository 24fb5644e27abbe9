// CaptureWork (captured_work.h): a step recorded once as a CUDA
// graph and launched whole, so a small batch's hundreds of kernels cost the
// host one call. Stream capture records what the calling thread queues on
// its context's stream. Memory comes from the context's caching allocator
// as in an eager step, in a pool of the graph's own (caching_allocator.h):
// a replay writes the addresses it was captured with, so until the graph
// goes none of them is handed to anyone else, nor returned to CUDA.
#include "nn/cuda/captured_work.h"

#include <cuda_runtime.h>

#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gpu/device_guard.h"
#include "nn/cuda/cuda_check.h"
#include "nn/cuda/device_context.h"
#include "nn/device.h"

namespace ringlet::nn::cuda {
namespace {

class CapturedGraph : public GpuCapturedWork {
 public:
  CapturedGraph(std::shared_ptr<DeviceContext> context, cudaGraphExec_t exec,
                std::vector<void*> pinned, int pool)
      : context_(std::move(context)),
        exec_(exec),
        pinned_(std::move(pinned)),
        pool_(pool) {}
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() override {
    gpu::DeviceGuard guard(context_->device());
    // A replay may still be reading the pinned buffers.
    cudaStreamSynchronize(context_->stream());
    cudaGraphExecDestroy(exec_);
    for (void* p : pinned_) cudaFreeHost(p);
    context_->allocator().ReleasePool(pool_);
  }

  void Replay() override {
    gpu::DeviceGuard guard(context_->device());
    RINGLET_CUDA_CHECK(cudaGraphLaunch(exec_, context_->stream()));
  }

 private:
  std::shared_ptr<DeviceContext> context_;
  cudaGraphExec_t exec_;
  std::vector<void*> pinned_;
  int pool_;
};

[[noreturn]] void ThrowCaptureError(int device, const std::string& cause) {
  throw DeviceError(
      "capturing a step on cuda:" + std::to_string(device) +
      " failed: " + cause +
      ". A captured step may not wait for the GPU or read a result on the "
      "host (read results after a replay), and every shape in it must have "
      "run once before (convolution algorithms are chosen then); or run "
      "without capturing");
}

}  // namespace

std::unique_ptr<GpuCapturedWork> CaptureWork(
    int device, const std::function<void()>& work) {
  std::shared_ptr<DeviceContext> context = DeviceContext::Current(device);
  gpu::DeviceGuard guard(device);
  const cudaStream_t stream = context->stream();
  std::vector<void*> pinned;
  const uint64_t waits_before = DeviceContext::HostWaits();
  // Relaxed capture: the caching allocator may still call cudaMalloc (not
  // captured) for a block it has not cached yet.
  const int pool = context->allocator().BeginPool();
  // Every way out before the graph exists: its buffers and pool go back.
  auto give_up = [&](const std::string& cause) {
    for (void* p : pinned) cudaFreeHost(p);
    context->allocator().ReleasePool(pool);  // Closes it too.
    ThrowCaptureError(device, cause);
  };
  const cudaError_t began =
      cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (began != cudaSuccess) {
    give_up(std::string("cudaStreamBeginCapture: ") +
            cudaGetErrorString(began));
  }
  context->SetCaptureSink(&pinned);
  std::string failure;
  try {
    work();
    if (DeviceContext::HostWaits() != waits_before) {
      failure = "the step made the host wait for the GPU";
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  context->SetCaptureSink(nullptr);
  context->allocator().EndPool();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (!failure.empty() || ended != cudaSuccess) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();  // Capture errors are not sticky; clear the last one.
    give_up(failure.empty() ? cudaGetErrorString(ended) : failure);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    give_up(std::string("cudaGraphInstantiate: ") + cudaGetErrorString(made));
  }
  auto captured =
      std::make_unique<CapturedGraph>(context, exec, std::move(pinned), pool);
  // Uploads the graph now rather than at its first launch.
  RINGLET_CUDA_CHECK(cudaGraphUpload(exec, stream));
  return captured;
}

}  // namespace ringlet::nn::cuda
