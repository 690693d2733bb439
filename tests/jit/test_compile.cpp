#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;

namespace {
bool same(const Tensor& a, const Tensor& b) {
  if (!a.sizes().equals(b.sizes()) || a.dtype() != b.dtype()) return false;
  Tensor x = a.to(kFloat64).contiguous(), y = b.to(kFloat64).contiguous();
  for (int64_t i = 0; i < x.numel(); ++i)
    if (x.data_ptr<double>()[i] != y.data_ptr<double>()[i]) return false;
  return true;
}
}  // namespace

TEST(Compile, CapturesRunsAndCaches) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0] * 2.0 + in[1];
    Tensor b = a.t().contiguous().view({-1});
    return std::vector<Tensor>{b * b, a.sum_to_size({1, 3})};
  };
  auto cf = compile(fn);
  Tensor x = randn({2, 3}), y = randn({3});
  auto eager = fn({x, y});
  auto first = (*cf)({x, y});
  auto second = (*cf)({x, y});
  EXPECT_EQ(cf->captures(), 1);
  EXPECT_EQ(cf->compiled_calls(), 1);
  for (size_t i = 0; i < eager.size(); ++i) {
    EXPECT_TRUE(same(eager[i], first[i]));
    EXPECT_TRUE(same(eager[i], second[i]));
  }
  // Outputs of one call survive the next call (not in the reused arena).
  Tensor keep = second[0].clone();
  auto third = (*cf)({y.unsqueeze(0).expand({2, 3}).contiguous(), y});
  EXPECT_TRUE(same(keep, second[0]));
  (void)third;
}

// Empty inputs: every intermediate is empty, so the plan has no arena; the executor used
// to place the empty values in it anyway and crashed. Also an empty intermediate next to
// non-empty ones (an arena exists).
TEST(Compile, EmptyIntermediatesNeedNoArena) {
  auto only_empty = [](const std::vector<Tensor>& in) {
    Tensor a = (in[0] * 2.0 + 1.0).relu();
    return std::vector<Tensor>{a.sum(1), a.matmul(in[2])};
  };
  auto mixed = [](const std::vector<Tensor>& in) {
    Tensor a = (in[0] * 2.0 + 1.0).relu();
    return std::vector<Tensor>{a.sum(1), a.matmul(in[2]), (in[1].exp() * 3.0 + 1.0).sum()};
  };
  for (const auto& fn : {jit::TensorFn(only_empty), jit::TensorFn(mixed)}) {
    for (int64_t n : {0, 4}) {
      SCOPED_TRACE(n);
      auto cf = compile(fn);
      Tensor x = randn({0, n}), y = randn({5, 3}), w = randn({n, 2});
      auto eager = fn({x, y, w});
      (*cf)({x, y, w});
      auto compiled = (*cf)({x, y, w});
      EXPECT_EQ(cf->compiled_calls(), 1);
      ASSERT_EQ(compiled.size(), eager.size());
      for (size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(same(eager[i], compiled[i])) << i;
      EXPECT_EQ(compiled[1].sizes().vec(), (DimVector{0, 2}));
    }
  }
}

TEST(Compile, ShapeAndDtypeGuardsRecompile) {
  auto cf = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 3.0}; });
  auto r1 = (*cf)({ones({2})});
  auto r2 = (*cf)({ones({4})});
  auto r3 = (*cf)({ones({4}, kFloat64)});
  EXPECT_EQ(r2[0].numel(), 4);
  EXPECT_EQ(r3[0].dtype(), kFloat64);
  EXPECT_EQ(cf->captures(), 3);
  (*cf)({ones({4}, kFloat64)});
  EXPECT_EQ(cf->compiled_calls(), 1);
}

TEST(Compile, RecompileLimitFallsBackWithWarning) {
  jit::CompileOptions o;
  o.recompile_limit = 2;
  auto cf = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + 1.0}; }, o);
  for (int n = 1; n <= 5; ++n) {
    auto r = (*cf)({zeros({n})});
    EXPECT_EQ(r[0].numel(), n);
  }
  EXPECT_EQ(cf->num_programs(), 2);
  ASSERT_EQ(cf->warnings().size(), 1u);
  EXPECT_NE(cf->warnings()[0].find("input 0 sizes"), std::string::npos) << cf->warnings()[0];
}

TEST(Compile, GraphBreakRunsEagerlyAndExplainNamesIt) {
  auto fn = [](const std::vector<Tensor>& in) {
    double s = in[0].sum_to_size({1}).item<double>();  // data-dependent
    return std::vector<Tensor>{in[0] * s};
  };
  auto cf = compile(fn);
  Tensor x = tensor({1.0, 2.0});
  auto r = (*cf)({x});
  EXPECT_TRUE(same(r[0], tensor({3.0, 6.0})));
  Tensor x2 = tensor({2.0, 2.0});
  EXPECT_TRUE(same((*cf)({x2})[0], tensor({8.0, 8.0})));  // eager again: right answer
  EXPECT_EQ(cf->compiled_calls(), 0);
  auto ex = explain(fn, {x});
  EXPECT_FALSE(ex.compiled);
  EXPECT_NE(ex.break_reason.find("item()"), std::string::npos);
  EXPECT_NE(ex.to_string().find("graph break"), std::string::npos);
  jit::CompileOptions strict;
  strict.strict = true;
  auto sf = compile(fn, strict);
  EXPECT_THROW((*sf)({x}), GraphBreak);
}

TEST(Compile, InplaceOnInputsAndRandomOps) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0];
    x.mul_(2.0);
    x.slice(0, 0, 1).add_(1.0);
    return std::vector<Tensor>{x * 1.0 + rand({3})};
  };
  auto cf = compile(fn);
  Tensor a = ones({3}), b = ones({3});
  manual_seed(7);
  auto e1 = fn({a});
  auto e2 = fn({a});
  manual_seed(7);
  auto c1 = (*cf)({b});
  auto c2 = (*cf)({b});  // compiled run: fresh random draws, same as eager's second call
  EXPECT_TRUE(same(a, b));  // inputs mutated identically
  EXPECT_TRUE(same(e1[0], c1[0]));
  EXPECT_TRUE(same(e2[0], c2[0]));
  EXPECT_EQ(cf->compiled_calls(), 1);
}

TEST(Compile, LiftedTensorsAreBoundByReference) {
  Tensor w = ones({3});
  auto cf = compile([&w](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; });
  Tensor x = full({3}, 2.0);
  EXPECT_TRUE(same((*cf)({x})[0], full({3}, 2.0)));
  w.mul_(5.0);  // updated in place: the compiled program sees it
  EXPECT_TRUE(same((*cf)({x})[0], full({3}, 10.0)));
  EXPECT_EQ(cf->compiled_calls(), 1);
}

TEST(Compile, AliasingInputsAreAGuard) {
  auto cf = compile([](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.add_(in[1]);
    return std::vector<Tensor>{a * 1.0};
  });
  Tensor x = ones({3}), y = ones({3});
  (*cf)({x, y});
  Tensor z = ones({3});
  auto r = (*cf)({z, z});  // same storage twice: must not reuse the non-aliased program
  EXPECT_TRUE(same(r[0], full({3}, 2.0)));
  EXPECT_EQ(cf->captures(), 2);
}

TEST(Compile, GradRequiringInputsAreCompiledForTraining) {
  // Compiled training (split forward/backward programs) replaced the eager fallback.
  auto cf = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[0]}; });
  for (int call = 0; call < 2; ++call) {
    Tensor x = tensor({3.0}).requires_grad_();
    auto r = (*cf)({x});
    EXPECT_TRUE(r[0].requires_grad());
    r[0].backward(ones({1}, kFloat64));
    EXPECT_TRUE(same(x.grad(), tensor({6.0})));
  }
  EXPECT_EQ(cf->captures(), 1);
  EXPECT_EQ(cf->compiled_calls(), 1);
  EXPECT_EQ(cf->warnings().size(), 0u);
}

TEST(Compile, ProfileAndChromeTrace) {
  jit::CompileOptions o;
  o.profile = true;
  o.disabled_passes = {"fuse_pointwise"};  // one row per op of the expression
  auto cf = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 2.0 + 1.0) * in[0]}; }, o);
  Tensor x = randn({16});
  (*cf)({x});
  (*cf)({x});
  auto* ex = cf->last_executor();
  ASSERT_NE(ex, nullptr);
  EXPECT_NE(ex->profile_table().find("mul"), std::string::npos);
  EXPECT_NE(ex->chrome_trace().find("\"traceEvents\""), std::string::npos);
  EXPECT_LE(ex->plan().arena_bytes, ex->plan().lower_bound * 11 / 10 + 64);
}
