// Gradients of small programs equal PyTorch's: views plus in-place ops, accumulation over
// two backward calls, retain_graph, hooks changing gradients, detach, allow_unused,
// second derivatives and a gradient penalty (double backward through an MLP).
// Expected values: tests/oracle/gen_autograd_programs.py -> tests/data/autograd_programs.json; the
// programs below are the same programs written with tandem.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tandem/tandem.h"

namespace {

using namespace tandem;
using Inputs = std::map<std::string, Tensor>;
using Grads = std::map<std::string, Tensor>;

const nlohmann::json& oracle() {
  static const nlohmann::json j = [] {
    std::ifstream f(std::string(TANDEM_TEST_DATA_DIR) + "/autograd_programs.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

Tensor decode(const nlohmann::json& spec) {
  std::vector<double> v = spec.at("values").get<std::vector<double>>();
  std::vector<int64_t> shape = spec.at("shape").get<std::vector<int64_t>>();
  return from_vector(v, shape);
}

std::map<std::string, std::function<Grads(Inputs&)>> programs() {
  std::map<std::string, std::function<Grads(Inputs&)>> p;
  p["broadcast_mul_add"] = [](Inputs& x) {
    Tensor a = x["a"], b = x["b"];
    (a * b + a).pow(2).sum().backward();
    return Grads{{"a", a.grad()}, {"b", b.grad()}};
  };
  p["inplace_on_view"] = [](Inputs& x) {
    Tensor w = x["w"];
    Tensor y = w * 1.5;
    y.select(1, 1).mul_(3);
    y.t().select(0, 0).add_(w.select(1, 2));
    (y * y).sum().backward();
    return Grads{{"w", w.grad()}};
  };
  p["accumulate_two_backwards"] = [](Inputs& x) {
    Tensor w = x["w"];
    (w * w).sum().backward();
    (w.sin() * 3).sum().backward();
    return Grads{{"w", w.grad()}};
  };
  p["retain_graph_twice"] = [](Inputs& x) {
    Tensor w = x["w"];
    Tensor y = (w.exp() * w).sum();
    y.backward(Tensor(), true);
    y.backward();
    return Grads{{"w", w.grad()}};
  };
  p["hook_changes_gradient"] = [](Inputs& x) {
    Tensor w = x["w"];
    Tensor y = w * w;
    y.register_hook([](const Tensor& g) { return g * 2 + 1; });
    y.tanh().sum().backward();
    return Grads{{"w", w.grad()}};
  };
  p["detach_stops_gradient"] = [](Inputs& x) {
    Tensor w = x["w"];
    ((w * w.detach()).sum() + w.detach().pow(3).sum()).backward();
    return Grads{{"w", w.grad()}};
  };
  p["allow_unused"] = [](Inputs& x) {
    Tensor a = x["a"], b = x["b"];
    auto g = autograd::grad({(a * 2).sum()}, {a, b}, {}, std::nullopt, false, true);
    EXPECT_FALSE(g[1].defined()) << "unused input gets an undefined gradient";
    return Grads{{"a", g[0]}};
  };
  p["second_derivative_of_cube"] = [](Inputs& x) {
    Tensor w = x["w"];
    Tensor g = autograd::grad({w.pow(3).sum()}, {w}, {}, std::nullopt, true)[0];
    return Grads{{"d2", autograd::grad({g.sum()}, {w})[0]}};
  };
  p["gradient_penalty_mlp"] = [](Inputs& x) {
    Tensor inp = x["x"], w1 = x["w1"], b1 = x["b1"], w2 = x["w2"], b2 = x["b2"];
    Tensor out = linear(tanh(linear(inp, w1, b1)), w2, b2).sum();
    Tensor g = autograd::grad({out}, {inp}, {}, std::nullopt, true)[0];
    (g * g).sum(1).sum().backward();
    return Grads{{"w1", w1.grad()}, {"b1", b1.grad()}, {"w2", w2.grad()}};
  };
  p["mlp_relu_cross_entropy"] = [](Inputs& x) {
    Tensor inp = x["x"], w1 = x["w1"], b1 = x["b1"], w2 = x["w2"];
    Tensor h = linear(inp, w1, b1).relu_();
    Tensor logits = matmul(h, w2.t());
    cross_entropy(logits, from_vector(std::vector<int64_t>{0, 2, 1, 2}, {4})).backward();
    return Grads{{"x", inp.grad()}, {"w1", w1.grad()}, {"b1", b1.grad()}, {"w2", w2.grad()}};
  };
  p["conv_pool_chain"] = [](Inputs& x) {
    Tensor inp = x["x"], w = x["w"];
    Tensor y = max_pool2d(relu(conv2d(inp, w, Tensor(), {1}, {1})), {2});
    (y * y).sum().backward();
    return Grads{{"x", inp.grad()}, {"w", w.grad()}};
  };
  p["softmax_layer_norm_mse"] = [](Inputs& x) {
    Tensor inp = x["x"], t = x["t"];
    Tensor y = layer_norm(softmax(inp, -1) * 4, {5});
    mse_loss(y, t.detach()).backward();
    return Grads{{"x", inp.grad()}};
  };
  p["shared_input_diamond"] = [](Inputs& x) {
    Tensor w = x["w"];
    Tensor a = w.sigmoid();
    Tensor b = a * w;
    Tensor c = a.exp() + repeat(b.view({2, 3}).sum(0), {2});
    c.sum().backward();
    return Grads{{"w", w.grad()}};
  };
  return p;
}

class AutogradPrograms : public ::testing::TestWithParam<std::string> {};

TEST_P(AutogradPrograms, GradientsEqualPyTorch) {
  const std::string name = GetParam();
  const auto& spec = oracle().at("programs").at(name);
  Inputs inputs;
  for (const auto& [k, v] : spec.at("inputs").items()) inputs[k] = decode(v).requires_grad_();
  Grads got = programs().at(name)(inputs);
  ASSERT_EQ(got.size(), spec.at("grads").size());
  for (const auto& [k, v] : spec.at("grads").items()) {
    ASSERT_TRUE(got.count(k)) << k;
    ASSERT_TRUE(got[k].defined()) << name << ": no gradient for " << k;
    Tensor want = decode(v);
    ASSERT_TRUE(got[k].sizes().equals(want.sizes())) << name << " " << k << ": " << got[k].sizes() << " vs "
                                                     << want.sizes();
    Tensor gk = got[k].contiguous();
    const double* g = gk.data_ptr<double>();
    const double* w = want.data_ptr<double>();
    for (int64_t i = 0; i < want.numel(); ++i)
      EXPECT_NEAR(g[i], w[i], 1e-12 + 1e-9 * std::fabs(w[i])) << name << " " << k << "[" << i << "]";
  }
}

std::vector<std::string> program_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : oracle().at("programs").items()) names.push_back(k);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Torch, AutogradPrograms, ::testing::ValuesIn(program_names()),
                         [](const auto& info) { return info.param; });

TEST(AutogradPrograms, EveryOracleProgramHasATandemVersion) {
  auto p = programs();
  for (const auto& n : program_names()) EXPECT_TRUE(p.count(n)) << n;
  EXPECT_EQ(p.size(), program_names().size());
}

}  // namespace
