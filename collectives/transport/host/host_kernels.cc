#include "collectives/transport/host/host_kernels.h"

#include <emmintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "collectives/transport/host/bf16_kernels.h"

namespace ringlet::collectives::host {
namespace {

// SSE2 vectors of each element type, with the operations the kernels need.
// max/min keep the scalar meaning `a > b ? a : b` / `a < b ? a : b`, so the
// vector body and the scalar tail agree bit for bit.
struct F32 {
  using T = float;
  using V = __m128;
  static constexpr size_t kLanes = 4;
  static V Load(const T* p) { return _mm_loadu_ps(p); }
  static void Store(T* p, V v) { _mm_storeu_ps(p, v); }
  static void Stream(T* p, V v) { _mm_stream_ps(p, v); }
  static V Add(V a, V b) { return _mm_add_ps(a, b); }
  static V Max(V a, V b) { return _mm_max_ps(a, b); }
  static V Min(V a, V b) { return _mm_min_ps(a, b); }
  static V Div(V a, T d) { return _mm_div_ps(a, _mm_set1_ps(d)); }
};

struct F64 {
  using T = double;
  using V = __m128d;
  static constexpr size_t kLanes = 2;
  static V Load(const T* p) { return _mm_loadu_pd(p); }
  static void Store(T* p, V v) { _mm_storeu_pd(p, v); }
  static void Stream(T* p, V v) { _mm_stream_pd(p, v); }
  static V Add(V a, V b) { return _mm_add_pd(a, b); }
  static V Max(V a, V b) { return _mm_max_pd(a, b); }
  static V Min(V a, V b) { return _mm_min_pd(a, b); }
  static V Div(V a, T d) { return _mm_div_pd(a, _mm_set1_pd(d)); }
};

struct I32 {
  using T = int32_t;
  using V = __m128i;
  static constexpr size_t kLanes = 4;
  static V Load(const T* p) {
    return _mm_loadu_si128(reinterpret_cast<const V*>(p));
  }
  static void Store(T* p, V v) { _mm_storeu_si128(reinterpret_cast<V*>(p), v); }
  static void Stream(T* p, V v) {
    _mm_stream_si128(reinterpret_cast<V*>(p), v);
  }
  static V Add(V a, V b) { return _mm_add_epi32(a, b); }
  static V Select(V mask, V a, V b) {
    return _mm_or_si128(_mm_and_si128(mask, a), _mm_andnot_si128(mask, b));
  }
  static V Max(V a, V b) { return Select(_mm_cmpgt_epi32(a, b), a, b); }
  static V Min(V a, V b) { return Select(_mm_cmplt_epi32(a, b), a, b); }
};

template <typename S>
struct SumOp {
  static typename S::V Vec(typename S::V a, typename S::V b) {
    return S::Add(a, b);
  }
  static typename S::T One(typename S::T a, typename S::T b) {
    if constexpr (std::is_integral_v<typename S::T>) {
      // Wraps like the vector add instead of overflowing (undefined).
      return static_cast<typename S::T>(static_cast<uint32_t>(a) +
                                        static_cast<uint32_t>(b));
    } else {
      return a + b;
    }
  }
};
template <typename S>
struct MaxOp {
  static typename S::V Vec(typename S::V a, typename S::V b) {
    return S::Max(a, b);
  }
  static typename S::T One(typename S::T a, typename S::T b) {
    return a > b ? a : b;
  }
};
template <typename S>
struct MinOp {
  static typename S::V Vec(typename S::V a, typename S::V b) {
    return S::Min(a, b);
  }
  static typename S::T One(typename S::T a, typename S::T b) {
    return a < b ? a : b;
  }
};

// Elements to handle one by one before dst is 16-byte aligned, as the
// streaming stores require.
template <typename T>
size_t HeadToAlign(const T* dst, size_t count) {
  const uintptr_t misalign = reinterpret_cast<uintptr_t>(dst) & 15;
  if (misalign == 0) return 0;
  if (misalign % sizeof(T) != 0) return count;  // Never aligns: scalar only.
  return std::min(count, (16 - misalign) / sizeof(T));
}

template <typename S, typename Op, bool kStream>
void CombineLoop(typename S::T* dst, const typename S::T* a,
                 const typename S::T* b, size_t count) {
  size_t i = 0;
  if (kStream) {
    for (const size_t head = HeadToAlign(dst, count); i < head; ++i) {
      dst[i] = Op::One(a[i], b[i]);
    }
  }
  for (; i + 2 * S::kLanes <= count; i += 2 * S::kLanes) {
    const auto v0 = Op::Vec(S::Load(a + i), S::Load(b + i));
    const auto v1 =
        Op::Vec(S::Load(a + i + S::kLanes), S::Load(b + i + S::kLanes));
    if (kStream) {
      S::Stream(dst + i, v0);
      S::Stream(dst + i + S::kLanes, v1);
    } else {
      S::Store(dst + i, v0);
      S::Store(dst + i + S::kLanes, v1);
    }
  }
  for (; i < count; ++i) dst[i] = Op::One(a[i], b[i]);
}

// Sum then divide, fused: only float types (integer averages divide after).
template <typename S, bool kStream>
void SumDivideLoop(typename S::T* dst, const typename S::T* a,
                   const typename S::T* b, size_t count, typename S::T d) {
  size_t i = 0;
  if (kStream) {
    for (const size_t head = HeadToAlign(dst, count); i < head; ++i) {
      dst[i] = (a[i] + b[i]) / d;
    }
  }
  for (; i + S::kLanes <= count; i += S::kLanes) {
    const auto v = S::Div(S::Add(S::Load(a + i), S::Load(b + i)), d);
    if (kStream) {
      S::Stream(dst + i, v);
    } else {
      S::Store(dst + i, v);
    }
  }
  for (; i < count; ++i) dst[i] = (a[i] + b[i]) / d;
}

template <typename S, bool kStream>
void CombineTyped(void* dst, const void* a, const void* b, size_t count,
                  ReduceOp op, int avg_divisor) {
  using T = typename S::T;
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      if constexpr (!std::is_integral_v<T>) {
        if (op == ReduceOp::kAvg && avg_divisor > 0) {
          SumDivideLoop<S, kStream>(d, x, y, count,
                                    static_cast<T>(avg_divisor));
          return;
        }
      }
      CombineLoop<S, SumOp<S>, kStream>(d, x, y, count);
      if constexpr (std::is_integral_v<T>) {
        if (op == ReduceOp::kAvg && avg_divisor > 0) {
          DivideInPlace(dst, count, DataType::kInt32, avg_divisor);
        }
      }
      return;
    case ReduceOp::kMax:
      CombineLoop<S, MaxOp<S>, kStream>(d, x, y, count);
      return;
    case ReduceOp::kMin:
      CombineLoop<S, MinOp<S>, kStream>(d, x, y, count);
      return;
  }
}

template <bool kStream>
void Combine(void* dst, const void* a, const void* b, size_t count,
             DataType type, ReduceOp op, int avg_divisor) {
  switch (type) {
    case DataType::kFloat32:
      return CombineTyped<F32, kStream>(dst, a, b, count, op, avg_divisor);
    case DataType::kFloat64:
      return CombineTyped<F64, kStream>(dst, a, b, count, op, avg_divisor);
    case DataType::kInt32:
      return CombineTyped<I32, kStream>(dst, a, b, count, op, avg_divisor);
    case DataType::kBFloat16:
      return CombineBf16(dst, a, b, count, op, avg_divisor, kStream);
  }
}

}  // namespace

void CombineInto(void* dst, const void* a, const void* b, size_t count,
                 DataType type, ReduceOp op, int avg_divisor, bool streaming) {
  if (streaming) {
    Combine<true>(dst, a, b, count, type, op, avg_divisor);
    _mm_sfence();
  } else {
    Combine<false>(dst, a, b, count, type, op, avg_divisor);
  }
}

void CopyInto(void* dst, const void* src, size_t bytes, bool streaming) {
  // Empty buffers may be null, which memcpy must not be given.
  if (bytes == 0) return;
  if (!streaming) {
    std::memcpy(dst, src, bytes);
    return;
  }
  auto* d = static_cast<uint8_t*>(dst);
  const auto* s = static_cast<const uint8_t*>(src);
  size_t i = 0;
  const size_t head =
      std::min(bytes, (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15);
  std::memcpy(d, s, head);
  i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i v1 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i v2 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i v3 =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), v0);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), v1);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), v2);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), v3);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
}

void DivideInPlace(void* data, size_t count, DataType type, int divisor) {
  switch (type) {
    case DataType::kFloat32: {
      auto* p = static_cast<float*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= static_cast<float>(divisor);
      return;
    }
    case DataType::kFloat64: {
      auto* p = static_cast<double*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= static_cast<double>(divisor);
      return;
    }
    case DataType::kInt32: {
      auto* p = static_cast<int32_t*>(data);
      for (size_t i = 0; i < count; ++i) p[i] /= divisor;
      return;
    }
    case DataType::kBFloat16:
      return DivideBf16(data, count, divisor);
  }
}

}  // namespace ringlet::collectives::host
