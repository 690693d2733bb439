// Hand-written convolution/pooling tests: float32 (oneDNN) against float64 (tandem's own
// loops) over many geometries, layouts the oracle JSON cannot make (channels-last),
// bfloat16 transposed convolution (PyTorch 1.13's own is broken), indices consistency,
// and the functional API.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>
#include <vector>

#include "support/tensor_json.h"
#include "tandem/kernels/cpu/onednn.h"
#include "tandem/tandem.h"

using namespace tandem;

namespace {

Tensor make(std::vector<int64_t> sizes, DType dt, uint32_t seed) {
  Tensor t = empty(sizes, kFloat64);
  double* p = t.data_ptr<double>();
  uint32_t s = seed * 2654435761u + 7u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<double>((s >> 8) % 64) / 16.0 - 2.0;
  }
  return t.to(dt);
}

void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  auto g = oracle::to_doubles(got), w = oracle::to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      ASSERT_TRUE(std::isnan(g[i])) << "element " << i;
      continue;
    }
    ASSERT_NEAR(g[i], w[i], atol + rtol * std::fabs(w[i])) << "element " << i;
  }
}

struct ConvCase {
  int64_t n, c, h, w, oc, kh, kw, stride, pad, dil, groups;
};

}  // namespace

TEST(Conv, Float32MatchesFloat64AcrossGeometries) {
  const std::vector<ConvCase> cases = {
      {2, 3, 9, 11, 4, 3, 3, 1, 1, 1, 1},  {1, 4, 10, 10, 6, 3, 3, 2, 0, 1, 2}, {2, 6, 12, 9, 6, 3, 2, 1, 2, 2, 3},
      {3, 8, 7, 7, 16, 1, 1, 1, 0, 1, 1},  {1, 5, 15, 15, 5, 5, 5, 3, 2, 1, 5}, {2, 16, 14, 14, 32, 3, 3, 1, 1, 1, 1},
      {1, 2, 20, 6, 3, 4, 1, 2, 1, 3, 1},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(::testing::Message() << "c=" << k.c << " oc=" << k.oc << " k=" << k.kh << "x" << k.kw << " s=" << k.stride
                                      << " p=" << k.pad << " d=" << k.dil << " g=" << k.groups);
    Tensor x = make({k.n, k.c, k.h, k.w}, kFloat64, 1), w = make({k.oc, k.c / k.groups, k.kh, k.kw}, kFloat64, 2);
    Tensor b = make({k.oc}, kFloat64, 3);
    Tensor want = conv2d(x, w, b, {k.stride}, {k.pad}, {k.dil}, k.groups);
    Tensor got = conv2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), {k.stride}, {k.pad}, {k.dil}, k.groups);
    expect_close(got, want, 1e-5, 1e-4);
    // Transposed convolution with the same geometry (weight [C, OC/g, kh, kw]).
    Tensor wt = make({k.c, k.oc / k.groups, k.kh, k.kw}, kFloat64, 4);
    const int64_t op = k.stride > 1 ? k.stride - 1 : 0;
    Tensor twant = conv_transpose2d(x, wt, b, {k.stride}, {k.pad}, {op}, k.groups, {k.dil});
    Tensor tgot = conv_transpose2d(x.to(kFloat32), wt.to(kFloat32), b.to(kFloat32), {k.stride}, {k.pad}, {op}, k.groups,
                                   {k.dil});
    expect_close(tgot, twant, 1e-5, 1e-4);
  }
}

TEST(Conv, ChannelsLastInputNeedsNoCopyAndMatches) {
  Tensor x = make({2, 8, 6, 7}, kFloat32, 5), w = make({4, 8, 3, 3}, kFloat32, 6);
  Tensor nhwc = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // same values, NHWC memory
  ASSERT_FALSE(nhwc.is_contiguous());
  expect_close(conv2d(nhwc, w, Tensor(), {1}, {1}), conv2d(x, w, Tensor(), {1}, {1}), 1e-6, 1e-5);
  // Transposed weights (a permuted view) as well.
  Tensor wt = w.permute({1, 0, 2, 3}).contiguous().permute({1, 0, 2, 3});
  expect_close(conv2d(x, wt), conv2d(x, w), 1e-6, 1e-5);
}

// A float32 batch runs in slices spread over the threads (onednn::conv2d_f32); these
// batches do not divide into equal slices, so a wrong slice offset, a missed last slice
// or a slice written over another shows up against float64 and against one image at a
// time. Includes a first layer (1 input channel), nChw16c-sized channel counts, groups
// and a channels-last input, on 2 threads and on 1.
TEST(Conv, BatchSlicesMatchFloat64AndSingleImages) {
  const std::vector<ConvCase> cases = {
      {9, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1}, {7, 16, 12, 12, 32, 3, 3, 1, 1, 1, 1}, {5, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1},
      {6, 8, 10, 10, 8, 3, 3, 2, 1, 1, 2},
  };
  const int threads = get_num_threads();
  for (int t : {2, 1}) {
    set_num_threads(t);
    for (const auto& k : cases) {
      SCOPED_TRACE(::testing::Message() << "threads=" << t << " n=" << k.n << " c=" << k.c << " oc=" << k.oc);
      Tensor x = make({k.n, k.c, k.h, k.w}, kFloat64, 7), w = make({k.oc, k.c / k.groups, k.kh, k.kw}, kFloat64, 8);
      Tensor b = make({k.oc}, kFloat64, 9);
      Tensor want = conv2d(x, w, b, {k.stride}, {k.pad}, {k.dil}, k.groups);
      Tensor xf = x.to(kFloat32), wf = w.to(kFloat32), bf = b.to(kFloat32);
      Tensor got = conv2d(xf, wf, bf, {k.stride}, {k.pad}, {k.dil}, k.groups);
      expect_close(got, want, 1e-5, 1e-4);
      Tensor nhwc = xf.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
      expect_close(conv2d(nhwc, wf, bf, {k.stride}, {k.pad}, {k.dil}, k.groups), got, 1e-6, 1e-5);
      for (int64_t i = 0; i < k.n; ++i)
        expect_close(conv2d(xf.narrow(0, i, 1), wf, bf, {k.stride}, {k.pad}, {k.dil}, k.groups), got.narrow(0, i, 1),
                     1e-6, 1e-5);
    }
  }
  set_num_threads(threads);
}

// More batch sizes (0, and odd counts that leave a short last slice), 1, 2 and 3 threads,
// 1x1 and depthwise kernels with stride 2, and inputs whose batch dimension is not the
// outermost, is strided, or is broadcast (stride 0): each sliced float32 convolution
// against the float64 loop.
TEST(Conv, BatchSlicesOfOddLayoutsMatchFloat64) {
  const std::vector<ConvCase> cases = {
      {0, 16, 9, 9, 32, 1, 1, 2, 0, 1, 1},   {3, 32, 11, 11, 32, 1, 1, 1, 0, 1, 1},
      {17, 32, 13, 13, 32, 3, 3, 2, 1, 1, 32}, {33, 3, 17, 17, 6, 5, 5, 2, 2, 1, 3},
      {33, 1, 28, 28, 16, 3, 3, 1, 1, 1, 1},
  };
  const int threads = get_num_threads();
  for (int t : {1, 2, 3}) {
    set_num_threads(t);
    for (const auto& k : cases) {
      SCOPED_TRACE(::testing::Message() << "threads=" << t << " n=" << k.n << " c=" << k.c << " oc=" << k.oc
                                        << " k=" << k.kh << " groups=" << k.groups);
      Tensor x = make({k.n, k.c, k.h, k.w}, kFloat64, 11), w = make({k.oc, k.c / k.groups, k.kh, k.kw}, kFloat64, 12);
      Tensor b = make({k.oc}, kFloat64, 13);
      Tensor want = conv2d(x, w, b, {k.stride}, {k.pad}, {k.dil}, k.groups);
      Tensor xf = x.to(kFloat32), wf = w.to(kFloat32), bf = b.to(kFloat32);
      auto conv = [&](const Tensor& in) { return conv2d(in, wf, bf, {k.stride}, {k.pad}, {k.dil}, k.groups); };
      expect_close(conv(xf), want, 1e-5, 1e-4);
      // Batch dimension inside (memory C, N, H, W).
      Tensor cnhw = xf.permute({1, 0, 2, 3}).contiguous().permute({1, 0, 2, 3});
      expect_close(conv(cnhw), want, 1e-5, 1e-4);
      // Every other image of a batch twice as long.
      Tensor doubled = cat({xf.unsqueeze(1), xf.unsqueeze(1)}, 1).flatten(0, 1);
      expect_close(conv(doubled.slice(0, 0, std::nullopt, 2)), want, 1e-5, 1e-4);
      // One image broadcast over the batch.
      if (k.n > 0) {
        Tensor one = x.narrow(0, 0, 1).expand({k.n, k.c, k.h, k.w});
        expect_close(conv(xf.narrow(0, 0, 1).expand({k.n, k.c, k.h, k.w})),
                     conv2d(one.contiguous(), w, b, {k.stride}, {k.pad}, {k.dil}, k.groups), 1e-5, 1e-4);
      }
    }
  }
  set_num_threads(threads);
}

TEST(Conv, Bfloat16TransposedConvolutionRoundsFloat32) {
  Tensor x = make({1, 4, 5, 5}, kBFloat16, 7), w = make({4, 3, 3, 3}, kBFloat16, 8), b = make({3}, kBFloat16, 9);
  Tensor got = conv_transpose2d(x, w, b, {2}, {1}, {1});
  Tensor want = conv_transpose2d(x.to(kFloat32), w.to(kFloat32), b.to(kFloat32), {2}, {1}, {1});
  EXPECT_EQ(got.dtype(), kBFloat16);
  expect_close(got, want, 8e-3, 8e-3);
}

TEST(Conv, SamePaddingKeepsSizeAndValidShrinks) {
  Tensor x = make({1, 2, 7, 8}, kFloat32, 1), w = make({3, 2, 4, 3}, kFloat32, 2);
  EXPECT_EQ(conv2d(x, w, Tensor(), {1}, kSame).sizes().vec(), (DimVector{1, 3, 7, 8}));
  EXPECT_EQ(conv2d(x, w, Tensor(), {1}, kValid).sizes().vec(), (DimVector{1, 3, 4, 6}));
  EXPECT_THROW(conv2d(x, w, Tensor(), {2}, kSame), ValueError);
  Tensor x1 = make({2, 2, 9}, kFloat32, 3), w1 = make({3, 2, 4}, kFloat32, 4);
  EXPECT_EQ(conv1d(x1, w1, Tensor(), {1}, kSame).sizes().vec(), (DimVector{2, 3, 9}));
  EXPECT_EQ(conv1d(x1, w1, Tensor(), {2}, {1}).sizes().vec(), (DimVector{2, 3, 4}));
}

TEST(Conv, ConvolutionPrimitivesAreCached) {
  namespace dn = kernels::onednn;
  dn::clear_cache();
  Tensor x = make({2, 3, 8, 8}, kFloat32, 1), w = make({4, 3, 3, 3}, kFloat32, 2);
  conv2d(x, w);
  conv2d(x, w);
  conv2d(x + make({2, 3, 8, 8}, kFloat32, 3), w);  // new data, same geometry: a hit
  auto s = dn::cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.hits, 2);
}

TEST(Pool, MaxPoolIndicesPointAtTheMaxima) {
  Tensor x = make({2, 3, 9, 10}, kFloat32, 4);
  for (bool ceil : {false, true}) {
    auto [out, idx] = max_pool2d_with_indices(x, {3}, {2}, {1}, {1}, ceil);
    EXPECT_EQ(idx.dtype(), kInt64);
    expect_close(out, max_pool2d(x, {3}, {2}, {1}, {1}, ceil), 0, 0);
    auto xv = oracle::to_doubles(x), ov = oracle::to_doubles(out), iv = oracle::to_doubles(idx);
    const int64_t plane = 9 * 10, oplane = out.size(2) * out.size(3);
    for (size_t i = 0; i < ov.size(); ++i) {
      const int64_t p = static_cast<int64_t>(i) / oplane, at = static_cast<int64_t>(iv[i]);
      ASSERT_TRUE(at >= 0 && at < plane);
      ASSERT_EQ(xv[static_cast<size_t>(p * plane + at)], ov[i]);
    }
  }
}

TEST(Pool, Float32AvgPoolMatchesFloat64Loop) {
  // float32 may take oneDNN; float64 always runs tandem's loop.
  Tensor x = make({2, 3, 11, 12}, kFloat64, 5);
  for (bool ceil : {false, true})
    for (bool include : {false, true})
      for (int64_t k : {2, 3})
        for (int64_t s : {1, 2, 3})
          for (int64_t p : {int64_t{0}, k / 2}) {
            SCOPED_TRACE(::testing::Message() << "k=" << k << " s=" << s << " p=" << p << " ceil=" << ceil
                                              << " include=" << include);
            Tensor want = avg_pool2d(x, {k}, {s}, {p}, ceil, include);
            expect_close(avg_pool2d(x.to(kFloat32), {k}, {s}, {p}, ceil, include), want, 1e-6, 1e-6);
            expect_close(max_pool2d(x.to(kFloat32), {k}, {s}, {p}, {1}, ceil), max_pool2d(x, {k}, {s}, {p}, {1}, ceil), 0,
                         0);
          }
}

TEST(Pool, AdaptiveMaxReturnsTupleAndGlobalAverage) {
  Tensor x = make({2, 3, 5, 7}, kFloat64, 6);
  auto [out, idx] = adaptive_max_pool2d(x, {2, 3});
  EXPECT_EQ(out.sizes().vec(), (DimVector{2, 3, 2, 3}));
  EXPECT_EQ(idx.dtype(), kInt64);
  Tensor g = adaptive_avg_pool2d(x, {1});
  auto xv = oracle::to_doubles(x);
  double s = 0;
  for (int i = 0; i < 35; ++i) s += xv[static_cast<size_t>(i)];
  EXPECT_NEAR(g.select(0, 0).select(0, 0).select(0, 0).select(0, 0).item<double>(), s / 35, 1e-12);
}
