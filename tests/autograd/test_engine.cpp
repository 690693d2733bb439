#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;

namespace {
std::vector<double> vals(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}
}  // namespace

TEST(Autograd, AddMulBroadcastGradients) {
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor w = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}).requires_grad_();
  Tensor y = (x * w + x * 2.0).sum_to_size({1, 1}).view({});
  y.backward();
  // dy/dx = column sums of w + 2 * (2 rows); dy/dw = x broadcast
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{9, 11, 13}));  // column sums of w + 2 per row
  EXPECT_EQ(vals(w.grad()), (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  ASSERT_NE(y.grad_fn(), nullptr);
}

TEST(Autograd, AccumulatesOverTwoBackwards) {
  Tensor x = tensor({2.0}).requires_grad_();
  (x * x).view({}).backward();
  (x * x).view({}).backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{8}));
}

TEST(Autograd, SecondBackwardThroughFreedGraphRaises) {
  Tensor x = tensor({2.0}).requires_grad_();
  Tensor y = (x * x).view({});
  y.backward();
  EXPECT_THROW(y.backward(), RuntimeError);
  Tensor z = (x * x).view({});
  z.backward(Tensor(), true);
  EXPECT_NO_THROW(z.backward());
}

TEST(Autograd, NonScalarNeedsGradient) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 3.0;
  EXPECT_THROW(y.backward(), RuntimeError);
  y.backward(ones({2}));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{3, 3}));
  EXPECT_THROW((x * 1.0).backward(ones({3})), ShapeError);
}

TEST(Autograd, GradFunctionDoesNotTouchDotGrad) {
  Tensor x = tensor({3.0}).requires_grad_();
  Tensor y = (x * x * x).view({});
  auto g = autograd::grad({y}, {x}, {}, true, true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{27}));  // 3x^2
  EXPECT_FALSE(x.grad().defined());
  auto g2 = autograd::grad({g[0].view({})}, {x});
  EXPECT_EQ(vals(g2[0]), (std::vector<double>{18}));  // 6x
  Tensor unused = tensor({1.0}).requires_grad_();
  Tensor y2 = (x * 2.0).view({});
  EXPECT_THROW(autograd::grad({y2}, {unused}, {}, true), RuntimeError);
  auto g3 = autograd::grad({y2}, {unused}, {}, true, false, true);
  EXPECT_FALSE(g3[0].defined());
}

TEST(Autograd, ViewsFlowIntoBase) {
  Tensor x = arange(6, kFloat64).view({2, 3}).requires_grad_();
  Tensor y = x.t().slice(0, 1, 3).select(1, 1) * 10.0;  // x[1, 1:3] * 10
  y.backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{0, 0, 0, 0, 10, 10}));
}

TEST(Autograd, InplaceOnLeafRaises) {
  Tensor x = ones({3}).requires_grad_();
  EXPECT_THROW(x.add_(ones({3})), RuntimeError);
  EXPECT_THROW(x.slice(0, 0, 2).mul_(2.0), RuntimeError);
  NoGradGuard ng;
  EXPECT_NO_THROW(x.add_(ones({3})));  // fine without recording (optimizer updates)
}

TEST(Autograd, InplaceModifiedSavedTensorRaises) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor a = x * 1.0;
  Tensor b = a * a;  // saves a
  a.mul_(2.0);
  try {
    b.backward(ones({2}, kFloat64));
    FAIL() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("MulBackward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inplace"), std::string::npos) << e.what();
  }
}

TEST(Autograd, InplaceOnViewUpdatesBaseHistory) {
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).requires_grad_();
  Tensor b = x * 1.0;
  b.slice(0, 1, 3).mul_(3.0);  // b = [x0, 3x1, 3x2, x3]
  Tensor y = b * tensor({1.0, 10.0, 100.0, 1000.0});
  y.backward(ones({4}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1, 30, 300, 1000}));
}

TEST(Autograd, InplaceCopyIntoViewOfNonGradBase) {
  Tensor x = tensor({5.0, 6.0}).requires_grad_();
  Tensor buf = zeros({4}, kFloat64);
  buf.slice(0, 1, 3).copy_(x * 2.0);
  ASSERT_TRUE(buf.requires_grad());
  (buf * tensor({1.0, 2.0, 3.0, 4.0})).backward(ones({4}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{4, 6}));
}

TEST(Autograd, HooksReplaceGradient) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x * 2.0;
  auto h = y.register_hook([](const Tensor& g) { return g * 10.0; });
  (y * 1.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{20, 20}));
  h.remove();
  x.set_grad(Tensor());
  Tensor y2 = x * 2.0;
  y2.backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 2}));
}

TEST(Autograd, LeafHooksRegisteredBeforeTheGraphRunAndCanBeRemoved) {
  // Hooks registered before any graph uses the leaf reach the AccumulateGrad node made
  // later (PyTorch keeps them on the tensor).
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  int calls = 0;
  auto h = x.register_hook([&](const Tensor& g) {
    ++calls;
    return g * 3.0;
  });
  (x * 2.0).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{6, 6}));
  auto g = autograd::grad({(x * 1.0).sum()}, {x});
  EXPECT_EQ(vals(g[0]), (std::vector<double>{3, 3}));
  EXPECT_EQ(calls, 2);
  h.remove();
  x.set_grad(Tensor());
  (x * 2.0).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{2, 2}));
  EXPECT_EQ(calls, 2);
}

TEST(Autograd, ALeafKeepsOneAccumulateGradNodeAndAGraphDoesNotKeepTheLeaf) {
  // The leaf holds its node (no node made and freed per op); the node refers to the leaf
  // weakly, so the leaf dies with its last handle even while a graph still uses it.
  Tensor y;
  int calls = 0;
  std::shared_ptr<autograd::Node> node;
  {
    Tensor w = full({1024}, 3.0f).requires_grad_();
    node = autograd::gradient_edge(w).node;
    { Tensor t = w * 2.0; }  // a graph made and dropped
    EXPECT_EQ(autograd::gradient_edge(w).node, node);
    EXPECT_EQ(static_cast<autograd::AccumulateGrad&>(*node).variable().impl(), w.impl());
    w.register_hook([&](const Tensor& g) {
      ++calls;
      return g;
    });
    y = w.sum();  // sum saves no tensor: only the AccumulateGrad node refers to w
  }
  EXPECT_FALSE(static_cast<autograd::AccumulateGrad&>(*node).variable().defined()) << "the graph kept the leaf alive";
  y.backward();  // reaches the dead leaf's node: its hook runs, the gradient is dropped
  EXPECT_EQ(calls, 1);
}

TEST(Autograd, RetainGradAndPostAccumulateHook) {
  Tensor x = tensor({1.0, 2.0}).requires_grad_();
  int calls = 0;
  auto h = autograd::register_post_accumulate_grad_hook(x, [&](Tensor& leaf) {
    ++calls;
    EXPECT_TRUE(leaf.grad().defined());
  });
  Tensor y = x * 3.0;
  y.retain_grad();
  (y * y).backward(ones({2}, kFloat64));
  EXPECT_EQ(vals(y.grad()), (std::vector<double>{6, 12}));
  EXPECT_EQ(calls, 1);
  h.remove();
  (x * 1.0).backward(ones({2}, kFloat64));
  EXPECT_EQ(calls, 1);
}

// queue_callback: callbacks run after the whole graph (every leaf's .grad is in place), in
// the order queued, once; one queued by a callback runs too; a nested backward inside a
// hook runs its own; a throwing callback ends backward() with its error; outside a
// backward it raises.
TEST(Autograd, QueuedCallbacksRunAfterTheGraphInOrder) {
  Tensor a = tensor({1.0, 2.0}).requires_grad_(), b = tensor({3.0}).requires_grad_();
  std::vector<std::string> log;
  auto h = autograd::register_post_accumulate_grad_hook(a, [&](Tensor&) {
    log.push_back("a accumulated");
    autograd::queue_callback([&] {
      // b's gradient flows through a later node than a's: it must be done by now.
      log.push_back(b.grad().defined() ? "first: b done" : "first: b missing");
      autograd::queue_callback([&] { log.push_back("queued by a callback"); });
    });
    autograd::queue_callback([&] { log.push_back("second"); });
    // A nested backward runs (and drains) its own callbacks before it returns.
    EnableGradGuard grad_on;  // hooks run with grad mode off, as in torch
    Tensor z = tensor({5.0}).requires_grad_();
    autograd::backward({(z * 2.0).sum()}, {}, std::nullopt, false);
    autograd::queue_callback([&] { log.push_back("after nested"); });
  });
  Tensor y = (a * 2.0).sum() + (b * b).sum() * 1.0;
  y.backward();
  EXPECT_EQ(log, (std::vector<std::string>{"a accumulated", "first: b done", "second", "after nested",
                                           "queued by a callback"}));
  EXPECT_EQ(vals(b.grad()), (std::vector<double>{6}));
  h.remove();

  // Callbacks do not outlive their backward: the next one runs none of them.
  log.clear();
  (a * 1.0).sum().backward();
  EXPECT_TRUE(log.empty());

  // A throwing callback ends backward() with its error; the ones after it are dropped.
  bool later_ran = false;
  auto h2 = autograd::register_post_accumulate_grad_hook(a, [&](Tensor&) {
    autograd::queue_callback([] { throw ValueError("callback failed on purpose"); });
    autograd::queue_callback([&] { later_ran = true; });
  });
  EXPECT_THROW((a * 1.0).sum().backward(), ValueError);
  EXPECT_FALSE(later_ran);
  h2.remove();

  EXPECT_THROW(autograd::queue_callback([] {}), RuntimeError);
}

TEST(Autograd, NoGradAndInferenceMode) {
  Tensor x = ones({2}).requires_grad_();
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2.0).requires_grad());
    {
      EnableGradGuard e;
      EXPECT_TRUE((x * 2.0).requires_grad());
    }
  }
  {
    InferenceMode im;
    Tensor y = zeros({2});
    uint64_t v = y._version();
    y.add_(ones({2}));
    EXPECT_EQ(y._version(), v);
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_TRUE((x * 2.0).requires_grad());
}

TEST(Autograd, DeepChainIsIterative) {
  Tensor x = tensor({1.0}).requires_grad_();
  Tensor y = x;
  for (int i = 0; i < 100000; ++i) y = y + 1.0;
  y.view({}).backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<double>{1}));
  y = Tensor();  // destroying the 100k-node graph must not overflow the stack either
}

TEST(Autograd, MemoryReturnsAfterBackward) {
  Tensor w = randn({64, 64}).requires_grad_();
  (void)w;
  auto before = memory::stats().bytes_in_use;
  {
    Tensor y = (w * w * 3.0 + w).sum_to_size({1, 1}).view({});
    y.backward();
  }
  // Only .grad (64x64 float) remains.
  auto after = memory::stats().bytes_in_use;
  EXPECT_LE(after - before, static_cast<int64_t>(cpu_allocator_round_size(64 * 64 * 4)));
}

TEST(Autograd, OverwritingInPlaceCutsHistory) {
  // fill_/zero_/copy_ of a constant into a tensor with history: the old values get a zero
  // gradient (PyTorch's FillBackward/CopyBackwards), for whole tensors and for views.
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor g3 = ones({3}, kFloat64);
  Tensor a = x * 2.0;
  a.zero_();
  EXPECT_EQ(vals(autograd::grad({a}, {x}, {g3})[0]), (std::vector<double>{0, 0, 0}));
  Tensor b = x * 2.0;
  b.copy_(tensor({5.0, 6.0, 7.0}));
  EXPECT_EQ(vals(autograd::grad({b}, {x}, {g3})[0]), (std::vector<double>{0, 0, 0}));
  Tensor c = x * 2.0;
  c.slice(0, 0, 2).fill_(1.0);
  EXPECT_EQ(vals(autograd::grad({c}, {x}, {g3})[0]), (std::vector<double>{0, 0, 2}));
  Tensor d = x * 2.0;
  d.slice(0, 1, 3).copy_(tensor({0.5, 0.5}));
  EXPECT_EQ(vals(autograd::grad({d}, {x}, {g3})[0]), (std::vector<double>{2, 0, 0}));
}

TEST(Autograd, WrittenViewUsedDirectlyAsRootOrGradFn) {
  // A view written in place is itself a backward root: its history is regenerated from
  // the base (not the stale view history from before the write).
  Tensor x = tensor({1.0, 2.0, 3.0, 4.0}).view({2, 2}).requires_grad_();
  Tensor base = x * 1.0;
  Tensor v = base.t();
  v.mul_(3.0);
  ASSERT_NE(v.grad_fn(), nullptr);
  EXPECT_EQ(vals(autograd::grad({v}, {x}, {ones({2, 2}, kFloat64)})[0]), (std::vector<double>{3, 3, 3, 3}));
  // Double backward through an overwritten view region: the seed no longer reaches x.
  Tensor s = tensor({1.0, 2.0}).requires_grad_();
  Tensor y = x.view({4}) * 1.0;
  Tensor w = y.slice(0, 0, 2);
  w.div_(2.0, "floor");
  auto g = autograd::grad({w}, {x}, {s}, true, true);
  EXPECT_EQ(vals(g[0]), (std::vector<double>{0, 0, 0, 0}));
  if (g[0].requires_grad()) {
    auto gs = autograd::grad({g[0]}, {s}, {ones({2, 2}, kFloat64)}, true, false, true);
    std::vector<double> got = gs[0].defined() ? vals(gs[0]) : std::vector<double>{0, 0};
    EXPECT_EQ(got, (std::vector<double>{0, 0}));
  }
}
