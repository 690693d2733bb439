// Each guard of a compiled function: a change recompiles (or runs eagerly, as documented)
// and gives the eager result; the recompile reason and the limit warning name what changed.
#include <gtest/gtest.h>

#include <cstring>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Reads its input through a strided view: a program compiled for one layout is wrong for
// another, so strides must be guarded.
std::vector<Tensor> strided_fn(const std::vector<Tensor>& in) {
  return {in[0].view({-1}) * 2.0};  // view() needs a compatible layout; reshape would copy
}
}  // namespace

TEST(CompileGuards, SizesDtypeStridesRecompileWithReasons) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] * 3.0).sum({0}, true)}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor a = randn({2, 3});
  EXPECT_TRUE(bitwise_equal((*cf)({a})[0], fn({a})[0]));
  Tensor b = randn({4, 3});
  EXPECT_TRUE(bitwise_equal((*cf)({b})[0], fn({b})[0]));
  Tensor c = b.to(kFloat64);
  EXPECT_TRUE(bitwise_equal((*cf)({c})[0], fn({c})[0]));
  Tensor d = randn({3, 4}).t();  // same sizes as b, other strides
  EXPECT_TRUE(bitwise_equal((*cf)({d})[0], fn({d})[0]));
  const auto& r = cf->recompile_reasons();
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0], "input 0 sizes [2, 3] -> [4, 3]");
  EXPECT_EQ(r[1], "input 0 dtype float32 -> float64");
  EXPECT_EQ(r[2], "input 0 dtype float64 -> float32");  // vs the previous call: dtype first
  // Every signature seen is cached: going back is a hit.
  (*cf)({a});
  (*cf)({d});
  EXPECT_EQ(cf->captures(), 4);
  EXPECT_EQ(cf->compiled_calls(), 2);
}

TEST(CompileGuards, StridesAloneRecompile) {
  auto cf = compile(strided_fn);
  NoGradGuard ng;
  Tensor x = arange(6, kFloat32).view({2, 3});
  (*cf)({x});
  Tensor y = arange(6, kFloat32).view({3, 2}).t().contiguous();  // contiguous [2, 3]: same program
  EXPECT_TRUE(bitwise_equal((*cf)({y})[0], strided_fn({y})[0]));
  EXPECT_EQ(cf->captures(), 1);
  // Sizes [2, 3] with strides [1, 2]: view(-1) is not possible, so eager raises; the
  // compiled function must not reuse the contiguous program (which would "succeed").
  Tensor z = arange(6, kFloat32).view({3, 2}).t();
  EXPECT_THROW((*cf)({z}), Error);
  ASSERT_EQ(cf->recompile_reasons().size(), 1u);
  EXPECT_EQ(cf->recompile_reasons()[0], "input 0 strides [3, 1] -> [1, 2]");
}

TEST(CompileGuards, RequiresGradAndGradModeRecompileOrRunEagerly) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[0]}; };
  auto cf = compile(fn);
  Tensor x = tensor({3.0f});
  (*cf)({x});  // grad mode on, nothing requires grad: compiled
  {
    NoGradGuard ng;
    (*cf)({x});  // grad mode off: another program
  }
  ASSERT_EQ(cf->recompile_reasons().size(), 1u);
  EXPECT_EQ(cf->recompile_reasons()[0], "grad mode true -> false");
  {
    NoGradGuard ng;
    Tensor w = tensor({2.0f}).requires_grad_();
    EXPECT_FALSE((*cf)({w})[0].requires_grad());  // no grad mode: compiled, no graph
    EXPECT_EQ(cf->recompile_reasons().back(), "input 0 requires_grad false -> true");
  }
  // Grad mode on and an input requires grad: forward and backward programs.
  Tensor w = tensor({2.0f}).requires_grad_();
  Tensor y = (*cf)({w})[0];
  ASSERT_TRUE(y.requires_grad());
  y.backward();
  EXPECT_TRUE(bitwise_equal(w.grad(), tensor({4.0f})));
  EXPECT_EQ(cf->captures(), 4);
  EXPECT_EQ(cf->recompile_reasons().back(), "grad mode false -> true");
  Tensor y2 = (*cf)({w})[0];
  y2.backward();
  EXPECT_TRUE(bitwise_equal(w.grad(), tensor({8.0f})));
  EXPECT_NE(cf->last_training_program(), nullptr);
  EXPECT_TRUE(cf->warnings().empty());
}

TEST(CompileGuards, AliasingInputsRecompileWithReason) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.mul_(2.0);
    return std::vector<Tensor>{a + in[1]};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor x = ones({3}), y = ones({3});
  (*cf)({x, y});
  (*cf)({x, y});
  Tensor z = ones({3});
  Tensor zz = ones({3});
  auto got = (*cf)({z, z});  // the same storage twice
  auto want = fn({zz, zz});
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));  // 4, not 2 + 1
  EXPECT_TRUE(bitwise_equal(z, zz));
  ASSERT_EQ(cf->recompile_reasons().size(), 1u);
  EXPECT_TRUE(contains(cf->recompile_reasons()[0], "input 1 now shares storage with input 0"))
      << cf->recompile_reasons()[0];
  // Overlapping views of one buffer: not the same tensor, so that signature runs eagerly
  // (the {z, z} program would compute [4, 4, 4] here; eager gives [4, 4, 3]).
  Tensor base = ones({4});
  Tensor base2 = ones({4});
  for (int call = 0; call < 2; ++call) {
    got = (*cf)({base.slice(0, 0, 3), base.slice(0, 1, 4)});
    want = fn({base2.slice(0, 0, 3), base2.slice(0, 1, 4)});
    EXPECT_TRUE(bitwise_equal(got[0], want[0]));
    EXPECT_TRUE(bitwise_equal(base, base2));
  }
  EXPECT_EQ(cf->captures(), 2);
  EXPECT_EQ(cf->recompile_reasons().back(), "inputs that are different views of one storage");
  ASSERT_EQ(cf->warnings().size(), 1u);
  EXPECT_TRUE(contains(cf->warnings()[0], "different views of one storage"));
  // A lifted tensor that an input is a view of: also eager.
  Tensor w = ones({3});
  auto lf = compile([&w](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.mul_(2.0);
    return std::vector<Tensor>{a + w};
  });
  Tensor w2 = ones({3});
  got = (*lf)({w.slice(0, 0, 3)});
  Tensor a2 = w2.slice(0, 0, 3);
  a2.mul_(2.0);
  EXPECT_TRUE(bitwise_equal(got[0], a2 + w2));
  EXPECT_EQ(lf->compiled_calls(), 0);
}

TEST(CompileGuards, RecompileLimitWarningNamesWhatKeptChanging) {
  jit::CompileOptions o;
  o.recompile_limit = 3;
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; };
  auto cf = compile(fn, o);
  NoGradGuard ng;
  for (int n = 1; n <= 6; ++n) {
    Tensor a = ones({2}), c = ones({n, 2});
    auto r = (*cf)({c, a});
    EXPECT_TRUE(bitwise_equal(r[0], fn({c, a})[0]));
  }
  EXPECT_TRUE(cf->gave_up());
  EXPECT_EQ(cf->num_programs(), 3);
  ASSERT_EQ(cf->warnings().size(), 1u);
  EXPECT_TRUE(contains(cf->warnings()[0], "recompile limit (3)"));
  EXPECT_TRUE(contains(cf->warnings()[0], "input 0 sizes [3, 2] -> [4, 2]")) << cf->warnings()[0];
  // Keeps running eagerly, correctly, without more warnings.
  Tensor c = ones({9, 2});
  EXPECT_TRUE(bitwise_equal((*cf)({c, ones({2})})[0], full({9, 2}, 2.0)));
  EXPECT_EQ(cf->warnings().size(), 1u);
}

TEST(CompileGuards, GraphBreakInsideRunsEagerlyEachCall) {
  int calls = 0;
  auto fn = [&calls](const std::vector<Tensor>& in) {
    ++calls;
    Tensor s = in[0].sum();
    double v = s.item<double>();  // data-dependent: graph break
    return std::vector<Tensor>{v > 0 ? in[0] * 2.0 : in[0] * -1.0};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  EXPECT_TRUE(bitwise_equal((*cf)({ones({2})})[0], full({2}, 2.0)));
  EXPECT_TRUE(bitwise_equal((*cf)({full({2}, -1.0)})[0], full({2}, 1.0)));  // the other branch
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(cf->compiled_calls(), 0);
  ASSERT_EQ(cf->warnings().size(), 1u);
  EXPECT_TRUE(contains(cf->warnings()[0], "graph break"));
}
