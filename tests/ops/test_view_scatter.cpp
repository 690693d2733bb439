// slice_scatter, select_scatter, diagonal_scatter, as_strided_scatter beyond the oracle
// cases (tests/data/oracle/view_scatter.json): each equals "clone, then write through the
// view" (what functionalizing an in-place write on a view produces), returns fresh memory
// and leaves its inputs alone; as_strided_scatter's layout and its rejected geometries.
#include <gtest/gtest.h>

#include "core/core_test_util.h"
#include "support/bitwise.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

TEST(ViewScatter, EqualsCloneThenWriteThroughTheView) {
  manual_seed(0);
  Tensor x = randn({4, 5, 6});
  Tensor before = x.clone();
  struct Case {
    std::function<Tensor(const Tensor&)> view;
    std::function<Tensor(const Tensor&, const Tensor&)> scatter;
  };
  std::vector<Case> cases = {
      {[](const Tensor& t) { return t.slice(1, 1, 5, 2); },
       [](const Tensor& t, const Tensor& s) { return slice_scatter(t, s, 1, 1, 5, 2); }},
      {[](const Tensor& t) { return t.select(2, -2); }, [](const Tensor& t, const Tensor& s) { return t.select_scatter(s, 2, -2); }},
      {[](const Tensor& t) { return t.diagonal(1, 2, 0); },
       [](const Tensor& t, const Tensor& s) { return t.diagonal_scatter(s, 1, 2, 0); }},
      {[](const Tensor& t) { return t.as_strided({3, 4}, {7, 2}, 5); },
       [](const Tensor& t, const Tensor& s) { return t.as_strided_scatter(s, {3, 4}, {7, 2}, 5); }},
  };
  for (const Case& c : cases) {
    Tensor want = x.clone();
    Tensor src = randn(c.view(want).sizes());
    c.view(want).copy_(src);
    Tensor got = c.scatter(x, src);
    EXPECT_TRUE(bitwise_equal(got, want));
    EXPECT_FALSE(got.is_alias_of(x)) << "fresh memory";
    EXPECT_FALSE(got.is_alias_of(src));
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_TRUE(bitwise_equal(x, before)) << "self is not written";
  }
}

TEST(ViewScatter, AsStridedScatterKeepsADenseSelfsLayout) {
  // torch 1.13: as_strided_scatter(arange(12.).reshape(3, 4).t(), -ones(2), (2,), (1,))
  //   = [[-1, 4, 8], [-1, 5, 9], [2, 6, 10], [3, 7, 11]] with strides (1, 4).
  Tensor xt = arange(Scalar(12), kFloat32).reshape({3, 4}).t();
  Tensor got = as_strided_scatter(xt, -ones({2}), {2}, {1});
  EXPECT_EQ(got.strides().vec(), (DimVector{1, 4}));
  EXPECT_TRUE(bitwise_equal(got, tensor({{-1.0, 4.0, 8.0}, {-1.0, 5.0, 9.0}, {2.0, 6.0, 10.0}, {3.0, 7.0, 11.0}}, kFloat32)));
  // A view with a storage offset: the geometry counts from the output's own start.
  Tensor v = arange(Scalar(12), kFloat32).slice(0, 2);
  EXPECT_TRUE(bitwise_equal(as_strided_scatter(v, -ones({2}), {2}, {1}),
                            tensor({-1.f, -1.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 10.f, 11.f})));
  // Meta inference is not cached across layouts with the same sizes.
  Tensor p1 = zeros({2, 3, 4}).permute({2, 0, 1}), p2 = zeros({4, 3, 2}).permute({0, 2, 1});
  EXPECT_NE(as_strided_scatter(p1, ones({1}), {1}, {1}).strides().vec(),
            as_strided_scatter(p2, ones({1}), {1}, {1}).strides().vec());
}

TEST(ViewScatter, ErrorsNameTheScatterOp) {
  Tensor x = zeros({3, 4});
  EXPECT_TANDEM_ERROR(slice_scatter(x, ones({3, 4}), 0, 0, 2), ShapeError, "slice_scatter",
                      "expected src to have a size equal to the slice of self", "[3, 4]", "[2, 4]");
  EXPECT_TANDEM_ERROR(select_scatter(x, ones({4}), 0, 3), IndexError, "select_scatter", "index 3 out of range");
  EXPECT_TANDEM_ERROR(diagonal_scatter(x, ones({3}), 0, 1, 1), ValueError, "diagonal_scatter", "cannot be identical");
  EXPECT_TANDEM_ERROR(as_strided_scatter(x, ones({2, 2}), {2, 2}, {4, 1}, 11), ValueError, "as_strided_scatter",
                      "storage");
  EXPECT_TANDEM_ERROR(as_strided_scatter(x, ones({2, 2}), {2, 2}, {0, 1}), ValueError, "as_strided_scatter",
                      "more than one element");
  EXPECT_TANDEM_ERROR(as_strided_scatter(x, ones({3, 3}), {3, 3}, {1, 2}), ValueError, "as_strided_scatter",
                      "more than one element");
  // Interleaved but never colliding strides are fine.
  Tensor r = as_strided_scatter(zeros({8}), arange(Scalar(1), Scalar(7), Scalar(1), kFloat32).reshape({3, 2}), {3, 2}, {2, 3});
  EXPECT_TRUE(bitwise_equal(r, tensor({1.f, 0.f, 3.f, 2.f, 5.f, 4.f, 0.f, 6.f})));
}

}  // namespace
