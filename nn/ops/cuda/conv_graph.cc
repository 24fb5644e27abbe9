#include "nn/ops/cuda/conv_graph.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "nn/gpu_precision.h"

namespace ringlet::nn::cuda_ops {
namespace {

// Building a plan failed: the caller falls back to the legacy API.
class GraphUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void Check(cudnnStatus_t status, const char* what) {
  if (status != CUDNN_STATUS_SUCCESS) {
    throw GraphUnavailable(std::string(what) + ": " +
                           cudnnGetErrorString(status));
  }
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    Check(cudnnBackendCreateDescriptor(type, &desc_),
          "cudnnBackendCreateDescriptor");
  }
  ~Desc() {
    if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
  }
  Desc(Desc&& other) noexcept : desc_(std::exchange(other.desc_, nullptr)) {}
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  void Set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
           int64_t count, const void* values, const char* what) {
    Check(cudnnBackendSetAttribute(desc_, name, type, count, values), what);
  }
  void SetDesc(cudnnBackendAttributeName_t name, const Desc& value,
               const char* what) {
    cudnnBackendDescriptor_t raw = value.get();
    Set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw, what);
  }
  void Finalize(const char* what) { Check(cudnnBackendFinalize(desc_), what); }
  cudnnBackendDescriptor_t get() const { return desc_; }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// The handle attributes are deprecated in cuDNN 9.x in favour of device
// properties, and still what ties a plan to a device; kept in one place.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
constexpr cudnnBackendAttributeName_t kGraphHandle =
    CUDNN_ATTR_OPERATIONGRAPH_HANDLE;
constexpr cudnnBackendAttributeName_t kPlanHandle =
    CUDNN_ATTR_EXECUTION_PLAN_HANDLE;
#pragma GCC diagnostic pop

constexpr int64_t kX = 'x', kW = 'w', kY = 'y';  // Tensor ids.

// dims are [N, C, H, W] (a filter's [K, C, R, S]) in either memory format.
Desc TensorOf(int64_t uid, const int64_t dims[4], DType dtype,
              MemoryFormat format) {
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const cudnnDataType_t type = CudnnType(dtype);
  const int64_t c = dims[1], h = dims[2], w = dims[3];
  const int64_t nchw[4] = {c * h * w, h * w, w, 1};
  const int64_t nhwc[4] = {h * w * c, 1, w * c, c};
  const int64_t* strides = format == MemoryFormat::kChannelsLast ? nhwc : nchw;
  const int64_t alignment = 16;  // Allocations are 256-byte aligned.
  t.Set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type,
        "tensor type");
  t.Set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims,
        "tensor dimensions");
  t.Set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides,
        "tensor strides");
  t.Set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "tensor id");
  t.Set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment,
        "tensor alignment");
  t.Finalize("tensor descriptor");
  return t;
}

Desc ConvolutionOf(const Conv2dParams& params) {
  Desc c(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const int64_t pad[2] = {params.padding, params.padding};
  const int64_t stride[2] = {params.stride, params.stride};
  const int64_t dilation[2] = {1, 1};
  c.Set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute,
        "convolution compute type");
  c.Set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode,
        "convolution mode");
  c.Set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial,
        "convolution dimensions");
  c.Set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation,
        "convolution dilations");
  c.Set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride,
        "convolution strides");
  c.Set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad,
        "convolution paddings");
  c.Set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad,
        "convolution paddings");
  c.Finalize("convolution descriptor");
  return c;
}

// The attributes of one direction's operation descriptor.
struct OperationAttributes {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
};

// The operation of `direction` on tensors x, w, y (for the backward ones, x
// is dx or the input and y is dy).
Desc OperationOf(ConvDirection direction, const Desc& x, const Desc& w,
                 const Desc& y, const Desc& conv) {
  static constexpr OperationAttributes kForward = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static constexpr OperationAttributes kBackwardData = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static constexpr OperationAttributes kBackwardFilter = {
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const OperationAttributes& a = direction == ConvDirection::kForward ? kForward
                                 : direction == ConvDirection::kBackwardData
                                     ? kBackwardData
                                     : kBackwardFilter;
  const float alpha = 1.0f, beta = 0.0f;
  Desc op(a.type);
  op.SetDesc(a.x, x, "operation x");
  op.SetDesc(a.w, w, "operation w");
  op.SetDesc(a.y, y, "operation y");
  op.SetDesc(a.conv, conv, "operation convolution");
  op.Set(a.alpha, CUDNN_TYPE_FLOAT, 1, &alpha, "operation alpha");
  op.Set(a.beta, CUDNN_TYPE_FLOAT, 1, &beta, "operation beta");
  op.Finalize("convolution operation");
  return op;
}

// An engine configuration is usable unless its numerical notes rule it out:
// TF32 tensor cores on float32 data in fp32, inputs converted down (fp16)
// ever, and non-deterministic engines when determinism was asked for
// (PyTorch's filter, the same notes). bfloat16 data runs on tensor cores.
bool Usable(cudnnBackendDescriptor_t config, DType dtype) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t raw = engine.get();
  int64_t count = 0;
  if (cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                               CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &count,
                               &raw) != CUDNN_STATUS_SUCCESS ||
      count != 1) {
    return false;
  }
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT>
      notes{};
  int64_t found = 0;
  if (cudnnBackendGetAttribute(raw, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                               CUDNN_TYPE_NUMERICAL_NOTE, notes.size(), &found,
                               notes.data()) != CUDNN_STATUS_SUCCESS) {
    return false;
  }
  const bool fp32 =
      dtype == DType::kFloat32 && gpu_precision() == GpuPrecision::kFp32;
  const bool deterministic =
      conv_algorithms() == ConvAlgorithms::kDeterministic;
  for (int64_t i = 0; i < found; ++i) {
    if (notes[i] == CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) return false;
    if (fp32 && notes[i] == CUDNN_NUMERICAL_NOTE_TENSOR_CORE) return false;
    if (deterministic && notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) {
      return false;
    }
  }
  return true;
}

// A CUDA event that can time (gpu::Event cannot: it is made without
// timing, which is cheaper for ordering).
class TimingEvent {
 public:
  TimingEvent() { RINGLET_CUDA_CHECK(cudaEventCreate(&event_)); }
  ~TimingEvent() { cudaEventDestroy(event_); }
  TimingEvent(const TimingEvent&) = delete;
  TimingEvent& operator=(const TimingEvent&) = delete;
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

Desc GraphOf(const Desc& op, cudnnHandle_t handle) {
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  cudnnBackendDescriptor_t op_raw = op.get();
  graph.Set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
            &op_raw, "graph operations");
  graph.Set(kGraphHandle, CUDNN_TYPE_HANDLE, 1, &handle, "graph handle");
  graph.Finalize("operation graph");
  return graph;
}

// Every descriptor a plan was built from: kept alive as long as the plan,
// as cudnn_frontend keeps them (the backend may refer to them).
struct GraphDescs {
  GraphDescs(ConvDirection direction, DType dtype, MemoryFormat format,
             const int64_t x_dims[4], const int64_t w_dims[4],
             const int64_t y_dims[4], const Conv2dParams& params,
             cudnnHandle_t handle)
      : x(TensorOf(kX, x_dims, dtype, format)),
        w(TensorOf(kW, w_dims, dtype, format)),
        y(TensorOf(kY, y_dims, dtype, format)),
        conv(ConvolutionOf(params)),
        op(OperationOf(direction, x, w, y, conv)),
        graph(GraphOf(op, handle)) {}
  Desc x, w, y, conv, op, graph;
};

struct Plan {
  std::shared_ptr<const GraphDescs> graph;
  std::vector<Desc> config;  // Its engine configuration.
  Desc plan{CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR};
  int64_t workspace = 0;
};

void Execute(cudnnHandle_t handle, const Plan& plan, void* x, void* w, void* y,
             void* workspace) {
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  const int64_t uids[3] = {kX, kW, kY};
  void* pointers[3] = {x, w, y};
  pack.Set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids,
           "variant pack ids");
  pack.Set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3,
           pointers, "variant pack pointers");
  pack.Set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1,
           &workspace, "variant pack workspace");
  pack.Finalize("variant pack");
  const cudnnStatus_t status =
      cudnnBackendExecute(handle, plan.plan.get(), pack.get());
  if (status != CUDNN_STATUS_SUCCESS) {
    throw DeviceError(std::string("conv2d: cuDNN graph plan failed: ") +
                      cudnnGetErrorString(status) +
                      "; try --conv_algorithms=measure");
  }
}

// Plans tried per shape, in the heuristics' order: enough to find the
// fast ones, few enough that the first step stays short.
constexpr int kMaxCandidates = 8;
// Workspace a candidate may use.
constexpr int64_t kMaxWorkspace = int64_t{1} << 30;

// The fastest usable plan for the problem, timed on the device with the
// caller's tensors (the output is overwritten). Throws GraphUnavailable
// when there is none.
std::shared_ptr<Plan> ChoosePlan(
    ConvDirection direction, OnDevice& on, DType dtype, MemoryFormat format,
    const int64_t x_dims[4], const int64_t w_dims[4], const int64_t y_dims[4],
    const Conv2dParams& params, void* x, void* w, void* y) {
  cudnnHandle_t handle = on.context.cudnn();
  const auto graph = std::make_shared<const GraphDescs>(
      direction, dtype, format, x_dims, w_dims, y_dims, params, handle);

  Desc heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heuristics.SetDesc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph->graph,
                     "heuristics graph");
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heuristics.Set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode,
                 "heuristics mode");
  heuristics.Finalize("heuristics");
  int64_t offered = 0;
  Check(cudnnBackendGetAttribute(
            heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &offered, nullptr),
        "heuristics count");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < offered; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t returned = 0;
  Check(cudnnBackendGetAttribute(
            heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, offered, &returned, raw.data()),
        "heuristics results");

  std::vector<std::shared_ptr<Plan>> candidates;
  for (int64_t i = 0;
       i < returned && static_cast<int>(candidates.size()) < kMaxCandidates;
       ++i) {
    if (!Usable(raw[i], dtype)) continue;
    auto plan = std::make_shared<Plan>();
    plan->graph = graph;
    try {
      plan->plan.Set(kPlanHandle, CUDNN_TYPE_HANDLE, 1, &handle, "plan handle");
      plan->plan.Set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[i], "plan config");
      plan->plan.Finalize("execution plan");
      int64_t got = 0;
      Check(cudnnBackendGetAttribute(
                plan->plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                CUDNN_TYPE_INT64, 1, &got, &plan->workspace),
            "plan workspace");
    } catch (const GraphUnavailable&) {
      continue;  // This engine does not support the problem: the next.
    }
    if (plan->workspace > kMaxWorkspace) continue;
    plan->config.push_back(std::move(configs[i]));
    candidates.push_back(plan);
  }
  if (candidates.empty()) {
    throw GraphUnavailable("no usable engine among " +
                           std::to_string(returned) + " offered");
  }
  if (candidates.size() == 1) return candidates.front();

  // Time each once warm, on the stream, with the real tensors.
  int64_t largest = 0;
  for (const auto& c : candidates) largest = std::max(largest, c->workspace);
  Scratch workspace(on.context, static_cast<size_t>(largest));
  const TimingEvent start, stop;
  std::shared_ptr<Plan> best;
  float best_ms = std::numeric_limits<float>::infinity();
  for (const auto& c : candidates) {
    try {
      Execute(handle, *c, x, w, y, workspace.data());  // Warm.
      RINGLET_CUDA_CHECK(cudaEventRecord(start.get(), on.stream()));
      Execute(handle, *c, x, w, y, workspace.data());
      RINGLET_CUDA_CHECK(cudaEventRecord(stop.get(), on.stream()));
      RINGLET_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    } catch (const DeviceError&) {
      continue;
    }
    float ms = 0;
    if (cudaEventElapsedTime(&ms, start.get(), stop.get()) == cudaSuccess &&
        ms < best_ms) {
      best_ms = ms;
      best = c;
    }
  }
  if (!best) throw GraphUnavailable("no candidate plan ran");
  return best;
}

// A context's chosen plans (a plan belongs to the context's cuDNN handle)
// by direction and shape; a shape the graph API cannot do is remembered as
// null. Kept in the context (DeviceContext::OpState), so plans go with it.
using PlanKey = std::array<int64_t, 16>;
struct PlanCache {
  std::mutex mu;
  std::map<PlanKey, std::shared_ptr<Plan>> plans;
};

std::atomic<uint64_t> runs{0};
std::mutex fallback_mu;
std::string last_fallback;

}  // namespace

bool RunGraphConvolution(ConvDirection direction, OnDevice& on, DType dtype,
                         MemoryFormat format, const int64_t x_dims[4],
                         const int64_t w_dims[4], const int64_t y_dims[4],
                         const Conv2dParams& params, void* x, void* w,
                         void* y) {
  const PlanKey key{static_cast<int64_t>(direction),
                    x_dims[0],
                    x_dims[1],
                    x_dims[2],
                    x_dims[3],
                    w_dims[0],
                    w_dims[2],
                    w_dims[3],
                    y_dims[2],
                    y_dims[3],
                    params.stride,
                    params.padding,
                    static_cast<int64_t>(gpu_precision()),
                    static_cast<int64_t>(conv_algorithms()),
                    static_cast<int64_t>(dtype),
                    static_cast<int64_t>(format)};
  PlanCache& cache = on.context.OpState<PlanCache>("conv_graph_plans");
  std::shared_ptr<Plan> plan;
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    auto it = cache.plans.find(key);
    if (it == cache.plans.end()) {
      try {
        plan = ChoosePlan(direction, on, dtype, format, x_dims, w_dims, y_dims,
                          params, x, w, y);
      } catch (const GraphUnavailable& e) {
        std::lock_guard<std::mutex> fallback_lock(fallback_mu);
        if (last_fallback.empty()) {
          std::fprintf(stderr,
                       "conv2d: cuDNN's graph API has no plan for a shape "
                       "(%s); using the legacy API for it\n",
                       e.what());
        }
        last_fallback = e.what();
      }
      it = cache.plans.emplace(key, plan).first;
    }
    plan = it->second;
  }
  if (!plan) return false;
  Scratch workspace(on.context, static_cast<size_t>(plan->workspace));
  Execute(on.context.cudnn(), *plan, x, w, y, workspace.data());
  ++runs;
  return true;
}

uint64_t GraphConvolutionsRun() { return runs; }

std::string LastGraphFallback() {
  std::lock_guard<std::mutex> lock(fallback_mu);
  return last_fallback;
}

}  // namespace ringlet::nn::cuda_ops
