// Module full backward hooks (register_full_backward_hook / register_full_backward_pre_hook)
// with PyTorch's semantics. Expected values were printed by torch 1.13 for the same module
// and inputs (register_full_backward_pre_hook is PyTorch 2's; its cases are derived by
// hand from y = x W^T + b: a pre-hook scaling grad_output by k scales every gradient by k).
#include <gtest/gtest.h>

#include "nn_test_util.h"

using namespace tandem;
using namespace tandem::nn;
using nn::testing::expect_error;
using nn::testing::same_values;

namespace {

std::shared_ptr<Linear> fixed_linear() {
  auto lin = std::make_shared<Linear>(3, 2);
  NoGradGuard ng;
  lin->weight.copy_(tensor({{1.0, 2.0, 3.0}, {-1.0, 0.5, 2.0}}, kFloat32));
  lin->bias.copy_(tensor({0.5f, -1.f}));
  return lin;
}

const Tensor& upstream() {
  static Tensor c = tensor({{1.0, 2.0}, {-3.0, 0.5}}, kFloat32);
  return c;
}

Tensor input_requiring_grad() {
  Tensor x = tensor({{1.0, -2.0, 0.5}, {3.0, 1.0, -1.0}}, kFloat32);
  x.requires_grad_(true);
  return x;
}

TEST(BackwardHooks, FullHookSeesGradInputAndGradOutputAndMayReplaceGradInput) {
  auto lin = fixed_linear();
  Tensor x = input_requiring_grad();
  std::vector<Tensor> seen_in, seen_out;
  int calls = 0;
  HookHandle h = lin->register_full_backward_hook(
      [&](Module& m, const std::vector<Tensor>& gi, const std::vector<Tensor>& go) -> std::vector<Tensor> {
        EXPECT_EQ(&m, lin.get());
        ++calls;
        seen_in = gi;
        seen_out = go;
        return {gi[0] * 3.0};
      });
  Tensor y = (*lin)(x);
  EXPECT_EQ(calls, 0) << "backward hooks run in backward, not forward";
  EXPECT_TRUE(same_values(y, lin->forward(x)));
  (y * upstream()).sum().backward();
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(seen_in.size(), 1u);
  ASSERT_EQ(seen_out.size(), 1u);
  // torch 1.13: gi = [[-1, 3, 7], [-3.5, -5.75, -8]], go = c, x.grad = 3 * gi.
  EXPECT_TRUE(same_values(seen_in[0], tensor({{-1.0, 3.0, 7.0}, {-3.5, -5.75, -8.0}}, kFloat32)));
  EXPECT_TRUE(same_values(seen_out[0], upstream()));
  EXPECT_TRUE(same_values(x.grad(), tensor({{-3.0, 9.0, 21.0}, {-10.5, -17.25, -24.0}}, kFloat32)));
  // The parameters' gradients are not the hook's business (torch: w.grad, b.grad unchanged).
  EXPECT_TRUE(same_values(lin->weight.grad(), tensor({{-8.0, -5.0, 3.5}, {3.5, -3.5, 0.5}}, kFloat32)));
  EXPECT_TRUE(same_values(lin->bias.grad(), tensor({-2.f, 2.5f})));

  // Removed: gradients are the plain ones again.
  h.remove();
  h.remove();
  Tensor x2 = input_requiring_grad();
  ((*lin)(x2) * upstream()).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(same_values(x2.grad(), tensor({{-1.0, 3.0, 7.0}, {-3.5, -5.75, -8.0}}, kFloat32)));
}

TEST(BackwardHooks, PreHookMayReplaceGradOutputBeforeAnyGradientEntersTheModule) {
  auto lin = fixed_linear();
  Tensor x = input_requiring_grad();
  std::vector<std::string> order;
  lin->register_full_backward_pre_hook([&](Module&, const std::vector<Tensor>& go) -> std::vector<Tensor> {
    order.push_back("pre1");
    EXPECT_TRUE(same_values(go[0], upstream()));
    return {go[0] * 2.0};
  });
  lin->register_full_backward_pre_hook([&](Module&, const std::vector<Tensor>& go) -> std::vector<Tensor> {
    order.push_back("pre2");
    EXPECT_TRUE(same_values(go[0], upstream() * 2.0)) << "later pre-hooks see the replacement";
    return {};  // keep
  });
  lin->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>& gi, const std::vector<Tensor>& go) -> std::vector<Tensor> {
        order.push_back("full");
        EXPECT_TRUE(same_values(go[0], upstream() * 2.0)) << "full hooks see the replaced grad_output";
        EXPECT_TRUE(same_values(gi[0], tensor({{-2.0, 6.0, 14.0}, {-7.0, -11.5, -16.0}}, kFloat32)));
        return {};
      });
  ((*lin)(x) * upstream()).sum().backward();
  EXPECT_EQ(order, (std::vector<std::string>{"pre1", "pre2", "full"}));
  // Every gradient behind the module doubles: grad_output flows into the parameters too.
  EXPECT_TRUE(same_values(x.grad(), tensor({{-2.0, 6.0, 14.0}, {-7.0, -11.5, -16.0}}, kFloat32)));
  EXPECT_TRUE(same_values(lin->weight.grad(), tensor({{-16.0, -10.0, 7.0}, {7.0, -7.0, 1.0}}, kFloat32)));
  EXPECT_TRUE(same_values(lin->bias.grad(), tensor({-4.f, 5.f})));
}

TEST(BackwardHooks, NoInputRequiringGradRunsTheHooksWithUndefinedGradInput) {
  // torch 1.13: gi = (None,), go = [[1, 2]], weight.grad = [[1, -2, 0.5], [2, -4, 1]].
  auto lin = fixed_linear();
  Tensor x = tensor({{1.0, -2.0, 0.5}}, kFloat32);
  int calls = 0;
  lin->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>& gi, const std::vector<Tensor>& go) -> std::vector<Tensor> {
        ++calls;
        EXPECT_EQ(gi.size(), 1u);
        EXPECT_FALSE(gi[0].defined());
        EXPECT_TRUE(same_values(go[0], tensor({{1.0, 2.0}}, kFloat32)));
        return {};
      });
  ((*lin)(x) * tensor({{1.0, 2.0}}, kFloat32)).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(same_values(lin->weight.grad(), tensor({{1.0, -2.0, 0.5}, {2.0, -4.0, 1.0}}, kFloat32)));

  // Returning a gradient there is an error (PyTorch: "should always return None").
  auto lin2 = fixed_linear();
  lin2->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) -> std::vector<Tensor> {
        return {ones({1, 3})};
      });
  Tensor y = (*lin2)(x).sum();
  expect_error<RuntimeError>([&] { y.backward(); }, {"Linear", "no input requires grad"});
}

TEST(BackwardHooks, WrongNumberOfGradientsIsAnError) {
  auto lin = fixed_linear();
  lin->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>& gi, const std::vector<Tensor>&) -> std::vector<Tensor> {
        return {gi[0], gi[0]};
      });
  Tensor y = (*lin)(input_requiring_grad()).sum();
  expect_error<RuntimeError>([&] { y.backward(); }, {"Linear", "returned 2 grad_input entries, expected 1"});

  auto lin2 = fixed_linear();
  lin2->register_full_backward_pre_hook(
      [&](Module&, const std::vector<Tensor>&) -> std::vector<Tensor> { return {Tensor(), Tensor()}; });
  Tensor y2 = (*lin2)(input_requiring_grad()).sum();
  expect_error<RuntimeError>([&] { y2.backward(); }, {"Linear", "returned 2 grad_output entries, expected 1"});

  auto lin3 = fixed_linear();
  lin3->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) -> std::vector<Tensor> {
        return {ones({5})};
      });
  Tensor y3 = (*lin3)(input_requiring_grad()).sum();
  expect_error<ShapeError>([&] { y3.backward(); }, {"shape"});
}

TEST(BackwardHooks, ListCallsAndInputsWithoutGrad) {
  // Bilinear takes two inputs: grad_input has one entry per input, undefined for the one
  // that does not require grad (PyTorch: None).
  manual_seed(0);
  auto bil = std::make_shared<Bilinear>(2, 3, 2);
  Tensor a = randn({4, 2}), b = randn({4, 3});
  a.requires_grad_(true);
  std::vector<Tensor> gi_seen;
  bil->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>& gi, const std::vector<Tensor>& go) -> std::vector<Tensor> {
        gi_seen = gi;
        EXPECT_EQ(go.size(), 1u);
        return {gi[0] * 0.0, ones({4, 3})};  // the second entry is ignored: b needs no gradient
      });
  std::vector<Tensor> out = (*bil)(std::vector<Tensor>{a, b});
  out[0].sum().backward();
  ASSERT_EQ(gi_seen.size(), 2u);
  EXPECT_TRUE(gi_seen[0].defined());
  EXPECT_FALSE(gi_seen[1].defined());
  EXPECT_EQ(a.grad().abs().sum().item<float>(), 0.f);
  EXPECT_FALSE(b.grad().defined());
}

TEST(BackwardHooks, HooksRegisteredAfterTheCallDoNotRunAndNoGradCallsSetNothingUp) {
  auto lin = fixed_linear();
  Tensor x = input_requiring_grad();
  Tensor y = (*lin)(x);
  int calls = 0;
  lin->register_full_backward_hook([&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) {
    ++calls;
    return std::vector<Tensor>{};
  });
  y.sum().backward();
  EXPECT_EQ(calls, 0) << "the hooks of a call are those registered when it was made";
  {
    NoGradGuard ng;
    Tensor z = (*lin)(x);
    EXPECT_FALSE(z.requires_grad());
  }
  Tensor x2 = input_requiring_grad();
  (*lin)(x2).sum().backward();
  EXPECT_EQ(calls, 1);
  // Versions change, so compiled modules notice the new hooks.
  uint64_t v = lin->hooks_version();
  auto h = lin->register_full_backward_pre_hook([](Module&, const std::vector<Tensor>&) { return std::vector<Tensor>{}; });
  EXPECT_NE(lin->hooks_version(), v);
  v = lin->hooks_version();
  h.remove();
  EXPECT_NE(lin->hooks_version(), v);
}

TEST(BackwardHooks, ChildHooksRunInsideAParentAndCompiledModulesStayCorrect) {
  manual_seed(1);
  auto lin = std::make_shared<Linear>(3, 3);
  auto seq = std::make_shared<Sequential>(std::vector<ModulePtr>{lin, std::make_shared<ReLU>()});
  int calls = 0;
  lin->register_full_backward_hook(
      [&](Module&, const std::vector<Tensor>& gi, const std::vector<Tensor>&) -> std::vector<Tensor> {
        ++calls;
        return {gi[0] * 0.0};
      });
  Tensor x = randn({2, 3});
  x.requires_grad_(true);
  (*seq)(x).sum().backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x.grad().abs().sum().item<float>(), 0.f);
  // Compiled: the hooks live in the autograd graph, so the call runs eagerly and the hook
  // still runs (never a silently skipped hook).
  auto compiled = tandem::compile(seq);
  Tensor x2 = randn({2, 3});
  x2.requires_grad_(true);
  Tensor y2 = (*compiled)(x2);
  y2.sum().backward();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(x2.grad().abs().sum().item<float>(), 0.f);
}

TEST(BackwardHooks, AModuleDestroyedBeforeBackwardIsSkipped) {
  int calls = 0;
  Tensor x = input_requiring_grad();
  Tensor y;
  {
    auto lin = fixed_linear();
    lin->register_full_backward_hook([&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>&) {
      ++calls;
      return std::vector<Tensor>{};
    });
    y = (*lin)(x);
  }
  y.sum().backward();  // no use after free
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(x.grad().defined());
}

}  // namespace
