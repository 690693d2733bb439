// isclose/allclose/equal, diag/diag_embed, take, index_copy/index_fill, logcumsumexp,
// median/mode and Tensor.unfold: what the oracle JSON (tests/data/oracle/more_ops.json)
// cannot express — the C++ bool results, Tensor methods, in-place variants (version
// counters, aliasing), views sharing storage, tandem's documented choices where PyTorch
// leaves the result unspecified, error messages, and big (parallel) inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "support/tensor_json.h"

using namespace tandem;

namespace {

std::vector<double> vals(const Tensor& t) { return oracle::to_doubles(t); }
constexpr double kInf = std::numeric_limits<double>::infinity();

template <typename E, typename F>
void expect_error(F&& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "expected an exception containing \"" << part << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace

// ---------------------------------------------------------------- closeness
TEST(MoreOps, AllcloseAndEqualReturnBools) {
  Tensor a = tensor({1.0, 2.0, 3.0});
  EXPECT_TRUE(allclose(a, a + 1e-9));
  EXPECT_FALSE(allclose(a, a + 1e-3));
  EXPECT_TRUE(a.allclose(a + 1e-3, 1e-2));
  EXPECT_TRUE(a.allclose(a + 1e-3, 0, 2e-3));
  EXPECT_TRUE(equal(a, a.clone()));
  EXPECT_TRUE(a.equal(tensor({1, 2, 3})));  // promoted comparison, like torch.equal
  EXPECT_FALSE(a.equal(a.view({3, 1})));
  EXPECT_FALSE(a.equal(tensor({1.0, 2.0, 4.0})));
  Tensor c = a.isclose(tensor({1.0, 2.1, 3.0}));
  EXPECT_EQ(c.dtype(), kBool);
  EXPECT_EQ(vals(c), (std::vector<double>{1, 0, 1}));
  expect_error<TypeError>([&] { (void)isclose(a, tensor({1, 2, 3})); }, "[isclose]");
  expect_error<ValueError>([&] { (void)allclose(a, a, -1.0); }, "rtol");
}

TEST(MoreOps, IscloseBigParallelInput) {
  Tensor a = arange(Scalar(100000), kFloat32) / 7.0;
  Tensor b = a.clone();
  b.index_fill_(0, tensor({12345, 99999}), Scalar(-1.0));
  Tensor c = isclose(a, b);
  EXPECT_EQ(c.logical_not().sum().item<int64_t>(), 2);
  EXPECT_FALSE(c.index({12345}).item<bool>());
}

// ---------------------------------------------------------------- diag
TEST(MoreOps, DiagIsACopyDiagEmbedNewStorage) {
  Tensor m = arange(Scalar(6), kFloat32).view({2, 3});
  Tensor d = m.diag(1);
  EXPECT_EQ(vals(d), (std::vector<double>{1, 5}));
  EXPECT_FALSE(d.is_alias_of(m));  // torch.diag of a matrix copies
  Tensor e = diag_embed(tensor({1.0, 2.0}), -1, 1, 0);
  EXPECT_EQ(e.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(vals(e), (std::vector<double>{0, 1, 0, 0, 0, 2, 0, 0, 0}));
}

// ---------------------------------------------------------------- take, index_copy, index_fill
TEST(MoreOps, TakeErrorsNameTheOp) {
  Tensor x = arange(Scalar(6), kFloat32).view({2, 3});
  expect_error<IndexError>([&] { (void)x.take(tensor({6})); }, "[take] index 6 is out of bounds");
  expect_error<TypeError>([&] { (void)x.take(tensor({1.0})); }, "[take]");
  EXPECT_EQ(vals(x.take(tensor({-1, 0}))), (std::vector<double>{5, 0}));
}

TEST(MoreOps, IndexCopyRepeatedIndexLastWins) {
  // PyTorch leaves the winner unspecified; tandem copies in index order.
  Tensor y = zeros({3}).index_copy(0, tensor({1, 1}), tensor({3.0, 4.0}));
  EXPECT_EQ(vals(y), (std::vector<double>{0, 4, 0}));
}

TEST(MoreOps, InplaceVariantsWriteSelfAndBumpVersion) {
  Tensor x = zeros({3, 2});
  const uint64_t v0 = x._version();
  Tensor& r = x.index_copy_(0, tensor({2}), ones({1, 2}));
  EXPECT_TRUE(r.is_same(x));
  EXPECT_GT(x._version(), v0);
  const uint64_t v1 = x._version();
  x.index_fill_(1, tensor({0}), Scalar(7));
  EXPECT_GT(x._version(), v1);
  EXPECT_EQ(vals(x), (std::vector<double>{7, 0, 7, 0, 7, 1}));
  // Through a view: the base sees the write.
  Tensor base = zeros({2, 4});
  base.narrow(1, 1, 2).index_fill_(0, tensor({1}), Scalar(5));
  EXPECT_EQ(vals(base), (std::vector<double>{0, 0, 0, 0, 0, 5, 5, 0}));
  // A bad index leaves the tensor untouched.
  Tensor z = zeros({3});
  EXPECT_THROW(z.index_copy_(0, tensor({0, 3}), ones({2})), IndexError);
  EXPECT_THROW(z.index_fill_(0, tensor({0, 5}), Scalar(1)), IndexError);
  EXPECT_EQ(vals(z), (std::vector<double>{0, 0, 0}));
  // Source aliasing self: copied first.
  Tensor w = arange(Scalar(4), kFloat32);
  w.index_copy_(0, tensor({3, 2, 1, 0}), w);
  EXPECT_EQ(vals(w), (std::vector<double>{3, 2, 1, 0}));
}

TEST(MoreOps, IndexFillBigInput) {
  Tensor x = zeros({300, 500});
  Tensor y = x.index_fill(1, tensor({0, 499, -2}), Scalar(1));
  EXPECT_EQ(y.sum().item<double>(), 900.0);
  EXPECT_EQ(y.index({7, 498}).item<double>(), 1.0);
}

// ---------------------------------------------------------------- logcumsumexp
TEST(MoreOps, LogcumsumexpIsStableOnLongLines) {
  // 10000 equal values v: out_k = v + log(k + 1), no overflow at v = 500.
  Tensor x = full({2, 10000}, Scalar(500.0), kFloat32);
  Tensor y = x.logcumsumexp(1);
  std::vector<double> got = vals(y.index({1}));
  for (int k : {0, 1, 99, 9999}) EXPECT_NEAR(got[k], 500.0 + std::log(k + 1.0), 1e-3) << k;
  Tensor z = logcumsumexp(tensor({-kInf, -kInf}, kFloat64), 0);
  EXPECT_EQ(vals(z), (std::vector<double>{-kInf, -kInf}));
}

// ---------------------------------------------------------------- median, mode
TEST(MoreOps, MedianAndModeChoices) {
  // Lower median; among ties the index of rank (n - 1) / 2 in (value, position) order.
  auto [v, i] = tensor({2.0, 1.0, 2.0, 2.0, 3.0, 1.0}).median(0);
  EXPECT_EQ(v.item<double>(), 2.0);
  EXPECT_EQ(i.item<int64_t>(), 0);
  EXPECT_EQ(tensor({4, 1, 3, 2}).median().item<int64_t>(), 2);
  // mode on a long line: smallest of the most frequent values, its highest position.
  Tensor line = arange(Scalar(10), kFloat32).repeat({3});
  auto [mv, mi] = line.mode();
  EXPECT_EQ(mv.item<double>(), 0.0);
  EXPECT_EQ(mi.item<int64_t>(), 20);
  // All NaN: NaN wins.
  auto [nv, ni] = tensor({std::nan(""), std::nan("")}).mode(0);
  EXPECT_TRUE(std::isnan(nv.item<double>()));
  (void)ni;
  expect_error<IndexError>([] { (void)zeros({2, 0}).mode(1); }, "[mode] expected reduction dim 1 to have non-zero size");
}

TEST(MoreOps, MedianDimBigParallelInput) {
  // 4000 lines of 7 shuffled values 0..6 along dim 1: the median is 3 at the position of 3.
  Tensor base = arange(Scalar(7), kFloat64).view({1, 7}).expand({4000, 7}).contiguous();
  Tensor shift = (arange(Scalar(4000), kInt64) % 7).view({4000, 1});
  Tensor pos = (arange(Scalar(7), kInt64).view({1, 7}) + shift) % 7;
  Tensor x = base.gather(1, pos);  // each row a rotation of 0..6
  auto [v, i] = median(x, 1);
  EXPECT_EQ(v.sum().item<double>(), 3.0 * 4000);
  EXPECT_TRUE(equal(x.gather(1, i.unsqueeze(1)).squeeze(1), v));
}

// ---------------------------------------------------------------- unfold
TEST(MoreOps, UnfoldIsAView) {
  Tensor x = arange(Scalar(7), kFloat32);
  Tensor u = x.unfold(0, 3, 2);
  EXPECT_TRUE(u.is_alias_of(x));
  EXPECT_EQ(u.sizes().vec(), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(u.strides().vec(), (std::vector<int64_t>{2, 1}));
  x.index_fill_(0, tensor({2}), Scalar(-1));  // element 2 is in windows 0 and 1
  EXPECT_EQ(vals(u), (std::vector<double>{0, 1, -1, -1, 3, 4, 4, 5, 6}));
  // Writes through a non-overlapping unfold view reach the base.
  Tensor y = zeros({2, 6});
  y.unfold(1, 2, 3).fill_(Scalar(1));
  EXPECT_EQ(vals(y), (std::vector<double>{1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0}));
  Tensor t = arange(Scalar(12), kFloat32).view({3, 4}).t();
  EXPECT_EQ(t.unfold(0, 2, 2).strides().vec(), (std::vector<int64_t>{2, 4, 1}));
  expect_error<ValueError>([&] { (void)x.unfold(0, 8, 1); }, "[unfold]");
}
