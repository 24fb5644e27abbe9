#include "collectives/transport/host/bf16_kernels.h"

// GCC 12 warns inside its own AVX-512 intrinsics (_mm512_set1_*, their
// undefined-vector idiom) once they are inlined here; the code they
// produce is defined. Only this file is concerned.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>

namespace ringlet::collectives::host {
namespace {

float Widen(uint16_t bits) {
  return static_cast<float>(Eigen::numext::bit_cast<Eigen::bfloat16>(bits));
}

uint16_t Narrow(float value) {
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(value));
}

enum class Op { kSum, kSumDivide, kMax, kMin };

// max/min keep the scalar meaning `a > b ? a : b`, as maxps/minps do.
template <Op kOp>
float One(float a, float b, float divisor) {
  if constexpr (kOp == Op::kSum) return a + b;
  if constexpr (kOp == Op::kSumDivide) return (a + b) / divisor;
  if constexpr (kOp == Op::kMax) return a > b ? a : b;
  return a < b ? a : b;
}

// SSE2: eight values per step, as two float32 vectors.
template <Op kOp>
__m128 Sse(__m128 a, __m128 b, __m128 divisor) {
  if constexpr (kOp == Op::kSum) return _mm_add_ps(a, b);
  if constexpr (kOp == Op::kSumDivide) {
    return _mm_div_ps(_mm_add_ps(a, b), divisor);
  }
  if constexpr (kOp == Op::kMax) return _mm_max_ps(a, b);
  return _mm_min_ps(a, b);
}

// The bfloat16 bits of four floats, sign-extended to 32 bits so that
// _mm_packs_epi32 keeps them exactly.
__m128i RoundSse(__m128 f) {
  const __m128i x = _mm_castps_si128(f);
  const __m128i high = _mm_srli_epi32(x, 16);
  const __m128i odd = _mm_and_si128(high, _mm_set1_epi32(1));
  const __m128i rounded = _mm_srli_epi32(
      _mm_add_epi32(x, _mm_add_epi32(odd, _mm_set1_epi32(0x7FFF))), 16);
  const __m128i quiet_nan = _mm_or_si128(
      _mm_and_si128(high, _mm_set1_epi32(0x8000)), _mm_set1_epi32(0x7FC0));
  const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(f, f));
  const __m128i bits = _mm_or_si128(_mm_and_si128(nan, quiet_nan),
                                    _mm_andnot_si128(nan, rounded));
  return _mm_srai_epi32(_mm_slli_epi32(bits, 16), 16);
}

template <bool kStream, Op kOp>
size_t BodySse2(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t i,
                size_t count, float divisor) {
  const __m128 d = _mm_set1_ps(divisor);
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= count; i += 8) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    const __m128 lo =
        Sse<kOp>(_mm_castsi128_ps(_mm_unpacklo_epi16(zero, x)),
                 _mm_castsi128_ps(_mm_unpacklo_epi16(zero, y)), d);
    const __m128 hi =
        Sse<kOp>(_mm_castsi128_ps(_mm_unpackhi_epi16(zero, x)),
                 _mm_castsi128_ps(_mm_unpackhi_epi16(zero, y)), d);
    const __m128i out = _mm_packs_epi32(RoundSse(lo), RoundSse(hi));
    auto* to = reinterpret_cast<__m128i*>(dst + i);
    if (kStream) {
      _mm_stream_si128(to, out);
    } else {
      _mm_storeu_si128(to, out);
    }
  }
  return i;
}

// AVX2: sixteen values per step, as two float32 vectors of eight.
template <Op kOp>
__attribute__((target("avx2"))) __m256 Avx(__m256 a, __m256 b, __m256 divisor) {
  if constexpr (kOp == Op::kSum) return _mm256_add_ps(a, b);
  if constexpr (kOp == Op::kSumDivide) {
    return _mm256_div_ps(_mm256_add_ps(a, b), divisor);
  }
  if constexpr (kOp == Op::kMax) return _mm256_max_ps(a, b);
  return _mm256_min_ps(a, b);
}

__attribute__((target("avx2"))) __m256 LoadAvx(const uint16_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}

// The bfloat16 bits of eight floats in 32-bit lanes (below 2^16, so
// _mm256_packus_epi32 keeps them exactly).
__attribute__((target("avx2"))) __m256i RoundAvx(__m256 f) {
  const __m256i x = _mm256_castps_si256(f);
  const __m256i high = _mm256_srli_epi32(x, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))),
      16);
  const __m256i quiet_nan =
      _mm256_or_si256(_mm256_and_si256(high, _mm256_set1_epi32(0x8000)),
                      _mm256_set1_epi32(0x7FC0));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(f, f, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quiet_nan, nan);
}

template <bool kStream, Op kOp>
__attribute__((target("avx2"))) size_t BodyAvx2(uint16_t* dst,
                                                const uint16_t* a,
                                                const uint16_t* b, size_t i,
                                                size_t count, float divisor) {
  const __m256 d = _mm256_set1_ps(divisor);
  for (; i + 16 <= count; i += 16) {
    const __m256 lo = Avx<kOp>(LoadAvx(a + i), LoadAvx(b + i), d);
    const __m256 hi = Avx<kOp>(LoadAvx(a + i + 8), LoadAvx(b + i + 8), d);
    // packus interleaves the 128-bit halves; the permute restores order.
    const __m256i out = _mm256_permute4x64_epi64(
        _mm256_packus_epi32(RoundAvx(lo), RoundAvx(hi)), 0xD8);
    if (kStream) {  // dst + i is 32-byte aligned here (Loop's head).
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), out);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), out);
    }
  }
  return i;
}

// AVX-512: sixteen values per step in one vector; the rounded bits go
// back to 16 bits with vpmovdw (values below 2^16: exact).
template <Op kOp>
__attribute__((target("avx512f"))) __m512 Avx512(__m512 a, __m512 b,
                                                 __m512 divisor) {
  if constexpr (kOp == Op::kSum) return _mm512_add_ps(a, b);
  if constexpr (kOp == Op::kSumDivide) {
    return _mm512_div_ps(_mm512_add_ps(a, b), divisor);
  }
  if constexpr (kOp == Op::kMax) return _mm512_max_ps(a, b);
  return _mm512_min_ps(a, b);
}

__attribute__((target("avx512f"))) __m512 LoadAvx512(const uint16_t* p) {
  const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}

__attribute__((target("avx512f"))) __m256i RoundAvx512(__m512 f) {
  const __m512i x = _mm512_castps_si512(f);
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(x, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))),
      16);
  const __m512i quiet_nan =
      _mm512_or_si512(_mm512_and_si512(high, _mm512_set1_epi32(0x8000)),
                      _mm512_set1_epi32(0x7FC0));
  const __mmask16 nan = _mm512_cmp_ps_mask(f, f, _CMP_UNORD_Q);
  return _mm512_cvtepi32_epi16(
      _mm512_mask_blend_epi32(nan, rounded, quiet_nan));
}

template <bool kStream, Op kOp>
__attribute__((target("avx512f"))) size_t BodyAvx512(uint16_t* dst,
                                                     const uint16_t* a,
                                                     const uint16_t* b,
                                                     size_t i, size_t count,
                                                     float divisor) {
  const __m512 d = _mm512_set1_ps(divisor);
  for (; i + 16 <= count; i += 16) {
    const __m256i out =
        RoundAvx512(Avx512<kOp>(LoadAvx512(a + i), LoadAvx512(b + i), d));
    if (kStream) {  // dst + i is 32-byte aligned here (Loop's head).
      _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), out);
    } else {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), out);
    }
  }
  return i;
}

bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

Bf16Isa WidestIsa() {
  return HasAvx512() ? Bf16Isa::kAvx512
         : HasAvx2() ? Bf16Isa::kAvx2
                     : Bf16Isa::kSse2;
}

template <bool kStream, Op kOp>
void Loop(Bf16Isa isa, uint16_t* dst, const uint16_t* a, const uint16_t* b,
          size_t count, float divisor) {
  size_t i = 0;
  if (kStream) {
    // Streaming stores need 16-byte alignment, the AVX bodies' 32 (two
    // 16-byte stores per 32 bytes ran in-place sums at half float32's
    // speed); a dst that never gets it (odd address) goes one by one.
    const size_t align = isa == Bf16Isa::kSse2 ? 16 : 32;
    const uintptr_t misalign = reinterpret_cast<uintptr_t>(dst) & (align - 1);
    const size_t head = misalign == 0 ? 0
                        : misalign % 2 != 0
                            ? count
                            : std::min(count, (align - misalign) / 2);
    for (; i < head; ++i)
      dst[i] = Narrow(One<kOp>(Widen(a[i]), Widen(b[i]), divisor));
  }
  if (isa == Bf16Isa::kAvx512) {
    i = BodyAvx512<kStream, kOp>(dst, a, b, i, count, divisor);
  } else if (isa == Bf16Isa::kAvx2) {
    i = BodyAvx2<kStream, kOp>(dst, a, b, i, count, divisor);
  }
  i = BodySse2<kStream, kOp>(dst, a, b, i, count, divisor);
  for (; i < count; ++i) {
    dst[i] = Narrow(One<kOp>(Widen(a[i]), Widen(b[i]), divisor));
  }
  if (kStream) _mm_sfence();
}

template <bool kStream>
void Combine(Bf16Isa isa, uint16_t* dst, const uint16_t* a, const uint16_t* b,
             size_t count, ReduceOp op, int avg_divisor) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      if (op == ReduceOp::kAvg && avg_divisor > 0) {
        return Loop<kStream, Op::kSumDivide>(isa, dst, a, b, count,
                                             static_cast<float>(avg_divisor));
      }
      return Loop<kStream, Op::kSum>(isa, dst, a, b, count, 1.0f);
    case ReduceOp::kMax:
      return Loop<kStream, Op::kMax>(isa, dst, a, b, count, 1.0f);
    case ReduceOp::kMin:
      return Loop<kStream, Op::kMin>(isa, dst, a, b, count, 1.0f);
  }
}

}  // namespace

bool CpuHasBf16Isa(Bf16Isa isa) {
  return isa == Bf16Isa::kSse2 || (isa == Bf16Isa::kAvx2 && HasAvx2()) ||
         (isa == Bf16Isa::kAvx512 && HasAvx512());
}

void CombineBf16Using(Bf16Isa isa, void* dst, const void* a, const void* b,
                      size_t count, ReduceOp op, int avg_divisor,
                      bool streaming) {
  if (!CpuHasBf16Isa(isa)) isa = WidestIsa();
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  if (streaming) {
    Combine<true>(isa, d, x, y, count, op, avg_divisor);
  } else {
    Combine<false>(isa, d, x, y, count, op, avg_divisor);
  }
}

void CombineBf16(void* dst, const void* a, const void* b, size_t count,
                 ReduceOp op, int avg_divisor, bool streaming) {
  CombineBf16Using(WidestIsa(), dst, a, b, count, op, avg_divisor, streaming);
}

void DivideBf16(void* data, size_t count, int divisor) {
  auto* p = static_cast<uint16_t*>(data);
  const float d = static_cast<float>(divisor);
  for (size_t i = 0; i < count; ++i) p[i] = Narrow(Widen(p[i]) / d);
}

const char* Bf16KernelIsa() {
  switch (WidestIsa()) {
    case Bf16Isa::kAvx512:
      return "avx512f";
    case Bf16Isa::kAvx2:
      return "avx2";
    case Bf16Isa::kSse2:
      break;
  }
  return "sse2";
}

}  // namespace ringlet::collectives::host
