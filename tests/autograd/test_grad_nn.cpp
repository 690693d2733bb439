// Gradients of the nn ops: gradcheck (float64 finite differences) for every backward rule,
// gradgradcheck where double backward is implemented (norms and losses included),
// and gradient values / running-stat updates against PyTorch (tests/data/nn_grad.json,
// written by tests/oracle/gen_nn.py).
#include <gtest/gtest.h>

#include <fstream>

#include "support/grad_helpers.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::Fn;
using tandem_test::wrap;
using tandem_test::expect_same_first_derivative;
using autograd::gradcheck;
using autograd::gradgradcheck;
using nlohmann::json;

namespace {

Tensor leaf(IntArrayRef sizes, uint64_t seed, double scale = 1.0, double shift = 0.0) {
  manual_seed(seed);
  return (randn(sizes, kFloat64) * scale + shift).detach().requires_grad_();
}

void check(Fn f, const std::vector<Tensor>& in, bool second = true, double atol = 1e-5) {
  autograd::GradcheckOptions o;
  o.atol = atol;
  EXPECT_TRUE(gradcheck(wrap(f), in, o));
  if (second) {
    EXPECT_TRUE(gradgradcheck(wrap(f), in, o));
    expect_same_first_derivative(f, in);
  }
}

Tensor probs(IntArrayRef sizes, uint64_t seed) {
  manual_seed(seed);
  return (rand(sizes, kFloat64) * 0.8 + 0.1).detach();
}

}  // namespace

// ---------------------------------------------------------------- softmax family
TEST(GradNN, Softmax) {
  Tensor x = leaf({3, 4}, 1);
  check([](auto& v) { return softmax(v[0], 1); }, {x});
  check([](auto& v) { return softmax(v[0], 0); }, {x});
  Tensor x3 = leaf({2, 3, 2}, 2);
  check([](auto& v) { return softmax(v[0], 1); }, {x3});
  check([](auto& v) { return v[0].softmax(-1) * v[0]; }, {x3});
}

TEST(GradNN, LogSoftmax) {
  Tensor x = leaf({3, 4}, 3);
  check([](auto& v) { return log_softmax(v[0], 1); }, {x});
  Tensor x3 = leaf({2, 3, 2}, 4);
  check([](auto& v) { return log_softmax(v[0], 1); }, {x3});
  check([](auto& v) { return log_softmax(v[0], 0) * v[0]; }, {x3});
}

TEST(GradNN, SoftmaxDtypeArgument) {
  // A float32 input converted to float64 by dtype=: the gradient comes back as float32 with
  // the float64 computation's values.
  manual_seed(5);
  Tensor x = randn({2, 3}).requires_grad_();
  Tensor g = randn({2, 3}, kFloat64);
  Tensor y = softmax(x, 1, kFloat64);
  EXPECT_EQ(y.dtype(), kFloat64);
  y.backward(g);
  EXPECT_EQ(x.grad().dtype(), kFloat32);
  Tensor x64 = x.detach().to(kFloat64).requires_grad_();
  softmax(x64, 1).backward(g);
  EXPECT_TRUE(oracle::compare_tensors(x.grad(), x64.grad().to(kFloat32), 1e-6, 1e-7).empty());
}

TEST(GradNN, SoftmaxBackwardDataOps) {
  Tensor g = leaf({3, 4}, 6);
  Tensor x = leaf({3, 4}, 7);
  check([](auto& v) { return _softmax_backward_data(v[0], softmax(v[1], 1), 1, kFloat64); }, {g, x});
  check([](auto& v) { return _log_softmax_backward_data(v[0], log_softmax(v[1], 1), 1, kFloat64); }, {g, x});
}

// ---------------------------------------------------------------- losses
TEST(GradNN, NllLoss) {
  Tensor x = leaf({5, 4}, 8);
  Tensor t = tensor({0, 3, -100, 1, 2}, kInt64);
  Tensor w = tensor({1.0, 2.0, 0.5, 3.0});
  for (const char* red : {"none", "mean", "sum"}) {
    check([&](auto& v) { return nll_loss(v[0], t, Tensor(), -100, red); }, {x});
    check([&](auto& v) { return nll_loss(v[0], t, w, -100, red); }, {x});
  }
  check([&](auto& v) { return nll_loss(v[0], tensor({1, 1, 0, 2, 3}, kInt64), w, 1); }, {x});
  Tensor x4 = leaf({2, 3, 2, 2}, 9);
  Tensor t4 = from_vector<int64_t>({0, 2, 1, -100, 2, 2, 0, 1}, {2, 2, 2});
  check([&](auto& v) { return nll_loss(v[0], t4, Tensor(), -100, "mean"); }, {x4});
}

TEST(GradNN, CrossEntropy) {
  Tensor x = leaf({5, 4}, 10);
  Tensor t = tensor({0, 3, -100, 1, 2}, kInt64);
  Tensor w = tensor({1.0, 2.0, 0.5, 3.0});
  for (const char* red : {"none", "mean", "sum"})
    for (double ls : {0.0, 0.3}) {
      check([&](auto& v) { return cross_entropy(v[0], t, w, -100, red, ls); }, {x});
      check([&](auto& v) { return cross_entropy(v[0], t, Tensor(), -100, red, ls); }, {x}, false);
    }
  Tensor p = probs({5, 4}, 11).requires_grad_();
  check([&](auto& v) { return cross_entropy(v[0], v[1], w, -100, "mean", 0.1); }, {x, p});
  Tensor x3 = leaf({2, 4, 3}, 12);
  Tensor t3 = from_vector<int64_t>({0, 3, -100, 2, 1, 1}, {2, 3});
  check([&](auto& v) { return cross_entropy(v[0], t3, w, -100, "mean", 0.2); }, {x3});
}

TEST(GradNN, DifferenceLosses) {
  Tensor a = leaf({3, 4}, 13), b = leaf({3, 4}, 14), c = leaf({4}, 15);
  for (const char* red : {"none", "mean", "sum"}) {
    check([&](auto& v) { return mse_loss(v[0], v[1], red); }, {a, b});
    check([&](auto& v) { return l1_loss(v[0], v[1], red); }, {a, b});
    check([&](auto& v) { return smooth_l1_loss(v[0], v[1], red, 0.7); }, {a, b});
    check([&](auto& v) { return huber_loss(v[0], v[1], red, 0.6); }, {a, b});
  }
  // Broadcast target, and a loss whose gradient feeds another op.
  check([&](auto& v) { return mse_loss(v[0] * v[0], v[1], "mean"); }, {a, c});
  check([&](auto& v) { return smooth_l1_loss(v[0], v[1], "sum", 0.0); }, {a, c});
}

TEST(GradNN, BinaryCrossEntropy) {
  Tensor x = probs({3, 4}, 16).requires_grad_();
  Tensor t = probs({3, 4}, 17).requires_grad_();
  Tensor w = probs({4}, 18);
  for (const char* red : {"none", "mean", "sum"}) {
    check([&](auto& v) { return binary_cross_entropy(v[0], v[1], w, red); }, {x, t});
    Tensor xn = probs({4, 3}, 46).t().detach().requires_grad_();  // non-contiguous
    check([&](auto& v) { return binary_cross_entropy(v[0], v[1], Tensor(), red); }, {xn, t});
  }
  Tensor lg = leaf({3, 4}, 19, 2.0);
  Tensor pw = probs({4}, 20) * 3.0;
  for (const char* red : {"none", "mean", "sum"})
    check([&](auto& v) { return binary_cross_entropy_with_logits(v[0], v[1], w, red, pw); }, {lg, t});
  check([&](auto& v) { return binary_cross_entropy_with_logits(v[0], v[1], Tensor(), "mean", Tensor()); }, {lg, t});
  // Broadcast weight and pos_weight over [2, 3, 4], input non-contiguous.
  Tensor lg3 = leaf({4, 3, 2}, 47);
  Tensor t3 = probs({2, 3, 4}, 48).requires_grad_();
  check([&](auto& v) { return binary_cross_entropy_with_logits(v[0].permute({2, 1, 0}), v[1], probs({3, 1}, 49), "sum", pw); },
        {lg3, t3});
}

TEST(GradNN, KlDiv) {
  Tensor x = leaf({3, 4}, 21);
  Tensor t = probs({3, 4}, 22).requires_grad_();
  Tensor lt = leaf({3, 4}, 23);
  for (const char* red : {"none", "mean", "sum", "batchmean"}) {
    check([&](auto& v) { return kl_div(v[0], v[1], red, false); }, {x, t});
    check([&](auto& v) { return kl_div(v[0], v[1], red, true); }, {x, lt});
  }
  // Broadcast target, non-contiguous input.
  Tensor t4 = probs({4}, 24).requires_grad_();
  check([&](auto& v) { return kl_div(v[0].t(), v[1], "batchmean", false); }, {leaf({4, 3}, 25), t4});
}

// Under create_graph the log losses' rules switch from the fused backward ops to a form
// written with ops: both give the same first derivative.
TEST(GradNN, LogLossDifferentiableRuleMatchesFusedRule) {
  Tensor x = probs({3, 4}, 26).requires_grad_(), t = probs({3, 4}, 27).requires_grad_();
  Tensor lg = leaf({3, 4}, 28);
  Tensor w = probs({4}, 29), pw = probs({4}, 30) * 3.0;
  const std::vector<std::function<Tensor()>> losses = {
      [&] { return binary_cross_entropy(x, t, w, "mean"); },
      [&] { return binary_cross_entropy_with_logits(lg, t, w, "sum", pw); },
      [&] { return kl_div(lg, t, "batchmean", false); },
      [&] { return kl_div(lg, x, "none", true).sum(); },
  };
  for (size_t k = 0; k < losses.size(); ++k) {
    std::vector<Tensor> in = {k == 0 ? x : lg, k == 3 ? x : t};
    auto fused = autograd::grad({losses[k]()}, in);
    auto ops_form = autograd::grad({losses[k]()}, in, {}, std::nullopt, /*create_graph=*/true);
    for (size_t i = 0; i < 2; ++i)
      EXPECT_EQ(oracle::compare_tensors(fused[i], ops_form[i].detach(), 1e-12, 1e-12), "") << "loss " << k << " input " << i;
  }
}

// ---------------------------------------------------------------- normalisation
TEST(GradNN, BatchNorm) {
  Tensor x = leaf({4, 3, 2}, 26, 2.0, 0.5);
  Tensor w = leaf({3}, 27), b = leaf({3}, 28);
  Tensor rm = zeros({3}, kFloat64), rv = ones({3}, kFloat64);
  // The running stats are updated on every evaluation: give each call fresh copies.
  check([&](auto& v) { return batch_norm(v[0], rm.clone(), rv.clone(), v[1], v[2], true, 0.1, 1e-5); }, {x, w, b});
  check([&](auto& v) { return batch_norm(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true); }, {x});
  Tensor rm2 = leaf({3}, 50).detach(), rv2 = probs({3}, 51) + 0.5;
  check([&](auto& v) { return batch_norm(v[0], rm2, rv2, v[1], v[2], false); }, {x, w, b});
  Tensor x2 = leaf({5, 2}, 29);
  check([&](auto& v) { return batch_norm(v[0], Tensor(), Tensor(), v[1].slice(0, 0, 2), Tensor(), true); }, {x2, w});
  // Non-contiguous 4-d input.
  Tensor x4 = leaf({3, 2, 3, 2}, 52, 1.5, -0.5);
  check([&](auto& v) { return batch_norm(v[0].permute({0, 3, 2, 1}), Tensor(), Tensor(), v[1].narrow(0, 0, 2), v[2].narrow(0, 1, 2), true); },
        {x4, w, b});
}

// Double backward of batch norm: the second derivative includes the batch statistics'
// dependence on x (a gradient penalty), and the first derivative under create_graph
// equals the fused kernel's.
TEST(GradNN, BatchNormDoubleBackward) {
  Tensor x = leaf({4, 3}, 30);
  Tensor y = batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true);
  Tensor go = leaf({4, 3}, 53).detach();
  auto g = autograd::grad({y}, {x}, {go}, true, true);
  auto fused = autograd::grad({batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), true)}, {x}, {go});
  EXPECT_EQ(oracle::compare_tensors(g[0].detach(), fused[0], 1e-10, 1e-12), "");
  auto gg = autograd::grad({(g[0] * g[0]).sum()}, {x});
  ASSERT_TRUE(gg[0].defined());
  EXPECT_GT(oracle::to_doubles(gg[0].abs().sum())[0], 0.0);
}

TEST(GradNN, LayerGroupInstanceNorm) {
  Tensor x = leaf({2, 3, 4}, 31);
  Tensor w = leaf({3, 4}, 32), b = leaf({3, 4}, 33);
  check([&](auto& v) { return layer_norm(v[0], {3, 4}, v[1], v[2]); }, {x, w, b});
  Tensor w4 = leaf({4}, 34);
  check([&](auto& v) { return layer_norm(v[0], {4}, v[1], Tensor(), 1e-3); }, {x, w4});
  check([&](auto& v) { return layer_norm(v[0].transpose(0, 2), {2}, v[1].narrow(0, 0, 2)); }, {x, w4});  // non-contiguous
  Tensor xg = leaf({2, 6, 3}, 35);
  Tensor gw = leaf({6}, 36), gb = leaf({6}, 37);
  check([&](auto& v) { return group_norm(v[0], 3, v[1], v[2]); }, {xg, gw, gb});
  check([&](auto& v) { return group_norm(v[0], 2); }, {xg});
  check([&](auto& v) { return group_norm(v[0].transpose(1, 2), 3, v[1].narrow(0, 0, 3)); }, {xg, gw});  // non-contiguous
  Tensor iw = leaf({6}, 38);
  check([&](auto& v) { return instance_norm(v[0], Tensor(), Tensor(), v[1], Tensor()); }, {xg, iw});
}

// ---------------------------------------------------------------- dropout, embedding
TEST(GradNN, Dropout) {
  Tensor x = leaf({4, 5}, 39);
  // Re-seed inside so every evaluation draws the same mask.
  check([](auto& v) {
    manual_seed(123);
    return dropout(v[0], 0.4, true);
  }, {x});
  check([](auto& v) { return dropout(v[0], 0.4, false) * v[0]; }, {x});
}

TEST(GradNN, Embedding) {
  Tensor wt = leaf({5, 3}, 40);
  Tensor idx = from_vector<int64_t>({0, 4, 2, 2, 2, 1}, {2, 3});
  check([&](auto& v) { return embedding(v[0], idx); }, {wt});
  check([&](auto& v) { return embedding(v[0], idx, 3) * v[0].select(0, 0); }, {wt});
  // scale_grad_by_freq divides each row's gradient by its index's count (2 appears 3 times).
  Tensor ws = wt.detach().clone().requires_grad_();
  embedding(ws, idx, std::nullopt, true).backward(ones({2, 3, 3}, kFloat64));
  auto gs = oracle::to_doubles(ws.grad());
  EXPECT_EQ(gs[2 * 3], 1.0);
  EXPECT_EQ(gs[4 * 3], 1.0);
  EXPECT_EQ(gs[3 * 3], 0.0);
  // With the padding row in use the first derivative deliberately differs from finite
  // differences (PyTorch semantics), but the backward itself is linear and checkable.
  Tensor go = leaf({2, 3, 3}, 46);
  EXPECT_TRUE(gradcheck(wrap([&](auto& v) { return embedding_dense_backward(v[0], idx, 5, 2, false); }), {go}));
  EXPECT_TRUE(gradgradcheck(wrap([&](auto& v) { return embedding(v[0], idx, 2); }), {wt}));
  // The padding row gets no gradient.
  Tensor y = embedding(wt, idx, 2);
  y.backward(ones({2, 3, 3}, kFloat64));
  auto g = oracle::to_doubles(wt.grad());
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(g[2 * 3 + j], 0.0);
    EXPECT_EQ(g[1 * 3 + j], 1.0);
    EXPECT_EQ(g[3 * 3 + j], 0.0);
  }
}

// ---------------------------------------------------------------- pad, upsampling
TEST(GradNN, Pad) {
  Tensor x = leaf({2, 3, 4}, 41);
  check([](auto& v) { return pad(v[0], {1, 2}, "constant", 3.0); }, {x});
  check([](auto& v) { return pad(v[0], {-1, 2, 1, -1}); }, {x});
  check([](auto& v) { return pad(v[0], {2, 3}, "reflect"); }, {x});
  check([](auto& v) { return pad(v[0], {-1, 2}, "reflect"); }, {x});
  check([](auto& v) { return pad(v[0], {1, 2, 2, 1}, "replicate"); }, {x});
  check([](auto& v) { return pad(v[0], {3, 1}, "circular"); }, {x});
  check([](auto& v) { return pad(v[0], {-1, 2}, "circular"); }, {x});
  Tensor x4 = leaf({1, 2, 3, 3}, 42);
  check([](auto& v) { return pad(v[0], {1, 1, 2, 0}, "reflect"); }, {x4});
  check([](auto& v) { return pad(v[0], {1, 1, 1, 1}, "circular"); }, {x4});
}

TEST(GradNN, Interpolate) {
  Tensor x3 = leaf({1, 2, 4}, 43);
  check([](auto& v) { return interpolate(v[0], std::vector<int64_t>{7}); }, {x3});
  check([](auto& v) { return interpolate(v[0], std::nullopt, std::vector<double>{0.6}); }, {x3});
  Tensor x4 = leaf({1, 2, 3, 4}, 44);
  check([](auto& v) { return interpolate(v[0], std::vector<int64_t>{5, 3}); }, {x4});
  check([](auto& v) { return interpolate(v[0], std::vector<int64_t>{5, 7}, std::nullopt, "bilinear", false); }, {x4});
  check([](auto& v) { return interpolate(v[0], std::vector<int64_t>{5, 7}, std::nullopt, "bilinear", true); }, {x4});
  check([](auto& v) { return interpolate(v[0], std::nullopt, std::vector<double>{1.7, 0.6}, "bilinear"); }, {x4});
  Tensor x5 = leaf({1, 1, 2, 3, 2}, 45);
  check([](auto& v) { return interpolate(v[0], std::vector<int64_t>{3, 4, 3}); }, {x5});
}

// ---------------------------------------------------------------- values vs PyTorch
namespace {
json load_grad_cases() {
  std::ifstream in(std::string(TANDEM_TEST_DATA_DIR) + "/nn_grad.json");
  return json::parse(in);
}
Tensor input_of(const json& c, size_t i) {
  const json& j = c.at("inputs")[i];
  return j.is_null() ? Tensor() : oracle::tensor_from_json(j);
}
void expect_close(const Tensor& got, const json& want, const std::string& what) {
  std::string d = oracle::compare_tensors(got, oracle::tensor_from_json(want), 1e-7, 1e-9);
  EXPECT_TRUE(d.empty()) << what << ": " << d;
}
}  // namespace

TEST(GradNN, CrossEntropyGradientsMatchTorch) {
  int seen = 0;
  const json doc = load_grad_cases();
  for (const json& c : doc.at("cases")) {
    const std::string name = c.at("name");
    if (name.rfind("cross_entropy/", 0) != 0) continue;
    ++seen;
    Tensor x = input_of(c, 0).requires_grad_();
    Tensor y = cross_entropy(x, input_of(c, 1), input_of(c, 2), c.at("ignore_index"), c.at("reduction"),
                             c.at("label_smoothing"));
    expect_close(y, c.at("output"), name + " output");
    y.backward(oracle::tensor_from_json(c.at("out_grad")));
    expect_close(x.grad(), c.at("grads").at("0"), name + " grad");
  }
  EXPECT_EQ(seen, 8);
}

TEST(GradNN, BatchNormGradientsAndRunningStatsMatchTorch) {
  int seen = 0;
  const json doc = load_grad_cases();
  for (const json& c : doc.at("cases")) {
    const std::string name = c.at("name");
    if (name.rfind("batch_norm/", 0) != 0) continue;
    ++seen;
    const bool training = name == "batch_norm/train";
    Tensor x = input_of(c, 0).requires_grad_(), w = input_of(c, 1).requires_grad_(), b = input_of(c, 2).requires_grad_();
    Tensor rm = input_of(c, 3), rv = input_of(c, 4);
    const uint64_t v0 = rm._version();
    Tensor y = batch_norm(x, rm, rv, w, b, training, c.value("momentum", 0.1), 1e-5);
    expect_close(y, c.at("output"), name + " output");
    y.backward(oracle::tensor_from_json(c.at("out_grad")));
    expect_close(x.grad(), c.at("grads").at("0"), name + " grad input");
    expect_close(w.grad(), c.at("grads").at("1"), name + " grad weight");
    expect_close(b.grad(), c.at("grads").at("2"), name + " grad bias");
    if (training) {
      expect_close(rm, c.at("running_mean_after"), name + " running_mean");
      expect_close(rv, c.at("running_var_after"), name + " running_var");
      EXPECT_GT(rm._version(), v0);  // written in place
    } else {
      EXPECT_EQ(rm._version(), v0);
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(GradNN, InstanceNormGradientsAndRunningStatsMatchTorch) {
  const json doc = load_grad_cases();
  for (const json& c : doc.at("cases")) {
    if (c.at("name") != "instance_norm/train") continue;
    Tensor x = input_of(c, 0).requires_grad_();
    Tensor rm = input_of(c, 1), rv = input_of(c, 2);
    Tensor y = instance_norm(x, rm, rv, Tensor(), Tensor(), true, c.at("momentum"), 1e-5);
    expect_close(y, c.at("output"), "instance_norm output");
    y.backward(oracle::tensor_from_json(c.at("out_grad")));
    expect_close(x.grad(), c.at("grads").at("0"), "instance_norm grad");
    expect_close(rm, c.at("running_mean_after"), "instance_norm running_mean");
    expect_close(rv, c.at("running_var_after"), "instance_norm running_var");
    return;
  }
  FAIL() << "case instance_norm/train missing";
}
