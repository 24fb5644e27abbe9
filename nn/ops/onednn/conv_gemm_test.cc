// The group-GEMM convolution (conv_gemm.h) against a direct loop over the
// definition, on small shapes with strides, padding and several images.
#include "nn/ops/onednn/conv_gemm.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace ringlet::nn::onednn {
namespace {

ConvGeometry Geometry(int64_t n, int64_t c, int64_t h, int64_t k, int64_t r,
                      int64_t stride, int64_t pad) {
  const int64_t p = (h + 2 * pad - r) / stride + 1;
  return {n, c, h, h, k, r, r, p, p, stride, pad};
}

std::vector<float> Random(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(count);
  for (float& f : v) f = uniform(rng);
  return v;
}

// Calls fn(i, k, p, q, c, r, s, x index, w index) for every product of the
// convolution whose input pixel lies inside the image.
template <typename Fn>
void ForEachProduct(const ConvGeometry& g, Fn fn) {
  for (int64_t i = 0; i < g.n; ++i)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t p = 0; p < g.p; ++p)
        for (int64_t q = 0; q < g.q; ++q)
          for (int64_t c = 0; c < g.c; ++c)
            for (int64_t r = 0; r < g.r; ++r)
              for (int64_t s = 0; s < g.s; ++s) {
                const int64_t h = p * g.stride - g.pad + r,
                              w = q * g.stride - g.pad + s;
                if (h < 0 || h >= g.h || w < 0 || w >= g.w) continue;
                fn(((i * g.k + k) * g.p + p) * g.q + q,
                   ((i * g.c + c) * g.h + h) * g.w + w,
                   ((k * g.c + c) * g.r + r) * g.s + s);
              }
}

void ExpectNear(const std::vector<float>& got, const std::vector<double>& want,
                const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 1e-4) << what << " at " << i;
  }
}

const ConvGeometry kShapes[] = {
    Geometry(3, 5, 6, 4, 3, 1, 1),  // 3x3, same size
    Geometry(2, 4, 7, 6, 3, 2, 1),  // strided, odd input
    Geometry(3, 6, 7, 5, 1, 2, 0),  // strided 1x1 (a shortcut)
    Geometry(1, 3, 5, 2, 5, 1, 0),  // kernel as large as the input
};

TEST(GroupGemm, ForwardMatchesTheDefinition) {
  for (const ConvGeometry& g : kShapes) {
    const auto x = Random(g.n * g.image_size(), 1),
               w = Random(g.k * g.crs(), 2), b = Random(g.k, 3);
    std::vector<double> want(g.n * g.k * g.pq());
    for (int64_t i = 0; i < g.n; ++i)
      for (int64_t k = 0; k < g.k; ++k)
        for (int64_t j = 0; j < g.pq(); ++j)
          want[(i * g.k + k) * g.pq() + j] = b[k];
    ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
      want[yi] += double{x[xi]} * w[wi];
    });
    std::vector<float> y(want.size(), 99.0f);
    GroupGemmBuffers buffers;
    GroupGemmForward(g, x.data(), w.data(), b.data(), y.data(), buffers);
    ExpectNear(y, want, "y");
  }
}

TEST(GroupGemm, InputGradientMatchesTheDefinitionAndOverwrites) {
  for (const ConvGeometry& g : kShapes) {
    const auto w = Random(g.k * g.crs(), 4), dy = Random(g.n * g.k * g.pq(), 5);
    std::vector<double> want(g.n * g.image_size(), 0.0);
    ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
      want[xi] += double{dy[yi]} * w[wi];
    });
    // Stale values in dx (reused memory) must not survive.
    std::vector<float> dx(want.size(), 99.0f);
    GroupGemmBuffers buffers;
    GroupGemmBackwardData(g, w.data(), dy.data(), dx.data(), buffers);
    ExpectNear(dx, want, "dx");
  }
}

TEST(GroupGemm, WeightGradientAddsTheDefinitionToWhatIsThere) {
  for (const ConvGeometry& g : kShapes) {
    const auto x = Random(g.n * g.image_size(), 6),
               dy = Random(g.n * g.k * g.pq(), 7);
    std::vector<double> want(g.k * g.crs(), 0.5);
    ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
      want[wi] += double{dy[yi]} * x[xi];
    });
    std::vector<float> dw(want.size(), 0.5f);
    GroupGemmBuffers buffers;
    GroupGemmAddWeightGradient(g, x.data(), dy.data(), dw.data(), buffers);
    ExpectNear(dw, want, "dw");
  }
}

}  // namespace
}  // namespace ringlet::nn::onednn
