// Hand-written linear-algebra tests: what the oracle JSON cannot express (blocking
// boundaries of the portable GEMM, the oneDNN primitive cache, threads, which ops a
// composite dispatches, exact messages, OpDef flags).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "support/tensor_json.h"
#include "tandem/kernels/cpu/onednn.h"
#include "tandem/kernels/cpu/openblas.h"
#include "tandem/tandem.h"

using namespace tandem;

namespace {

/// Deterministic values, multiples of 1/16 in [-2, 2): products and their sums stay exact
/// in float64 (and in float32 for short sums), so results can be compared exactly.
Tensor make(std::vector<int64_t> sizes, DType dt, uint32_t seed) {
  Tensor t = empty(sizes, kFloat64);
  double* p = t.data_ptr<double>();
  uint32_t s = seed * 2654435761u + 1u;
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 1664525u + 1013904223u;
    p[i] = static_cast<double>((s >> 8) % 64) / 16.0 - 2.0;
  }
  return t.to(dt);
}

/// Reference product in float64 of 2-D tensors (any dtype, any strides).
std::vector<double> ref_mm(const Tensor& a, const Tensor& b) {
  auto av = oracle::to_doubles(a), bv = oracle::to_doubles(b);
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  std::vector<double> c(static_cast<size_t>(M * N), 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const double x = av[i * K + k];
      for (int64_t j = 0; j < N; ++j) c[i * N + j] += x * bv[k * N + j];
    }
  return c;
}

void expect_close(const Tensor& got, const std::vector<double>& want, double rtol, double atol) {
  auto g = oracle::to_doubles(got);
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    ASSERT_NEAR(g[i], want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
}

struct NameRecorder : DispatchObserver {
  std::vector<std::string> names;
  void on_enter(const OpDef& op, ArrayRef<Tensor>, ArrayRef<AttrValue>, int) override { names.push_back(op.name); }
  bool saw(const std::string& n) const { return std::find(names.begin(), names.end(), n) != names.end(); }
};

}  // namespace

TEST(Linalg, Float64GemmCrossesEveryBlockBoundary) {
  // M > MC (96), N > NC (1024), K > KC (256): several row, column and depth blocks.
  Tensor a = make({150, 600}, kFloat64, 1), b = make({600, 1100}, kFloat64, 2);
  expect_close(mm(a, b), ref_mm(a, b), 0, 0);
  // Transposed and strided operands go through the packing with their strides.
  Tensor at = make({600, 150}, kFloat64, 3).t();
  Tensor bs = make({600, 2200}, kFloat64, 4).slice(1, 0, std::nullopt, 2);
  expect_close(mm(at, bs), ref_mm(at, bs), 0, 0);
}

// float64 products go to OpenBLAS (loaded with dlopen; ./run installs it) for every layout
// BLAS takes, including a column-major result, and fall back to the loop otherwise. The
// values are exact (see make()), so every path must give the reference bit for bit.
TEST(Linalg, Float64ProductsUseOpenblasForEveryBlasLayout) {
  ASSERT_TRUE(kernels::openblas::available()) << "libopenblas.so.0 could not be loaded";
  const int64_t M = 300, K = 70, N = 280;  // more than one 256 block of rows and of columns
  Tensor a = make({M, K}, kFloat64, 21), b = make({K, N}, kFloat64, 22);
  const auto want = ref_mm(a, b);
  auto mat = [](const Tensor& t) {
    return kernels::GemmMatrix{t.data_ptr(), 0, t.stride(0), t.stride(1)};
  };
  std::vector<Tensor> as = {a, a.t().contiguous().t(), make({M, 2 * K}, kFloat64, 21).slice(1, 0, K)};
  as.back().copy_(a);
  std::vector<Tensor> bs = {b, b.t().contiguous().t()};
  for (const Tensor& x : as)
    for (const Tensor& y : bs)
      for (bool col_major_out : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "a strides " << x.strides() << ", b strides " << y.strides()
                                          << (col_major_out ? ", column-major result" : ""));
        Tensor c = col_major_out ? empty({N, M}, kFloat64).t() : empty({M, N}, kFloat64);
        kernels::gemm("mm", kFloat64, 1, M, N, K, mat(x), mat(y), mat(c));
        expect_close(c, want, 0, 0);
      }
  // No unit stride anywhere: the loop, same values.
  Tensor odd = make({M, 2 * K}, kFloat64, 23).slice(1, 0, 2 * K, 2);
  odd.copy_(a);
  Tensor c = empty({M, N}, kFloat64);
  kernels::gemm("mm", kFloat64, 1, M, N, K, mat(odd), mat(b.t().contiguous().t()), mat(c));
  expect_close(c, want, 0, 0);
  // One row, one column, a broadcast batch.
  expect_close(mm(a.slice(0, 5, 6), b), ref_mm(a.slice(0, 5, 6), b), 0, 0);
  expect_close(mm(a, b.slice(1, 7, 8)), ref_mm(a, b.slice(1, 7, 8)), 0, 0);
  Tensor batched = matmul(make({3, M, K}, kFloat64, 24), b);
  Tensor a2 = make({3, M, K}, kFloat64, 24).select(0, 2);
  expect_close(batched.select(0, 2), ref_mm(a2, b), 0, 0);
}

// Large float32 products (depth >= 1024, both sides >= 512, >= 2^31 multiply-adds) go to
// oneDNN's GEMM rather than its matmul primitive: every layout, alpha and beta, a result
// with a wider row stride. Values are exact (multiples of 1/256 summed 4096 times stay
// within float32's 24 bits), so the float64 product is the reference bit for bit.
TEST(Linalg, LargeFloat32ProductsGiveExactValuesInEveryLayout) {
  const int64_t M = 512, K = 4096, N = 1024;
  Tensor a = make({M, K}, kFloat32, 31), b = make({K, N}, kFloat32, 32);
  const Tensor want = mm(a.to(kFloat64), b.to(kFloat64));
  auto mat = [](const Tensor& t) { return kernels::GemmMatrix{t.data_ptr(), 0, t.stride(0), t.stride(1)}; };
  for (const Tensor& x : {a, a.t().contiguous().t()})
    for (const Tensor& y : {b, b.t().contiguous().t()}) {
      SCOPED_TRACE(::testing::Message() << "a strides " << x.strides() << ", b strides " << y.strides());
      EXPECT_TRUE(equal(mm(x, y).to(kFloat64), want));
      // NaN in the result beforehand: beta == 0 must not read it; the padding is not written.
      Tensor wide = full({M, N + 16}, std::nan(""), kFloat32), c = wide.slice(1, 0, N);
      kernels::gemm("mm", kFloat32, 1, M, N, K, mat(x), mat(y), mat(c));
      EXPECT_TRUE(equal(c.to(kFloat64), want));
      EXPECT_TRUE(isnan(wide.slice(1, N)).all().item<bool>());
    }
  Tensor self = make({M, N}, kFloat32, 33);
  Tensor got = addmm(self, a, b, /*beta=*/0.5, /*alpha=*/2.0);
  EXPECT_TRUE(equal(got.to(kFloat64), self.to(kFloat64) * 0.5 + want * 2.0));
}

// A float64 product's values depend on its shape only, not on the thread count.
TEST(Linalg, Float64ProductsDoNotDependOnTheThreadCount) {
  manual_seed(9);
  Tensor a = randn({520, 300}, kFloat64), b = randn({300, 530}, kFloat64);
  const int before = get_num_threads();
  set_num_threads(1);
  Tensor one = mm(a, b);
  set_num_threads(2);
  Tensor two = mm(a, b);
  set_num_threads(before);
  EXPECT_TRUE(equal(one, two));
  expect_close(one, ref_mm(a, b), 1e-12, 1e-12);
}

TEST(Linalg, AddmmAppliesBetaOnceAcrossDepthBlocks) {
  Tensor self = make({70, 90}, kFloat64, 5), a = make({70, 700}, kFloat64, 6), b = make({700, 90}, kFloat64, 7);
  auto prod = ref_mm(a, b);
  auto sv = oracle::to_doubles(self);
  std::vector<double> want(prod.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = 2.0 * sv[i] + 0.5 * prod[i];
  expect_close(addmm(self, a, b, 2.0, 0.5), want, 0, 0);
}

TEST(Linalg, Float32LayoutsMatchReference) {
  // Large enough for oneDNN; row-major, column-major, padded leading dim, and a layout
  // oneDNN rejects (column stride 2) that falls back to the portable loop.
  Tensor base = make({64, 160}, kFloat32, 8);
  Tensor b = make({80, 48}, kFloat32, 9);
  std::vector<Tensor> lhs = {base.slice(1, 0, 80).contiguous(), make({80, 64}, kFloat32, 10).t(), base.slice(1, 0, 80),
                             base.slice(1, 0, 160, 2)};
  for (const Tensor& a : lhs) {
    SCOPED_TRACE(::testing::Message() << "strides " << a.strides());
    expect_close(mm(a, b), ref_mm(a, b), 1e-5, 1e-4);
    expect_close(mm(a, b.t().contiguous().t()), ref_mm(a, b), 1e-5, 1e-4);
  }
}

TEST(Linalg, IntegerProductsWrapLikePyTorch) {
  Tensor a = full({1, 2}, int64_t{1} << 20, kInt32), b = full({2, 1}, int64_t{1} << 12, kInt32);
  EXPECT_EQ(mm(a, b).item<int64_t>(), 0);  // 2 * 2^32 wraps to 0 in int32
  Tensor c = full({1, 3}, 100, kInt8), d = full({3, 1}, 3, kInt8);
  EXPECT_EQ(mm(c, d).item<int64_t>(), static_cast<int8_t>(900 & 0xff));
}

TEST(Linalg, OnednnPrimitiveCacheReusesPrimitives) {
  namespace dn = kernels::onednn;
  dn::clear_cache();
  // Above the size float32 gives OpenBLAS (96^3 multiply-adds): oneDNN's.
  Tensor a = make({128, 130}, kFloat32, 11), b = make({130, 120}, kFloat32, 12);
  mm(a, b);
  mm(a, b);
  auto s = dn::cache_stats();
  EXPECT_EQ(s.misses, 1);
  EXPECT_GE(s.hits, 1);
  EXPECT_EQ(s.entries, 1);
  mm(b.t(), a.t());  // another shape: a second entry
  EXPECT_EQ(dn::cache_stats().entries, 2);
  dn::set_cache_capacity(1);
  EXPECT_EQ(dn::cache_stats().entries, 1);
  expect_close(mm(a, b), ref_mm(a, b), 1e-5, 1e-4);  // still correct after eviction
  dn::set_cache_capacity(0);
  mm(a, b);
  EXPECT_EQ(dn::cache_stats().entries, 0);
  dn::set_cache_capacity(256);
}

TEST(Linalg, OnednnCacheKeysIncludeTheThreadCount) {
  // oneDNN plans a primitive for the OpenMP thread count it was created with.
  namespace dn = kernels::onednn;
  dn::clear_cache();
  const int n = get_num_threads();
  // Large enough to run multi-threaded (small products always use one thread) and to go
  // to oneDNN (smaller float32 products go to OpenBLAS).
  Tensor a = make({128, 130}, kFloat32, 11), b = make({130, 120}, kFloat32, 12);
  mm(a, b);
  set_num_threads(n == 1 ? 2 : 1);
  expect_close(mm(a, b), ref_mm(a, b), 1e-5, 1e-4);
  set_num_threads(n);
  EXPECT_EQ(dn::cache_stats().entries, 2);
}

TEST(Linalg, ConcurrentProductsFromManyThreads) {
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &bad] {
      for (int i = 0; i < 10; ++i) {
        const int64_t n = 20 + 7 * ((t + i) % 3);
        Tensor a = make({n, 33}, kFloat32, static_cast<uint32_t>(100 + t)), b = make({33, n}, kFloat32, 7);
        auto want = ref_mm(a, b);
        auto got = oracle::to_doubles(mm(a, b));
        for (size_t k = 0; k < want.size(); ++k)
          if (std::fabs(got[k] - want[k]) > 1e-3) ++bad[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int v : bad) EXPECT_EQ(v, 0);
}

TEST(Linalg, MatmulFoldsBatchIntoOneMm) {
  NameRecorder rec;
  Tensor r;
  {
    ObserverGuard g(&rec);
    r = matmul(make({4, 3, 5}, kFloat32, 1), make({5, 2}, kFloat32, 2));
  }
  EXPECT_EQ(r.sizes().vec(), (DimVector{4, 3, 2}));
  EXPECT_TRUE(rec.saw("mm"));
  EXPECT_FALSE(rec.saw("bmm"));
  EXPECT_FALSE(rec.saw("clone"));
}

TEST(Linalg, MatmulBroadcastsBatchWithoutCopying) {
  // [3, 5] @ [4, 5, 2]: the left operand is expanded with stride 0 (oneDNN broadcast).
  NameRecorder rec;
  Tensor a = make({3, 5}, kFloat64, 3), b = make({4, 5, 2}, kFloat64, 4);
  Tensor r;
  {
    ObserverGuard g(&rec);
    r = matmul(a, b);
  }
  EXPECT_TRUE(rec.saw("bmm"));
  EXPECT_FALSE(rec.saw("clone"));
  for (int64_t i = 0; i < 4; ++i) expect_close(r.select(0, i), ref_mm(a, b.select(0, i)), 0, 0);
}

TEST(Linalg, TransposedOperandsAreNotCopied) {
  NameRecorder rec;
  Tensor a = make({30, 40}, kFloat32, 5).t(), b = make({20, 30}, kFloat32, 6).t();
  {
    ObserverGuard g(&rec);
    mm(a, b);
  }
  EXPECT_EQ(rec.names, (std::vector<std::string>{"mm"}));
}

TEST(Linalg, ErrorMessagesNameOpAndShapes) {
  try {
    mm(make({2, 3}, kFloat32, 1), make({4, 5}, kFloat32, 2));
    FAIL() << "expected ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(), "[mm] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  }
  EXPECT_THROW(matmul(make({2, 3}, kFloat32, 1), make({3, 2}, kFloat64, 2)), TypeError);
  EXPECT_THROW(einsum("ij,jk->ik", {make({2, 3}, kFloat32, 1)}), ValueError);
}

TEST(Linalg, OpDefsDeclareWhatBackwardNeeds) {
  EXPECT_EQ(get_op("mm").save_inputs, 0b11u);
  EXPECT_EQ(get_op("bmm").save_inputs, 0b11u);
  EXPECT_EQ(get_op("dot").save_inputs, 0b11u);
  EXPECT_EQ(get_op("addmm").save_inputs, 0b110u);
  EXPECT_EQ(get_op("baddbmm").save_inputs, 0b110u);
  for (const char* c : {"matmul", "mv", "outer", "linear", "einsum"}) EXPECT_NE(get_op(c).composite, nullptr) << c;
  EXPECT_EQ(get_op("conv2d").save_inputs, 0b011u);
  EXPECT_EQ(get_op("conv_transpose2d").save_inputs, 0b011u);
  const OpDef& mpi = get_op("max_pool2d_with_indices");
  EXPECT_EQ(mpi.save_outputs, 0b10u);
  EXPECT_EQ(mpi.output_differentiable, (std::vector<bool>{true, false}));
  EXPECT_EQ(get_op("adaptive_max_pool2d").output_differentiable, (std::vector<bool>{true, false}));
}

TEST(Linalg, TensorMethodsMatchFunctions) {
  Tensor a = make({3, 4}, kFloat64, 1), b = make({4, 2}, kFloat64, 2), v = make({4}, kFloat64, 3);
  expect_close(a.matmul(b), oracle::to_doubles(matmul(a, b)), 0, 0);
  expect_close(a.mm(b), oracle::to_doubles(mm(a, b)), 0, 0);
  expect_close(a.mv(v), oracle::to_doubles(mv(a, v)), 0, 0);
  expect_close(v.dot(v), oracle::to_doubles(dot(v, v)), 0, 0);
  expect_close(v.outer(v), oracle::to_doubles(outer(v, v)), 0, 0);
  Tensor s = make({3, 2}, kFloat64, 4);
  expect_close(s.addmm(a, b, 0.5, 2), oracle::to_doubles(addmm(s, a, b, 0.5, 2)), 0, 0);
  Tensor ab = a.unsqueeze(0), bb = b.unsqueeze(0);
  expect_close(s.unsqueeze(0).baddbmm(ab, bb), oracle::to_doubles(baddbmm(s.unsqueeze(0), ab, bb)), 0, 0);
  expect_close(ab.bmm(bb), oracle::to_doubles(mm(a, b)), 0, 0);
}

TEST(Linalg, EinsumAttentionEqualsMatmul) {
  Tensor q = make({2, 3, 5, 8}, kFloat64, 1), k = make({2, 3, 6, 8}, kFloat64, 2);
  Tensor want = matmul(q, k.transpose(-1, -2));
  Tensor got = einsum("bhqd,bhkd->bhqk", {q, k});
  EXPECT_EQ(got.sizes().vec(), want.sizes().vec());
  expect_close(got, oracle::to_doubles(want), 0, 0);
}

TEST(Linalg, Bfloat16RoundsTheFloat32Result) {
  Tensor a = make({24, 40}, kBFloat16, 1), b = make({40, 24}, kBFloat16, 2);
  Tensor r = mm(a, b);
  EXPECT_EQ(r.dtype(), kBFloat16);
  expect_close(r, ref_mm(a, b), 8e-3, 8e-3);
}

TEST(Linalg, LinearFoldsBiasIntoAddmm) {
  NameRecorder rec;
  Tensor x = make({2, 5, 8}, kFloat32, 1), w = make({3, 8}, kFloat32, 2), b = make({3}, kFloat32, 3);
  Tensor y;
  {
    ObserverGuard g(&rec);
    y = linear(x, w, b);
  }
  EXPECT_TRUE(rec.saw("addmm"));
  EXPECT_FALSE(rec.saw("add"));
  Tensor want = matmul(x, w.t()) + b;
  expect_close(y, oracle::to_doubles(want), 1e-6, 1e-5);
}

// Tiny products skip packing; they must give the blocked loop's bits exactly. Layouts with
// no unit stride keep OpenBLAS out: the whole product (work > 16^3) takes the blocked
// loop, each of its rows alone (work <= 16^3) the small path. alpha and beta as addmm's.
TEST(Linalg, TinyProductsEqualTheBlockedLoopBitwise) {
  manual_seed(12);
  const int64_t M = 30, K = 16, N = 20;
  Tensor a = randn({M, 2 * K}, kFloat64).slice(1, 0, 2 * K, 2);
  Tensor b = randn({K, 2 * N}, kFloat64).slice(1, 0, 2 * N, 2);
  Tensor c0 = randn({M, N}, kFloat64);
  auto mat = [](const Tensor& t) { return kernels::GemmMatrix{t.data_ptr(), 0, t.stride(0), t.stride(1)}; };
  for (double beta : {0.0, 1.0, 2.5}) {
    Tensor whole = c0.clone();
    kernels::gemm("addmm", kFloat64, 1, M, N, K, mat(a), mat(b), mat(whole), Scalar(0.75), Scalar(beta));
    for (int64_t i = 0; i < M; ++i) {
      Tensor row = c0.slice(0, i, i + 1).clone();
      Tensor ai = a.slice(0, i, i + 1);
      kernels::gemm("addmm", kFloat64, 1, 1, N, K, mat(ai), mat(b), mat(row), Scalar(0.75), Scalar(beta));
      const Tensor w = whole.slice(0, i, i + 1).contiguous();
      ASSERT_EQ(std::memcmp(w.data_ptr(), row.data_ptr(), static_cast<size_t>(N) * sizeof(double)), 0)
          << "row " << i << ", beta " << beta;
    }
  }
}

// sum_to_size's direct path (contiguous float32, leading dims summed) and its general
// path (any layout) give the same bits.
TEST(Linalg, SumToSizeDirectPathEqualsTheGeneralPath) {
  manual_seed(13);
  const std::vector<std::pair<DimVector, DimVector>> cases = {
      {{64, 16}, {16}}, {{64, 16}, {1, 16}}, {{5, 1, 7}, {1, 7}}, {{3, 4, 5}, {4, 5}}, {{6, 2}, {1, 1}},
      {{1, 16}, {16}}, {{0, 4}, {4}}};
  for (const auto& [from, to] : cases) {
    Tensor x = randn(from) * 1e3;  // sums that round
    if (x.numel() > 1) x.view({-1}).slice(0, 0, 1).fill_(-0.0);
    // The same values in another layout (last two dims swapped in memory): the general path.
    Tensor strided = x;
    if (x.dim() >= 2) strided = x.transpose(-1, -2).contiguous().transpose(-1, -2);
    ASSERT_TRUE(x.dim() < 2 || x.numel() == 0 || !strided.is_contiguous() || x.size(-1) == 1 || x.size(-2) == 1);
    Tensor fast = sum_to_size(x, to), general = sum_to_size(strided, to);
    ASSERT_TRUE(fast.sizes().equals(IntArrayRef(to)));
    ASSERT_EQ(std::memcmp(fast.data_ptr(), general.data_ptr(), static_cast<size_t>(fast.nbytes())), 0)
        << IntArrayRef(from) << " -> " << IntArrayRef(to);
  }
}

// Small and medium float32 products go to OpenBLAS (one single-threaded call per 256 x 256
// block of C): every BLAS layout, a column-major result and a broadcast batch give the
// reference (exact values, see make()), and the values do not depend on the thread count.
TEST(Linalg, Float32SmallProductsThroughOpenblas) {
  ASSERT_TRUE(kernels::openblas::available());
  const int64_t M = 60, K = 24, N = 70;  // 100,800 multiply-adds: OpenBLAS's range
  Tensor a = make({M, K}, kFloat32, 31), b = make({K, N}, kFloat32, 32);
  const auto want = ref_mm(a, b);
  auto mat = [](const Tensor& t) { return kernels::GemmMatrix{t.data_ptr(), 0, t.stride(0), t.stride(1)}; };
  for (const Tensor& x : {a, a.t().contiguous().t()})
    for (const Tensor& y : {b, b.t().contiguous().t()})
      for (bool col_major_out : {false, true}) {
        Tensor c = col_major_out ? empty({N, M}, kFloat32).t() : empty({M, N}, kFloat32);
        kernels::gemm("mm", kFloat32, 1, M, N, K, mat(x), mat(y), mat(c));
        expect_close(c, want, 0, 0);
      }
  Tensor batched = matmul(make({3, M, K}, kFloat32, 33), b);
  expect_close(batched.select(0, 1), ref_mm(make({3, M, K}, kFloat32, 33).select(0, 1), b), 0, 0);
  manual_seed(14);
  Tensor p = randn({50, 40}), q = randn({40, 60});
  const int n = get_num_threads();
  set_num_threads(1);
  Tensor one = mm(p, q);
  set_num_threads(2);
  Tensor two = mm(p, q);
  set_num_threads(n);
  ASSERT_EQ(std::memcmp(one.data_ptr(), two.data_ptr(), static_cast<size_t>(one.nbytes())), 0);
}
