// Gradients of slice_scatter, select_scatter, diagonal_scatter and as_strided_scatter:
// gradcheck and gradgradcheck (float64 finite differences) in self and src, on contiguous
// and non-contiguous inputs, plus a src of another floating dtype (its gradient comes back
// in src's dtype, as torch's copy_ gives it).
#include <gtest/gtest.h>

#include <vector>

#include "support/grad_helpers.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::Fn;
using tandem_test::leaf;
using tandem_test::leaf_nc;
using tandem_test::wrap;
using autograd::gradcheck;
using autograd::gradgradcheck;

namespace {

void check(Fn f, const std::vector<Tensor>& in) {
  try {
    EXPECT_TRUE(gradcheck(wrap(f), in));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradcheck: " << e.what();
  }
  try {
    EXPECT_TRUE(gradgradcheck(wrap(f), in));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "gradgradcheck: " << e.what();
  }
}

// A nonlinear use of the result, so that every output element's gradient differs.
Tensor use(const Tensor& y) { return (y * y).sin(); }

TEST(GradViewScatter, SliceScatter) {
  check([](const std::vector<Tensor>& in) { return use(slice_scatter(in[0], in[1], 0, 1, 3)); },
        {leaf({4, 3}, 1), leaf({2, 3}, 2)});
  check([](const std::vector<Tensor>& in) { return use(slice_scatter(in[0], in[1], 1, std::nullopt, std::nullopt, 2)); },
        {leaf_nc({3, 5}, 3), leaf_nc({3, 3}, 4)});
  check([](const std::vector<Tensor>& in) { return use(in[0].slice_scatter(in[1] * 2.0, -1, -2)); },
        {leaf({2, 4}, 5), leaf({2, 2}, 6)});
}

TEST(GradViewScatter, SelectScatter) {
  check([](const std::vector<Tensor>& in) { return use(select_scatter(in[0], in[1], 0, 2)); },
        {leaf({3, 4}, 7), leaf({4}, 8)});
  check([](const std::vector<Tensor>& in) { return use(select_scatter(in[0], in[1], -1, -1)); },
        {leaf_nc({2, 3, 4}, 9), leaf_nc({2, 3}, 10)});
}

TEST(GradViewScatter, DiagonalScatter) {
  check([](const std::vector<Tensor>& in) { return use(diagonal_scatter(in[0], in[1])); }, {leaf({3, 4}, 11), leaf({3}, 12)});
  check([](const std::vector<Tensor>& in) { return use(diagonal_scatter(in[0], in[1], -1, 2, 0)); },
        {leaf_nc({3, 2, 4}, 13), leaf_nc({2, 3}, 14)});
}

TEST(GradViewScatter, AsStridedScatter) {
  check([](const std::vector<Tensor>& in) { return use(as_strided_scatter(in[0], in[1], {2, 2}, {4, 1}, 1)); },
        {leaf({3, 4}, 15), leaf({2, 2}, 16)});
  check([](const std::vector<Tensor>& in) { return use(as_strided_scatter(in[0], in[1], {3, 2}, {2, 3})); },
        {leaf({8}, 17), leaf_nc({3, 2}, 18)});
  // A transposed self: the geometry addresses the output's (transposed) storage.
  check([](const std::vector<Tensor>& in) { return use(as_strided_scatter(in[0], in[1], {2}, {1}, 1)); },
        {leaf_nc({4, 3}, 19), leaf({2}, 20)});
  // A non-dense self (a strided slice): the output is contiguous.
  check([](const std::vector<Tensor>& in) { return use(as_strided_scatter(in[0].slice(1, 0, 6, 2), in[1], {3}, {3})); },
        {leaf({3, 6}, 21), leaf({3}, 22)});
}

TEST(GradViewScatter, SrcOfAnotherDtypeGetsItsGradientInItsDtype) {
  Tensor self = leaf({3, 4}, 23);
  Tensor src = leaf({4}, 24, kFloat32);
  Tensor y = select_scatter(self, src, 0, 1);
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  EXPECT_EQ(src.grad().dtype(), kFloat32);
  EXPECT_EQ(src.grad().sum().item<float>(), 4.f);
  EXPECT_EQ(self.grad().sum().item<double>(), 8.0) << "the replaced row gets no gradient";
  EXPECT_EQ(self.grad()[1].abs().sum().item<double>(), 0.0);
}

}  // namespace
