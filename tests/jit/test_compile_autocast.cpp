// Autocast in compiled mode (issue 16): the autocast state is part of the signature, the
// casts are graph nodes (a weight cast once per program), and compiled bfloat16 training
// equals eager bfloat16 training bitwise.
#include <gtest/gtest.h>

#include <algorithm>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
int count_of(const std::vector<std::string>& ops, const std::string& name) {
  return static_cast<int>(std::count(ops.begin(), ops.end(), name));
}
}  // namespace

TEST(CompileAutocast, StateIsPartOfTheSignature) {
  Tensor w = randn({8, 8});
  auto cf = compile([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{relu(mm(mm(in[0], w), w))}; });
  Tensor x = randn({4, 8});
  Tensor plain = (*cf)({x})[0];
  EXPECT_EQ(plain.dtype(), kFloat32);
  Tensor low;
  {
    AutocastGuard ac;
    low = (*cf)({x})[0];
    EXPECT_TRUE(bitwise_equal(low, (*cf)({x})[0]));  // replayed
  }
  EXPECT_EQ(low.dtype(), kBFloat16);
  {
    AutocastGuard ac;
    EXPECT_TRUE(bitwise_equal(low, relu(mm(mm(x, w), w))));  // eager under autocast
  }
  EXPECT_TRUE(bitwise_equal((*cf)({x})[0], plain));  // leaving autocast: the float32 program again
  {
    AutocastGuard ac(kFloat16);
    EXPECT_EQ((*cf)({x})[0].dtype(), kFloat16);
  }
  EXPECT_EQ(cf->num_programs(), 3);
  ASSERT_EQ(cf->recompile_reasons().size(), 2u);
  EXPECT_EQ(cf->recompile_reasons()[0], "autocast off -> bfloat16");
  EXPECT_EQ(cf->recompile_reasons()[1], "autocast off -> float16");
}

// The casts are ops of the program; a lifted weight used twice is cast once (the cache
// works within the capture), and casts made before the capture are not reused.
TEST(CompileAutocast, CastsAreGraphNodes) {
  Tensor w = randn({8, 8}).requires_grad_(true);
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(mm(mm(in[0], w), w))}; };
  Tensor x = randn({4, 8});
  AutocastGuard ac;
  mm(x, w);  // fills this region's cache with w's cast: capture must not read it
  jit::Explanation e;
  {
    NoGradGuard ng;  // forward only: the backward's casts of gradients are not counted here
    e = jit::explain(fn, {x});
  }
  ASSERT_TRUE(e.compiled) << e.to_string();
  EXPECT_EQ(count_of(e.captured_ops, "_to_copy"), 3) << e.to_string();  // x, w (once), result for sum
  EXPECT_TRUE(contains(e.to_string(), "autocast bfloat16")) << e.to_string();
  EXPECT_EQ(autocast::cache_size(), 1);  // the region's cache is back
}

// The reference CNN trained with bfloat16 autocast: compiled training steps (the whole
// step as one program) equal eager ones bitwise, losses, parameters, .grad and state.
TEST(CompileAutocast, CnnTrainingStepBf16EqualsEagerBitwise) {
  struct Trainer {
    std::shared_ptr<nn::Sequential> model;
    std::unique_ptr<optim::Optimizer> opt;
    Tensor step(const Tensor& x, const Tensor& y) {
      opt->zero_grad();
      Tensor loss;
      {
        AutocastGuard ac(kBFloat16);
        loss = cross_entropy((*model)(x), y);
      }
      loss.backward();
      opt->step();
      return loss;
    }
  };
  auto make = [] {
    manual_seed(5);
    Trainer t;
    t.model = nn::models::fashion_cnn();
    t.opt = std::make_unique<optim::Adam>(t.model->parameters(), optim::AdamOptions(1e-3));
    return t;
  };
  Trainer e = make(), c = make();
  auto cf = compile([&c](const std::vector<Tensor>& in) { return std::vector<Tensor>{c.step(in[0], in[1]).detach()}; });
  manual_seed(17);
  for (int s = 0; s < 5; ++s) {
    Tensor x = randn({8, 1, 28, 28}), y = randint(0, 10, {8});
    Tensor le = e.step(x, y).detach(), lc = (*cf)({x, y})[0];
    EXPECT_EQ(le.dtype(), kFloat32);
    EXPECT_TRUE(bitwise_equal(le, lc)) << "loss of step " << s;
  }
  auto pe = e.model->named_parameters(), pc = c.model->named_parameters();
  ASSERT_EQ(pe.size(), pc.size());
  for (size_t i = 0; i < pe.size(); ++i) {
    EXPECT_EQ(pe[i].second.dtype(), kFloat32);
    EXPECT_EQ(pe[i].second.grad().dtype(), kFloat32) << pe[i].first;
    EXPECT_TRUE(bitwise_equal(pe[i].second, pc[i].second)) << pe[i].first;
    EXPECT_TRUE(bitwise_equal(pe[i].second.grad(), pc[i].second.grad())) << pe[i].first << ".grad";
    for (const auto& [k, v] : e.opt->state(pe[i].second))
      EXPECT_TRUE(bitwise_equal(v, c.opt->state(pc[i].second).at(k))) << pe[i].first << " " << k;
  }
  EXPECT_EQ(cf->num_programs(), 1);
  EXPECT_GE(cf->compiled_calls(), 3);
}

// A compiled module evaluated under autocast: the program casts and matches eager.
TEST(CompileAutocast, CompiledModuleInferenceUnderAutocast) {
  manual_seed(3);
  auto model = nn::models::fashion_cnn();
  model->eval();
  auto cm = compile(model);
  Tensor x = randn({4, 1, 28, 28});
  InferenceMode im;
  AutocastGuard ac;
  Tensor want = (*model)(x);
  EXPECT_EQ(want.dtype(), kBFloat16);
  EXPECT_TRUE(bitwise_equal((*cm)(x), want));
  EXPECT_TRUE(bitwise_equal((*cm)(x), want));
}
