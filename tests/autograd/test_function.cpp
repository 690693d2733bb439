#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;
using autograd::AutogradContext;

namespace {
std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

struct Cube : autograd::Function<Cube> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x * x;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    Tensor x = ctx->get_saved_variables()[0];
    return {g[0] * x * x * 3.0};
  }
};

struct ScaleBy : autograd::Function<ScaleBy> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k, Tensor y) {
    ctx->saved_data["k"] = k;
    EXPECT_TRUE(ctx->needs_input_grad(0));
    EXPECT_FALSE(ctx->needs_input_grad(1));
    return x * k + y;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    double k = std::any_cast<double>(ctx->saved_data["k"]);
    return {g[0] * k, g[0]};
  }
};

struct TwoOutputs : autograd::Function<TwoOutputs> {
  static std::vector<Tensor> forward(AutogradContext* ctx, Tensor x) {
    ctx->set_materialize_grads(true);
    Tensor idx = zeros({2}, kInt64);
    Tensor doubled = x * 2.0;
    ctx->mark_non_differentiable({idx});
    return {doubled, idx};
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) {
    EXPECT_TRUE(g[1].defined());  // materialized zeros
    return {g[0] * 2.0};
  }
};

struct AddOneInplace : autograd::Function<AddOneInplace> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.add_(1.0);
    ctx->mark_dirty({x});
    return x;
  }
  static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0]}; }
};
}  // namespace

TEST(CustomFunction, ForwardBackwardAndDoubleBackward) {
  Tensor x = tensor({2.0, -1.0}).requires_grad_();
  Tensor y = Cube::apply(x);
  EXPECT_EQ(vals(y), (std::vector<double>{8, -1}));
  auto g = autograd::grad({y}, {x}, {ones({2}, kFloat64)}, true, true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{12, 3}));
  auto gg = autograd::grad({g[0]}, {x}, {ones({2}, kFloat64)});
  EXPECT_EQ(vals(gg[0]), (std::vector<double>{12, -6}));  // 6x
}

TEST(CustomFunction, NonTensorArgsAndNeedsInputGrad) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = tensor({5.0, 5.0});
  Tensor out = ScaleBy::apply(x, 3.0, y);
  out.backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 3}));
  EXPECT_FALSE(y.grad().defined());
}

TEST(CustomFunction, NonDifferentiableOutputsAndMaterializedGrads) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  auto outs = TwoOutputs::apply(x);
  EXPECT_FALSE(outs[1].requires_grad());
  outs[0].backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 2}));
}

TEST(CustomFunction, MarkDirty) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor a = x * 1.0;
  uint64_t v = a._version();
  Tensor b = AddOneInplace::apply(a);
  EXPECT_GT(a._version(), v);
  EXPECT_EQ(vals(a), (std::vector<double>{2, 3}));
  (b * 2.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 2}));
  Tensor leaf = tensor({1.0}).requires_grad_();
  EXPECT_THROW(AddOneInplace::apply(leaf), RuntimeError);
}

TEST(Gradcheck, PassesForCorrectRulesAndCatchesWrongOnes) {
  Tensor a = randn({3, 4}, kFloat64).requires_grad_();
  Tensor b = randn({4}, kFloat64).requires_grad_();
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * in[1] + in[0] - in[1] * 2.0}; };
  EXPECT_TRUE(autograd::gradcheck(fn, {a, b}));
  EXPECT_TRUE(autograd::gradgradcheck(fn, {a, b}));
  // Non-contiguous input.
  Tensor at = randn({4, 3}, kFloat64).t().requires_grad_();
  EXPECT_TRUE(autograd::gradcheck(fn, {at, b}));
  // A deliberately wrong custom backward is caught.
  struct Wrong : autograd::Function<Wrong> {
    static Tensor forward(AutogradContext*, Tensor x) { return x * x; }
    static std::vector<Tensor> backward(AutogradContext*, std::vector<Tensor> g) { return {g[0] * 3.0}; }
  };
  auto wrong = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{Wrong::apply(in[0])}; };
  autograd::GradcheckOptions o;
  o.raise_exception = false;
  EXPECT_FALSE(autograd::gradcheck(wrong, {b}, o));
  EXPECT_THROW(autograd::gradcheck(wrong, {b}), RuntimeError);
  Tensor f32 = randn({2}).requires_grad_();
  EXPECT_THROW(autograd::gradcheck(fn, {f32, f32}), TypeError);
}

TEST(Gradcheck, ViewOpsAndInplaceOnViews) {
  Tensor x = randn({3, 4}, kFloat64).requires_grad_();
  auto views = [](const std::vector<Tensor>& in) {
    Tensor t = in[0];
    return std::vector<Tensor>{t.t().slice(0, 1, 4, 2).unsqueeze(0).expand({2, 2, 3}) * 2.0,
                               t.diagonal(1) * t.select(1, 0).narrow(0, 0, 3),
                               t.permute({1, 0}).reshape({12}).view({2, 6}).squeeze(),
                               t.as_strided({2, 2}, {1, 4}, 1) * 1.0};
  };
  EXPECT_TRUE(autograd::gradcheck(views, {x}));
  EXPECT_TRUE(autograd::gradgradcheck(views, {x}));
  auto inplace = [](const std::vector<Tensor>& in) {
    Tensor b = in[0] * 1.0;
    b.select(0, 1).mul_(in[0].select(0, 2));
    b.slice(1, 0, 2).add_(in[0].slice(1, 2, 4), 3.0);
    Tensor buf = zeros({5, 4}, kFloat64);
    buf.narrow(0, 1, 3).copy_(b);
    return std::vector<Tensor>{buf * buf};
  };
  EXPECT_TRUE(autograd::gradcheck(inplace, {x}));
  EXPECT_TRUE(autograd::gradgradcheck(inplace, {x}));
}
