// Compiled mode runs isclose, diag/diag_embed, take, index_copy(_)/index_fill(_),
// logcumsumexp, median/mode and the unfold view exactly as eager does (bitwise), and
// allclose/equal (which read their result) end capture with a graph break instead of failing.
#include <gtest/gtest.h>

#include <cstring>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {


}  // namespace

TEST(CompileMoreOps, EagerAndCompiledAgreeBitwise) {
  NoGradGuard no_grad;
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &y = in[1];
    Tensor h = x * 1.5;
    h.index_fill_(1, tensor({0, -1}), Scalar(0.25));            // in place on an intermediate
    Tensor c = index_copy(h, 0, tensor({2, 0}), y.narrow(0, 0, 2));
    Tensor u = c.unfold(1, 3, 2);                                // a view of an intermediate
    Tensor l = logcumsumexp(u, -1);
    auto [mv, mi] = median(l, 1);
    auto [ov, oi] = mode((x * 2.0).round(), 0, true);
    Tensor t = take(l, tensor({0, 5, -1}));
    Tensor d = diag_embed(mv, 1) + diag(t).sum();
    return std::vector<Tensor>{d, mi, ov, oi, isclose(x, y, 1e-2, 0.3), median(x), u.contiguous()};
  };
  auto cf = compile(fn);
  manual_seed(5);
  Tensor x = randn({4, 7}), y = randn({4, 7});
  auto eager = fn({x, y});
  auto first = (*cf)({x, y});
  auto second = (*cf)({x, y});
  EXPECT_EQ(cf->captures(), 1);
  EXPECT_EQ(cf->compiled_calls(), 1);
  ASSERT_EQ(first.size(), eager.size());
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(eager[i], first[i])) << "output " << i;
    EXPECT_TRUE(bitwise_equal(eager[i], second[i])) << "output " << i;
  }
}

TEST(CompileMoreOps, InplaceOnInputIsSeen) {
  NoGradGuard no_grad;
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.index_copy_(0, tensor({1}), in[1]);
    return std::vector<Tensor>{a.unfold(0, 2, 1).sum()};
  };
  auto cf = compile(fn);
  Tensor a1 = zeros({3, 2}), a2 = zeros({3, 2}), s = ones({1, 2});
  Tensor e = fn({a1, s})[0];
  Tensor c = (*cf)({a2, s})[0];
  EXPECT_TRUE(bitwise_equal(e, c));
  EXPECT_TRUE(bitwise_equal(a1, a2));
  EXPECT_EQ(a2.sum().item<double>(), 2.0);
}

TEST(CompileMoreOps, AllcloseAndEqualBreakTheGraph) {
  NoGradGuard no_grad;
  auto fn = [](const std::vector<Tensor>& in) {
    const bool close = allclose(in[0], in[0] + 1e-9) && equal(in[0], in[0].clone());
    return std::vector<Tensor>{close ? in[0] * 2.0 : in[0]};
  };
  auto cf = compile(fn);
  Tensor x = randn({3});
  auto r = (*cf)({x});
  EXPECT_TRUE(bitwise_equal(r[0], x * 2.0));
  EXPECT_EQ(cf->compiled_calls(), 0);  // ran eagerly after the data read
}
