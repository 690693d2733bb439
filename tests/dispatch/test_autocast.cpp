// Autocast (issue 16): the cast policy on each OpDef, applied by the dispatcher; casts are
// recorded `_to_copy` ops (autograd differentiates through them), nestable guards, and the
// weight cast cache of one autocast region.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

// Counts the `_to_copy` calls dispatched while installed.
struct CastCounter : DispatchObserver {
  int casts = 0;
  std::vector<DType> to;
  void on_exit(const OpDef& op, ArrayRef<Tensor>, ArrayRef<AttrValue>, ArrayRef<Tensor> outputs, int) override {
    if (op.name == "_to_copy") {
      ++casts;
      to.push_back(outputs[0].dtype());
    }
  }
};

Tensor rnd(std::vector<int64_t> sizes, DType dt = kFloat32) { return randn(sizes).to(dt); }

}  // namespace

// The lists are data on the OpDefs: the ops PyTorch 1.13 lists for CPU and the ones tandem
// adds (docs/ARCHITECTURE.md, "Mixed precision").
TEST(Autocast, PolicyIsDataOnEachOpDef) {
  const std::map<std::string, Autocast> expected = {
      {"mm", Autocast::LowerPrecision},        {"bmm", Autocast::LowerPrecision},
      {"addmm", Autocast::LowerPrecision},     {"baddbmm", Autocast::LowerPrecision},
      {"matmul", Autocast::LowerPrecision},    {"linear", Autocast::LowerPrecision},
      {"conv1d", Autocast::LowerPrecision},    {"conv2d", Autocast::LowerPrecision},
      {"conv_transpose2d", Autocast::LowerPrecision},
      {"softmax", Autocast::Float32},          {"log_softmax", Autocast::Float32},
      {"cross_entropy", Autocast::Float32},    {"nll_loss", Autocast::Float32},
      {"mse_loss", Autocast::Float32},         {"binary_cross_entropy", Autocast::Float32},
      {"layer_norm", Autocast::Float32},       {"native_layer_norm", Autocast::Float32},
      {"group_norm", Autocast::Float32},       {"exp", Autocast::Float32},
      {"log", Autocast::Float32},              {"pow", Autocast::Float32},
      {"sum", Autocast::Float32},              {"prod", Autocast::Float32},
      {"cumsum", Autocast::Float32},           {"logsumexp", Autocast::Float32},
      {"cat", Autocast::Promote},              {"stack", Autocast::Promote},
      {"where", Autocast::Promote},            {"index_copy", Autocast::Promote},
      {"add", Autocast::None},                 {"relu", Autocast::None},
      {"max_pool2d", Autocast::None},          {"native_batch_norm", Autocast::None},
      {"_to_copy", Autocast::None},            {"sqrt", Autocast::None},
  };
  for (const auto& [name, policy] : expected)
    EXPECT_EQ(static_cast<int>(get_op(name).autocast), static_cast<int>(policy)) << name;
  // In-place variants never autocast (self keeps its dtype), whatever the functional op does.
  int listed = 0;
  for (const OpDef* op : all_ops()) {
    if (op->is_inplace) {
      EXPECT_EQ(op->autocast, Autocast::None) << op->name;
    }
    listed += op->autocast != Autocast::None;
  }
  EXPECT_GE(listed, 50);
}

TEST(Autocast, OpsRunInTheListedDtype) {
  Tensor a = rnd({8, 16}), b = rnd({16, 4}), x = rnd({2, 3, 8, 8}), w = rnd({5, 3, 3, 3});
  Tensor h = rnd({4, 10}, kBFloat16);
  Tensor y = randint(0, 10, {4});
  AutocastGuard ac(kBFloat16);
  EXPECT_TRUE(is_autocast_enabled());
  EXPECT_EQ(autocast_dtype(), kBFloat16);
  EXPECT_EQ(mm(a, b).dtype(), kBFloat16);
  EXPECT_EQ(matmul(a, b).dtype(), kBFloat16);
  EXPECT_EQ(linear(a, b.t(), rnd({4})).dtype(), kBFloat16);
  EXPECT_EQ(conv2d(x, w, rnd({5})).dtype(), kBFloat16);
  // float32 policy: bfloat16 inputs come out float32.
  EXPECT_EQ(softmax(h, 1).dtype(), kFloat32);
  EXPECT_EQ(log_softmax(h, 1).dtype(), kFloat32);
  EXPECT_EQ(cross_entropy(h, y).dtype(), kFloat32);
  EXPECT_EQ(exp(h).dtype(), kFloat32);
  EXPECT_EQ(sum(h).dtype(), kFloat32);
  // Unlisted ops follow their inputs.
  EXPECT_EQ(relu(h).dtype(), kBFloat16);
  EXPECT_EQ(add(h, h).dtype(), kBFloat16);
  // Promote: the widest floating input.
  EXPECT_EQ(cat({h, h}).dtype(), kBFloat16);
  EXPECT_EQ(cat({h, rnd({4, 10})}).dtype(), kFloat32);
  EXPECT_EQ(stack({rnd({3}), rnd({3}, kBFloat16)}).dtype(), kFloat32);
  // Not eligible: float64 and integer tensors are never cast.
  EXPECT_EQ(mm(rnd({3, 3}, kFloat64), rnd({3, 3}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(mm(ones({2, 2}, kInt64), ones({2, 2}, kInt64)).dtype(), kInt64);
}

// Values: exactly the op on inputs cast by hand.
TEST(Autocast, ValuesAreTheOpOnCastInputs) {
  Tensor a = rnd({33, 70}), b = rnd({70, 20}), x = rnd({2, 3, 9, 9}), w = rnd({4, 3, 3, 3}), c = rnd({4});
  Tensor want_mm = mm(a.to(kBFloat16), b.to(kBFloat16));
  Tensor want_conv = conv2d(x.to(kBFloat16), w.to(kBFloat16), c.to(kBFloat16));
  Tensor h = rnd({5, 7}, kBFloat16);
  Tensor want_sm = softmax(h.to(kFloat32), 1);
  AutocastGuard ac;
  EXPECT_TRUE(bitwise_equal(mm(a, b), want_mm));
  EXPECT_TRUE(bitwise_equal(conv2d(x, w, c), want_conv));
  EXPECT_TRUE(bitwise_equal(softmax(h, 1), want_sm));
  // Against float32 at bfloat16 tolerance: the product accumulates in float32.
  Tensor ref = mm(a.to(kBFloat16).to(kFloat32), b.to(kBFloat16).to(kFloat32));
  EXPECT_LE(max(abs(sub(mm(a, b).to(kFloat32), ref))).item<double>(), 1e-2 * max(abs(ref)).item<double>());
}

TEST(Autocast, Float16) {
  Tensor a = rnd({6, 8}), b = rnd({8, 3}), x = rnd({1, 2, 6, 6}), w = rnd({3, 2, 3, 3});
  AutocastGuard ac(kFloat16);
  EXPECT_EQ(autocast_dtype(), kFloat16);
  Tensor r = mm(a, b);
  EXPECT_EQ(r.dtype(), kFloat16);
  EXPECT_TRUE(bitwise_equal(r, mm(a.to(kFloat16), b.to(kFloat16))));
  EXPECT_EQ(conv2d(x, w).dtype(), kFloat16);
  EXPECT_EQ(max_pool2d(conv2d(x, w), {2, 2}).dtype(), kFloat16);
  EXPECT_EQ(log_softmax(r, 1).dtype(), kFloat32);
}

TEST(Autocast, GuardsNestAndDisable) {
  Tensor a = rnd({4, 4});
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(mm(a, a).dtype(), kFloat32);
  {
    AutocastGuard outer(kBFloat16);
    EXPECT_EQ(mm(a, a).dtype(), kBFloat16);
    {
      AutocastGuard off(kBFloat16, /*enabled=*/false);
      EXPECT_FALSE(is_autocast_enabled());
      EXPECT_EQ(mm(a, a).dtype(), kFloat32);
      {
        AutocastGuard half(kFloat16);
        EXPECT_EQ(mm(a, a).dtype(), kFloat16);
      }
      EXPECT_EQ(mm(a, a).dtype(), kFloat32);
    }
    EXPECT_TRUE(is_autocast_enabled());
    EXPECT_EQ(mm(a, a).dtype(), kBFloat16);
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_EQ(mm(a, a).dtype(), kFloat32);
  EXPECT_THROW(AutocastGuard bad(kFloat32), ValueError);
  try {
    AutocastGuard bad(kInt64);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[autocast]"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(is_autocast_enabled());
}

// The casts are ops: an observer sees them, autograd differentiates through them, so the
// gradient of a float32 leaf is float32 and equals the hand-cast computation's.
TEST(Autocast, CastsAreRecordedOpsAndGradientsKeepTheLeafDtype) {
  Tensor x = rnd({6, 5}), w = rnd({5, 3}).requires_grad_(true);
  Tensor got;
  CastCounter counter;
  {
    ObserverGuard og(&counter);
    AutocastGuard ac;
    Tensor y = mm(x, w);
    EXPECT_EQ(y.dtype(), kBFloat16);
    EXPECT_TRUE(y.requires_grad());
    got = sum(y);  // float32 policy
  }
  EXPECT_EQ(counter.casts, 3);  // x, w to bfloat16; y to float32 for sum
  EXPECT_EQ(counter.to, (std::vector<DType>{kBFloat16, kBFloat16, kFloat32}));
  EXPECT_EQ(got.dtype(), kFloat32);
  got.backward();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  Tensor w2 = w.detach().requires_grad_(true);
  sum(mm(x.to(kBFloat16), w2.to(kBFloat16)).to(kFloat32)).backward();
  EXPECT_TRUE(bitwise_equal(w.grad(), w2.grad()));
}

// Backward rules run with autocast off even when backward() is called inside the region:
// the bias gradient of linear (a `sum` over the batch, an op on the float32 list) stays a
// bfloat16 sum, as when backward() runs outside the region.
TEST(Autocast, BackwardInsideTheRegionMatchesOutside) {
  Tensor x = rnd({16, 6}), w = rnd({5, 6}).requires_grad_(true), b = rnd({5}).requires_grad_(true);
  Tensor w2 = w.detach().requires_grad_(true), b2 = b.detach().requires_grad_(true);
  {
    AutocastGuard ac;
    Tensor l = sum(relu(linear(x, w, b)));
    l.backward();
  }
  Tensor l2;
  {
    AutocastGuard ac;
    l2 = sum(relu(linear(x, w2, b2)));
  }
  l2.backward();
  EXPECT_EQ(w.grad().dtype(), kFloat32);
  EXPECT_EQ(b.grad().dtype(), kFloat32);
  EXPECT_TRUE(bitwise_equal(w.grad(), w2.grad()));
  EXPECT_TRUE(bitwise_equal(b.grad(), b2.grad()));
  // The bias gradient was rounded to bfloat16 (the backward of a bfloat16 add), so it is
  // not the float32 sum of the same bfloat16 gradients.
  EXPECT_TRUE(bitwise_equal(b.grad(), b.grad().to(kBFloat16).to(kFloat32)));
}

// PyTorch's weight cast cache: a float32 leaf requiring grad is cast once per region; its
// gradient flows through that one cast. Inputs that are not such leaves are cast each time.
TEST(Autocast, WeightCastCacheCastsAParameterOncePerRegion) {
  Tensor x = rnd({3, 4}), w = rnd({4, 4}).requires_grad_(true);
  CastCounter counter;
  {
    ObserverGuard og(&counter);
    AutocastGuard ac;
    Tensor y = mm(mm(x, w), w);
    EXPECT_EQ(autocast::cache_size(), 1);
    (void)y;
    {
      AutocastGuard inner(kBFloat16, false);  // nesting: the cache survives inner guards
    }
    EXPECT_EQ(autocast::cache_size(), 1);
  }
  EXPECT_EQ(autocast::cache_size(), 0);  // cleared with the outermost guard
  EXPECT_EQ(counter.casts, 2);           // x once, w once (cached for the second mm)
  {
    AutocastGuard ac(kBFloat16, true, /*cache_enabled=*/false);
    mm(mm(x, w), w);
    EXPECT_EQ(autocast::cache_size(), 0);
  }
}

// tandem's cache also checks the source's version: an in-place update inside the region
// (an optimizer step) casts again, where a stale cast would give the old weight's product.
TEST(Autocast, WeightCastCacheSeesInPlaceUpdates) {
  Tensor x = rnd({3, 4}), w = rnd({4, 4}).requires_grad_(true);
  AutocastGuard ac;
  Tensor before = mm(x, w);
  {
    NoGradGuard ng;
    w.add_(1.0);
  }
  Tensor after = mm(x, w);
  EXPECT_FALSE(bitwise_equal(before, after));
  EXPECT_TRUE(bitwise_equal(after, mm(x.to(kBFloat16), w.detach().to(kBFloat16))));
  // A cast made under no_grad has no history: not reused once grad mode is back.
  Tensor v = rnd({4, 4}).requires_grad_(true);
  {
    NoGradGuard ng;
    EXPECT_FALSE(mm(x, v).requires_grad());
  }
  EXPECT_TRUE(mm(x, v).requires_grad());
}

// A composite op on a list runs its body with autocast off (PyTorch excludes the autocast
// key while a listed op runs): cross_entropy's log_softmax and nll_loss see float32.
TEST(Autocast, ListedCompositeRunsItsBodyWithoutAutocast) {
  Tensor logits = rnd({4, 10}, kBFloat16), y = randint(0, 10, {4});
  CastCounter counter;
  Tensor got;
  {
    ObserverGuard og(&counter);
    AutocastGuard ac;
    got = cross_entropy(logits, y);
  }
  EXPECT_EQ(counter.casts, 1);
  EXPECT_TRUE(bitwise_equal(got, cross_entropy(logits.to(kFloat32), y)));
}
