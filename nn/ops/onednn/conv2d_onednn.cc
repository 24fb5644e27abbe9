#include "nn/ops/onednn/conv2d_onednn.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "nn/cpu_features.h"
#include "nn/ops/onednn/aligned_buffer.h"
#include "nn/ops/onednn/conv_gemm.h"
#include "nn/ops/onednn/conv_plans.h"
#include "nn/ops/op_threads.h"
#include "nn/ops/row_sums.h"

namespace ringlet::nn::onednn {
namespace {

// Images per chunk: enough output positions for the kernels to run at
// speed (ResNet's last stage has 4x4), yet at least kMinChunks chunks so
// the op threads have work to share. Depends on the shapes only: the
// forward pass and the input gradient use these chunks.
constexpr int64_t kTargetPositions = 4096;
constexpr int64_t kMaxImages = 64;
constexpr int64_t kMinChunks = 16;
int64_t ImagesPerChunk(int64_t n, int64_t positions) {
  const int64_t by_size = std::clamp<int64_t>(
      kTargetPositions / std::max<int64_t>(1, positions), 1, kMaxImages);
  return std::max<int64_t>(
      1, std::min(by_size, (n + kMinChunks - 1) / kMinChunks));
}

// One op thread's scratch memory, kept by the device thread that calls the
// op, so steps after the first allocate nothing.
struct WorkerBuffers {
  AlignedBuffer scratchpad, src, dst, diff_dst, diff_src, diff_weights,
      diff_weights_sum;
  GroupGemmBuffers gemm;
  std::vector<double> diff_bias_sum;
};
struct CallerBuffers {
  std::vector<WorkerBuffers> workers;
  AlignedBuffer weights, tail_weights;
};
CallerBuffers& Buffers(int workers) {
  thread_local CallerBuffers buffers;
  if (static_cast<int>(buffers.workers.size()) < workers) {
    buffers.workers.resize(workers);
  }
  return buffers;
}

// oneDNN runs on OpenMP; our op threads are the parallelism, so each call
// stays on the thread that makes it.
void OneOpenMpThread() {
  if (omp_get_max_threads() != 1) omp_set_num_threads(1);
}

dnnl::memory Memory(const dnnl::memory::desc& desc, const void* data) {
  return dnnl::memory(desc, CpuEngine(), const_cast<void*>(data));
}

void Reorder(const dnnl::reorder& reorder, dnnl::stream& stream,
             const dnnl::memory::desc& from_desc, const void* from,
             const dnnl::memory::desc& to_desc, void* to) {
  dnnl::memory source = Memory(from_desc, from), target = Memory(to_desc, to);
  reorder.execute(stream, source, target);
}

// Element `offset` of a tensor's storage, of either type.
const void* At(const Tensor& t, int64_t offset) {
  return static_cast<const std::byte*>(t.raw_data()) +
         offset * static_cast<int64_t>(ElementSize(t.dtype()));
}
void* At(Tensor& t, int64_t offset) {
  return static_cast<std::byte*>(t.raw_data()) +
         offset * static_cast<int64_t>(ElementSize(t.dtype()));
}

// The values at `plain` in the layout the primitive reads: `plain` itself
// when the layouts agree, else a reorder into `buffer`.
void* AsInternal(const LayoutPair& pair, const void* plain,
                 AlignedBuffer& buffer, dnnl::stream& stream) {
  if (!pair.to_internal) return const_cast<void*>(plain);
  void* internal = buffer.Get(pair.internal.get_size());
  Reorder(*pair.to_internal, stream, pair.plain, plain, pair.internal,
          internal);
  return internal;
}

// Where the primitive writes a result destined for `plain`, and the copy
// back once it has.
void* OutputBuffer(const LayoutPair& pair, void* plain, AlignedBuffer& buffer) {
  return pair.to_plain ? buffer.Get(pair.internal.get_size()) : plain;
}
void ToPlain(const LayoutPair& pair, void* internal, void* plain,
             dnnl::stream& stream) {
  if (pair.to_plain) {
    Reorder(*pair.to_plain, stream, pair.internal, internal, pair.plain, plain);
  }
}

dnnl::memory Scratchpad(const dnnl::memory::desc& desc, WorkerBuffers& mine) {
  return Memory(desc, mine.scratchpad.Get(desc.get_size()));
}

struct Chunking {
  ConvShape full, tail;  // tail.n == 0 when chunks divide the batch
  int64_t chunks, images;
  bool IsTail(int64_t chunk) const {
    return tail.n != 0 && chunk == chunks - 1;
  }
};

ConvShape ShapeOf(const Tensor& x, const Tensor& w, bool bias,
                  const Conv2dParams& params) {
  return {x.dim(0),
          x.dim(1),
          x.dim(2),
          x.dim(3),
          w.dim(0),
          w.dim(2),
          w.dim(3),
          params.stride,
          params.padding,
          bias,
          x.dtype() == DType::kBFloat16};
}

// The batch cut into chunks of `images` (the last one shorter).
Chunking ChunksOf(const ConvShape& shape, int64_t images) {
  const int64_t n = shape.n;
  Chunking chunking{shape, shape, (n + images - 1) / images, images};
  chunking.full.n = std::min(images, n);
  chunking.tail.n = n % images;
  return chunking;
}

// The chunks of the forward pass and the input gradient.
Chunking ChunksFor(const ConvShape& shape) {
  return ChunksOf(shape, ImagesPerChunk(shape.n, shape.p() * shape.q()));
}

ConvGeometry GeometryOf(const ConvShape& s) {
  return {s.n, s.c, s.h, s.w, s.k, s.r, s.s, s.p(), s.q(), s.stride, s.pad};
}

// A plan for whole chunks and one for the last, shorter chunk (if any),
// with the weights reordered once for each.
template <typename Plan>
struct ChunkPlans {
  const Plan* full;
  const Plan* tail;
  const void* full_weights;
  const void* tail_weights;
  const Plan& For(bool is_tail) const { return is_tail ? *tail : *full; }
  const void* WeightsFor(bool is_tail) const {
    return is_tail ? tail_weights : full_weights;
  }
};

template <typename Plan, typename GetPlan>
ChunkPlans<Plan> PlansFor(const Chunking& ch, GetPlan get_plan,
                          const Tensor& w) {
  ChunkPlans<Plan> plans{&get_plan(ch.full), nullptr, nullptr, nullptr};
  if (ch.tail.n) plans.tail = &get_plan(ch.tail);
  CallerBuffers& buffers = Buffers(1);
  dnnl::stream stream(CpuEngine());
  plans.full_weights =
      AsInternal(plans.full->weights, w.raw_data(), buffers.weights, stream);
  if (plans.tail) {
    plans.tail_weights = AsInternal(plans.tail->weights, w.raw_data(),
                                    buffers.tail_weights, stream);
  }
  return plans;
}

// Calls fn(n0, is_tail, buffers, stream) for every chunk, each chunk
// taken by the next free op thread, each call on one OpenMP thread.
template <typename Fn>
void ForEachChunk(const Chunking& ch, Fn fn) {
  const int workers =
      static_cast<int>(std::min<int64_t>(OpThreads(), ch.chunks));
  CallerBuffers& buffers = Buffers(workers);
  ParallelForEachItem(ch.chunks, [&](int64_t chunk, int worker) {
    OneOpenMpThread();
    dnnl::stream stream(CpuEngine());
    fn(chunk * ch.images, ch.IsTail(chunk), buffers.workers[worker], stream);
  });
}

// The input gradient, chunk by chunk as the forward pass.
void BackwardData(const Tensor& w, const Tensor& dy, const Chunking& ch,
                  Tensor& dx) {
  const ConvShape& s = ch.full;
  const int64_t in_image = s.c * s.h * s.w, out_image = s.k * s.p() * s.q();
  const auto plans = PlansFor<BackwardDataPlan>(ch, GetBackwardDataPlan, w);
  ForEachChunk(ch, [&](int64_t n0, bool is_tail, WorkerBuffers& mine,
                       dnnl::stream& stream) {
    const BackwardDataPlan& plan = plans.For(is_tail);
    void* diff_dst = AsInternal(plan.diff_dst, At(dy, n0 * out_image),
                                mine.diff_dst, stream);
    void* out = At(dx, n0 * in_image);
    void* diff_src = OutputBuffer(plan.diff_src, out, mine.diff_src);
    plan.primitive.execute(
        stream, {{DNNL_ARG_DIFF_DST, Memory(plan.diff_dst.internal, diff_dst)},
                 {DNNL_ARG_WEIGHTS,
                  Memory(plan.weights.internal, plans.WeightsFor(is_tail))},
                 {DNNL_ARG_DIFF_SRC, Memory(plan.diff_src.internal, diff_src)},
                 {DNNL_ARG_SCRATCHPAD, Scratchpad(plan.scratchpad, mine)}});
    ToPlain(plan.diff_src, diff_src, out, stream);
  });
}

// Weight and bias gradients. Their sums depend on the thread count anyway
// (per thread, then in thread order), so here each thread takes one run of
// images, cut only where the chunk buffers would grow past
// kWeightChunkPositions output positions: few, large oneDNN calls, which
// its weight-gradient kernels need to run at speed (ResNet's 4x4 stage ran
// at 35 GFLOP/s in chunks of 16 images; its 28x28 stage at 45 GFLOP/s in
// chunks of 20 images, 56 in chunks of 80). 80 images of 64 x 28 x 28 are
// 16 MiB of input and as much of output gradient per thread.
constexpr int64_t kWeightChunkPositions = 65536;

// db[k] += the sum of dy over the chunk's images and positions, in double:
// a thread sums up to 100,000 values per channel (LeNet's, ResNet's first
// stage), which float32 in one oneDNN call rounded to 2e-6, past the
// 1e-6 by which k devices must equal one.
void AddBiasGradient(const void* dy, const ConvShape& s, double* db) {
  const int64_t positions = s.p() * s.q();
  std::vector<float> row(s.bf16 ? positions : 0);
  for (int64_t i = 0; i < s.n; ++i) {
    for (int64_t k = 0; k < s.k; ++k) {
      const int64_t at = (i * s.k + k) * positions;
      if (s.bf16) {
        Bf16ToFloat(static_cast<const uint16_t*>(dy) + at, row.data(),
                    positions);
        db[k] += row_sums::Sum(row.data(), positions);
      } else {
        db[k] += row_sums::Sum(static_cast<const float*>(dy) + at, positions);
      }
    }
  }
}

// Images per weight-gradient call: up to kWeightChunkPositions, fewer where
// the kernel's scratchpad would pass kWeightScratchpadBytes. oneDNN's
// GEMM-based kernels (small planes, conv_plans.cc) unfold a call's images
// into it: 38 MB for 128 images of ResNet-18's 4x4 stage, per thread, for
// no speed (their GFLOP/s were the same at 32 images).
constexpr size_t kWeightScratchpadBytes = size_t{8} << 20;
int64_t WeightChunkImages(ConvShape s) {
  s.n = std::clamp<int64_t>(
      kWeightChunkPositions / std::max<int64_t>(1, s.p() * s.q()), 1, s.n);
  const size_t scratchpad = GetBackwardWeightsPlan(s).scratchpad.get_size();
  if (scratchpad <= kWeightScratchpadBytes) return s.n;
  return std::max<int64_t>(
      1, static_cast<int64_t>(s.n * kWeightScratchpadBytes / scratchpad));
}

void BackwardWeights(const Tensor& x, const Tensor& dy, const ConvShape& s,
                     Conv2dGrads& grads) {
  const int64_t n = x.dim(0);
  const bool has_bias = s.bias;
  const int workers = static_cast<int>(std::min<int64_t>(OpThreads(), n));
  CallerBuffers& buffers = Buffers(workers);
  const int64_t in_image = s.c * s.h * s.w, out_image = s.k * s.p() * s.q();
  const size_t dw_bytes = grads.dw.numel() * sizeof(float);
  const bool gemm = RunsAsGroupGemm(s, ConvPass::kBackwardWeights);
  const int64_t most_images = gemm ? GroupGemmImages(s) : WeightChunkImages(s);
  ParallelFor(workers, [&](int64_t begin, int64_t end, int worker) {
    OneOpenMpThread();
    dnnl::stream stream(CpuEngine());
    WorkerBuffers& mine = buffers.workers[worker];
    // This thread's sums; thread 0 adds straight into the result.
    float* dw_sum =
        worker == 0 ? grads.dw.data()
                    : static_cast<float*>(mine.diff_weights_sum.Get(dw_bytes));
    if (worker != 0) std::memset(dw_sum, 0, dw_bytes);
    mine.diff_bias_sum.assign(has_bias ? s.k : 0, 0.0);
    const int64_t first = n * begin / workers, last = n * end / workers;
    for (int64_t n0 = first; n0 < last; n0 += most_images) {
      ConvShape chunk_shape = s;
      chunk_shape.n = std::min(most_images, last - n0);
      if (has_bias) {
        AddBiasGradient(At(dy, n0 * out_image), chunk_shape,
                        mine.diff_bias_sum.data());
      }
      if (gemm) {
        GroupGemmAddWeightGradient(
            GeometryOf(chunk_shape), x.data() + n0 * in_image,
            dy.data() + n0 * out_image, dw_sum, mine.gemm);
        continue;
      }
      const BackwardWeightsPlan& plan = GetBackwardWeightsPlan(chunk_shape);
      void* src = AsInternal(plan.src, At(x, n0 * in_image), mine.src, stream);
      void* diff_dst = AsInternal(plan.diff_dst, At(dy, n0 * out_image),
                                  mine.diff_dst, stream);
      void* diff_weights = mine.diff_weights.Get(plan.diff_weights.get_size());
      plan.primitive.execute(
          stream,
          {{DNNL_ARG_SRC, Memory(plan.src.internal, src)},
           {DNNL_ARG_DIFF_DST, Memory(plan.diff_dst.internal, diff_dst)},
           {DNNL_ARG_DIFF_WEIGHTS, Memory(plan.diff_weights, diff_weights)},
           {DNNL_ARG_SCRATCHPAD, Scratchpad(plan.scratchpad, mine)}});
      Reorder(plan.accumulate_diff_weights, stream, plan.diff_weights,
              diff_weights, plan.plain_weights, dw_sum);
    }
  });
  // The threads' sums, in thread order for every element; the elements
  // split over the op threads (9 MiB per thread for the 4x4 stage).
  std::vector<const float*> parts;
  for (int worker = 1; worker < workers; ++worker) {
    parts.push_back(static_cast<const float*>(
        buffers.workers[worker].diff_weights_sum.Get(dw_bytes)));
  }
  float* dw = grads.dw.data();
  ParallelForElements(grads.dw.numel(), 1 << 16,
                      [&](int64_t begin, int64_t end) {
                        for (const float* part : parts) {
                          for (int64_t i = begin; i < end; ++i) {
                            dw[i] += part[i];
                          }
                        }
                      });
  if (has_bias) {
    std::vector<double> db(s.k, 0.0);
    for (int worker = 0; worker < workers; ++worker) {
      const std::vector<double>& part = buffers.workers[worker].diff_bias_sum;
      for (int64_t k = 0; k < s.k; ++k) db[k] += part[k];
    }
    for (int64_t k = 0; k < s.k; ++k) {
      grads.db.data()[k] = static_cast<float>(db[k]);
    }
  }
}

}  // namespace

bool SupportsBf16() {
  const CpuFeatures& cpu = GetCpuFeatures();
  return cpu.avx512_bf16 || cpu.amx_bf16;
}

bool ReluRunsAsPostOp(const Tensor& x, const Tensor& w,
                      const Conv2dParams& params) {
  ConvShape shape = ShapeOf(x, w, false, params);
  shape.relu = true;
  return ReluRunsAsPostOp(shape);
}

Tensor Conv2dForward(const Tensor& x, const Tensor& w, const Tensor& b,
                     const Conv2dParams& params, bool relu) {
  ConvShape shape = ShapeOf(x, w, b.defined(), params);
  shape.relu = relu;
  if (relu && !ReluRunsAsPostOp(shape)) {
    throw std::invalid_argument(
        "onednn conv2d: these shapes' kernels do not take the ReLU as "
        "ReluForward computes it; run ReluForward after the convolution");
  }
  const Chunking ch = ChunksFor(shape);
  const ConvShape& s = ch.full;
  Tensor y = Tensor::Uninitialized({x.dim(0), s.k, s.p(), s.q()}, Device::Cpu(),
                                   x.dtype());
  if (x.dim(0) == 0) return y;
  OneOpenMpThread();
  const int64_t in_image = s.c * s.h * s.w, out_image = s.k * s.p() * s.q();
  const auto plans = PlansFor<ForwardPlan>(ch, GetForwardPlan, w);
  ForEachChunk(ch, [&](int64_t n0, bool is_tail, WorkerBuffers& mine,
                       dnnl::stream& stream) {
    const ForwardPlan& plan = plans.For(is_tail);
    void* src = AsInternal(plan.src, At(x, n0 * in_image), mine.src, stream);
    void* out = At(y, n0 * out_image);
    void* dst = OutputBuffer(plan.dst, out, mine.dst);
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, Memory(plan.src.internal, src)},
        {DNNL_ARG_WEIGHTS,
         Memory(plan.weights.internal, plans.WeightsFor(is_tail))},
        {DNNL_ARG_DST, Memory(plan.dst.internal, dst)},
        {DNNL_ARG_SCRATCHPAD, Scratchpad(plan.scratchpad, mine)}};
    if (b.defined()) args[DNNL_ARG_BIAS] = Memory(plan.bias, b.data());
    plan.primitive.execute(stream, args);
    ToPlain(plan.dst, dst, out, stream);
  });
  return y;
}

Conv2dGrads Conv2dBackward(const Tensor& x, const Tensor& w, bool has_bias,
                           const Tensor& dy, const Conv2dParams& params,
                           bool need_dx) {
  const ConvShape shape = ShapeOf(x, w, has_bias, params);
  Conv2dGrads grads;
  if (need_dx) {
    grads.dx = Tensor::Uninitialized(x.shape(), Device::Cpu(), x.dtype());
  }
  grads.dw = Tensor(w.shape());
  if (has_bias) grads.db = Tensor({shape.k});
  if (x.dim(0) == 0) return grads;
  OneOpenMpThread();
  if (need_dx) {
    BackwardData(w, dy, ChunksFor(shape), grads.dx);
  }
  BackwardWeights(x, dy, shape, grads);
  return grads;
}

}  // namespace ringlet::nn::onednn
