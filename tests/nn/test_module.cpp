// nn::Module behaviour: registration and traversal (names and order as PyTorch's), train/eval,
// zero_grad, to(dtype), forward hooks, state_dict / load_state_dict and their errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nn_test_util.h"

using namespace tandem;
using namespace tandem::nn;
using nn::testing::expect_error;
using nn::testing::same_values;
using nlohmann::json;

namespace {

std::vector<std::string> keys(const NamedTensors& nt) {
  std::vector<std::string> out;
  for (const auto& [k, v] : nt) out.push_back(k);
  return out;
}

// conv -> bn -> relu -> (linear) : parameters, buffers and a nested container.
std::shared_ptr<Sequential> small_net() {
  ConvOptions pad;
  pad.padding = {1};
  auto inner = std::make_shared<Sequential>(std::vector<ModulePtr>{std::make_shared<Flatten>(), std::make_shared<Linear>(2 * 4 * 4, 3)});
  return std::make_shared<Sequential>(std::vector<ModulePtr>{
      std::make_shared<Conv2d>(1, 2, std::vector<int64_t>{3}, pad), std::make_shared<BatchNorm2d>(2),
      std::make_shared<ReLU>(), std::make_shared<Dropout>(0.5), inner});
}

// ------------------------------------------------------------------ names and traversal

// named_parameters() of the reference models equals torch's nn.Sequential of the same layers
// (names, shapes and order; tests/oracle/gen_nn_modules.py writes torch's list).
TEST(Module, ReferenceModelParametersMatchTorch) {
  std::ifstream in(std::filesystem::path(TANDEM_TEST_DATA_DIR) / "nn_modules.json");
  ASSERT_TRUE(in);
  json torch_models = json::parse(in).at("models");
  for (const auto& [name, model] : {std::pair{"fashion_mlp", std::static_pointer_cast<Module>(models::fashion_mlp())},
                                    std::pair{"fashion_cnn", std::static_pointer_cast<Module>(models::fashion_cnn())}}) {
    const json& want = torch_models.at(name);
    auto got = model->named_parameters();
    ASSERT_EQ(got.size(), want.size()) << name;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].first, want[i][0].get<std::string>()) << name << " parameter " << i;
      EXPECT_EQ(got[i].second.sizes().vec(), want[i][1].get<std::vector<int64_t>>()) << name << " " << got[i].first;
      EXPECT_TRUE(got[i].second.requires_grad());
      EXPECT_EQ(got[i].second.dtype(), kFloat32);
    }
    auto params = model->parameters();
    ASSERT_EQ(params.size(), got.size());
    for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].is_same(got[i].second));
  }
}

TEST(Module, ParametersBuffersChildrenModules) {
  auto net = small_net();
  EXPECT_EQ(keys(net->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "4.1.weight", "4.1.bias"}));
  EXPECT_TRUE(net->named_parameters(/*recurse=*/false).empty());
  EXPECT_EQ(keys(net->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(net->buffers().size(), 3u);
  EXPECT_EQ(net->buffers()[2].dtype(), kInt64);
  EXPECT_TRUE(net->buffers(/*recurse=*/false).empty());
  EXPECT_FALSE(net->buffers()[0].requires_grad());

  auto kids = net->named_children();
  ASSERT_EQ(kids.size(), 5u);
  EXPECT_EQ(kids[0].first, "0");
  EXPECT_EQ(kids[4].first, "4");
  EXPECT_EQ(kids[1].second->name(), "BatchNorm2d");
  EXPECT_EQ(net->children().size(), 5u);  // direct children only
  EXPECT_EQ(net->children()[4]->children().size(), 2u);

  // modules(): self first, then depth first in registration order.
  std::vector<std::string> names;
  for (Module* m : net->modules()) names.push_back(m->name());
  EXPECT_EQ(names, (std::vector<std::string>{"Sequential", "Conv2d", "BatchNorm2d", "ReLU", "Dropout", "Sequential",
                                             "Flatten", "Linear"}));
  EXPECT_EQ(net->modules()[0], net.get());
  EXPECT_EQ((*net)[1].get(), net->modules()[2]);
}

TEST(Module, RegistrationErrors) {
  struct M : Module {
    M() : Module("M") {
      register_parameter("w", zeros({2}));
      register_buffer("b", zeros({2}));
    }
    void add_param(const std::string& n) { register_parameter(n, zeros({1})); }
    void add_buffer(const std::string& n) { register_buffer(n, zeros({1})); }
    void add_module(const std::string& n, ModulePtr m) { register_module(n, std::move(m)); }
  } m;
  expect_error<ValueError>([&] { m.add_param("w"); }, {"M", "'w'", "already exists"});
  expect_error<ValueError>([&] { m.add_buffer("w"); }, {"'w'", "already exists"});
  expect_error<ValueError>([&] { m.add_param("b"); }, {"'b'", "already exists"});
  expect_error<ValueError>([&] { m.add_module("b", std::make_shared<ReLU>()); }, {"'b'", "already exists"});
  expect_error<ValueError>([&] { m.add_param("a.b"); }, {"invalid name", "'a.b'"});
  expect_error<ValueError>([&] { m.add_buffer(""); }, {"invalid name"});
  expect_error<ValueError>([&] { m.add_module("c", nullptr); }, {"'c'", "null"});
  // register_parameter makes the tensor require grad; a buffer does not.
  EXPECT_TRUE(m.named_parameters()[0].second.requires_grad());
  EXPECT_FALSE(m.named_buffers()[0].second.requires_grad());
  // A failed registration adds nothing.
  EXPECT_EQ(m.named_parameters().size(), 1u);
  EXPECT_EQ(m.named_buffers().size(), 1u);
  EXPECT_TRUE(m.children().empty());
}

TEST(Module, ContainersIndexing) {
  auto list = std::make_shared<ModuleList>();
  list->push_back(std::make_shared<Linear>(2, 3));
  list->push_back(std::make_shared<Tanh>());
  EXPECT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[1]->name(), "Tanh");
  EXPECT_EQ(keys(list->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias"}));
  expect_error<IndexError>([&] { (*list)[2]; }, {"ModuleList", "index 2", "2 modules"});
  Sequential seq(std::vector<ModulePtr>{std::make_shared<ReLU>()});
  expect_error<IndexError>([&] { seq[1]; }, {"Sequential", "index 1"});
  // ModuleList and ModuleDict have no forward.
  expect_error<NotImplementedError>([&] { (*list)(zeros({1, 2})); }, {"ModuleList", "forward"});

  auto dict = std::make_shared<ModuleDict>();
  dict->insert("encoder", std::make_shared<Linear>(2, 2));
  dict->insert("act", std::make_shared<ReLU>());
  EXPECT_TRUE(dict->contains("act"));
  EXPECT_FALSE(dict->contains("decoder"));
  EXPECT_EQ((*dict)["act"]->name(), "ReLU");
  expect_error<IndexError>([&] { (*dict)["decoder"]; }, {"ModuleDict", "'decoder'"});
  expect_error<ValueError>([&] { dict->insert("act", std::make_shared<Tanh>()); }, {"'act'", "already exists"});
  EXPECT_EQ(keys(dict->named_parameters()), (std::vector<std::string>{"encoder.weight", "encoder.bias"}));
}

// ------------------------------------------------------------------ modes and gradients

TEST(Module, TrainEvalPropagates) {
  auto net = small_net();
  for (Module* m : net->modules()) EXPECT_TRUE(m->is_training()) << m->name();
  net->eval();
  for (Module* m : net->modules()) EXPECT_FALSE(m->is_training()) << m->name();
  net->train();
  for (Module* m : net->modules()) EXPECT_TRUE(m->is_training()) << m->name();
  net->train(false);
  for (Module* m : net->modules()) EXPECT_FALSE(m->is_training()) << m->name();

  // The mode changes what the layers do: in eval, Dropout is the identity and BatchNorm
  // uses (and does not update) its running statistics.
  manual_seed(1);
  auto bn = std::make_shared<BatchNorm1d>(3);
  auto drop = std::make_shared<Dropout>(0.5);
  auto seq = std::make_shared<Sequential>(std::vector<ModulePtr>{drop, bn});
  Tensor x = randn({8, 3}) + 2.0;
  seq->eval();
  Tensor y = (*seq)(x);
  // running stats 0 / 1, affine 1 / 0
  EXPECT_EQ(oracle::compare_tensors(y, x / std::sqrt(1.0 + 1e-5), 1e-6, 1e-6), "");
  EXPECT_TRUE(same_values(bn->running_mean, zeros({3})));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 0);
  seq->train();
  (*seq)(x);
  EXPECT_FALSE(same_values(bn->running_mean, zeros({3})));
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
}

TEST(Module, ZeroGrad) {
  manual_seed(0);
  auto net = small_net();
  net->zero_grad();  // no gradients yet: nothing to do, no error
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
  Tensor x = randn({2, 1, 4, 4});
  (*net)(x).sum().backward();
  std::vector<Tensor> grads;
  for (const Tensor& p : net->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    grads.push_back(p.grad());
  }
  net->zero_grad(/*set_to_none=*/false);
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    ASSERT_TRUE(params[i].grad().defined());
    EXPECT_TRUE(params[i].grad().is_same(grads[i])) << "zero_grad(false) zeroes the existing gradient in place";
    EXPECT_TRUE(same_values(params[i].grad(), zeros_like(params[i])));
  }
  // Accumulates into the zeroed gradient.
  (*net)(x).sum().backward();
  EXPECT_FALSE(same_values(params[0].grad(), zeros_like(params[0])));
  net->zero_grad(/*set_to_none=*/true);
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(Module, ToFloat64ConvertsFloatingParamsAndBuffers) {
  manual_seed(0);
  auto net = small_net();
  std::vector<Tensor> before = net->parameters();
  std::vector<std::vector<double>> values;
  for (const Tensor& p : before) values.push_back(oracle::to_doubles(p));
  net->to(kFloat64);
  for (const auto& [n, p] : net->named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat64) << n;
    EXPECT_TRUE(p.requires_grad()) << n;
    EXPECT_TRUE(p.is_leaf()) << n;
  }
  for (const auto& [n, b] : net->named_buffers()) {
    DType want = n == "1.num_batches_tracked" ? kInt64 : kFloat64;  // integer buffers keep their dtype
    EXPECT_EQ(b.dtype(), want) << n;
  }
  auto after = net->parameters();
  for (size_t i = 0; i < after.size(); ++i) {
    // Converted values, and the same parameter objects (as PyTorch's Module.to keeps the
    // Parameter; an optimizer built before to() still holds them).
    auto v = oracle::to_doubles(after[i]);
    for (size_t k = 0; k < v.size(); ++k) EXPECT_EQ(v[k], values[i][k]);
    EXPECT_TRUE(after[i].is_same(before[i])) << "parameter " << i << " was replaced by a new tensor";
  }
  // The layers compute with the converted tensors: a float64 forward and backward work.
  Tensor x = randn({2, 1, 4, 4}, kFloat64);
  Tensor y = (*net)(x);
  EXPECT_EQ(y.dtype(), kFloat64);
  y.sum().backward();
  for (const auto& [n, p] : net->named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << n;
    EXPECT_EQ(p.grad().dtype(), kFloat64) << n;
  }
  // ... and back: gradients are converted with their parameters.
  net->to(kFloat32);
  for (const auto& [n, p] : net->named_parameters()) {
    EXPECT_EQ(p.dtype(), kFloat32) << n;
    EXPECT_EQ(p.grad().dtype(), kFloat32) << n;
  }
  EXPECT_EQ((*net)(randn({2, 1, 4, 4})).dtype(), kFloat32);
}

// ------------------------------------------------------------------ hooks

TEST(Module, ForwardHooks) {
  auto lin = std::make_shared<Linear>(2, 2);
  Tensor x = tensor({{1.0, 2.0}}, kFloat32);
  Tensor plain = (*lin)(x);
  std::vector<std::string> calls;
  uint64_t v0 = lin->hooks_version();
  auto pre = lin->register_forward_pre_hook([&](Module& m, const Tensor& in) {
    EXPECT_EQ(&m, lin.get());
    calls.push_back("pre");
    return in * 2.0;  // replaces the input
  });
  auto post_keep = lin->register_forward_hook([&](Module&, const Tensor& in, const Tensor&) {
    calls.push_back("post_keep");
    EXPECT_TRUE(same_values(in, x * 2.0)) << "forward hooks see the (replaced) input";
    return Tensor();  // undefined: keep the output
  });
  auto post = lin->register_forward_hook([&](Module&, const Tensor&, const Tensor& out) {
    calls.push_back("post");
    return out + 1.0;  // replaces the output
  });
  EXPECT_NE(lin->hooks_version(), v0);
  Tensor y = (*lin)(x);
  EXPECT_EQ(calls, (std::vector<std::string>{"pre", "post_keep", "post"}));
  EXPECT_TRUE(same_values(y, lin->forward(x * 2.0) + 1.0));

  // Removal is per handle and idempotent.
  post.remove();
  post.remove();
  calls.clear();
  y = (*lin)(x);
  EXPECT_EQ(calls, (std::vector<std::string>{"pre", "post_keep"}));
  EXPECT_TRUE(same_values(y, lin->forward(x * 2.0)));
  uint64_t v1 = lin->hooks_version();
  pre.remove();
  EXPECT_NE(lin->hooks_version(), v1);
  post_keep.remove();
  calls.clear();
  EXPECT_TRUE(same_values((*lin)(x), plain));
  EXPECT_TRUE(calls.empty());
  uint64_t v2 = lin->hooks_version();
  pre.remove();  // removing again changes nothing
  EXPECT_EQ(lin->hooks_version(), v2);
  HookHandle empty;
  empty.remove();  // a default handle is a no-op

  // Hooks on a child run when the parent's forward calls it; the parent's version sees them.
  auto seq = std::make_shared<Sequential>(std::vector<ModulePtr>{lin, std::make_shared<ReLU>()});
  uint64_t sv = seq->hooks_version();
  int child_calls = 0;
  auto h = lin->register_forward_hook([&](Module&, const Tensor&, const Tensor&) {
    ++child_calls;
    return Tensor();
  });
  EXPECT_NE(seq->hooks_version(), sv);
  (*seq)(x);
  EXPECT_EQ(child_calls, 1);
  h.remove();
  (*seq)(x);
  EXPECT_EQ(child_calls, 1);

  // A handle outliving its (shared_ptr-owned) module: remove() is a no-op, not a use after free.
  auto tmp = std::make_shared<ReLU>();
  HookHandle late = tmp->register_forward_pre_hook([](Module&, const Tensor&) { return Tensor(); });
  tmp.reset();
  late.remove();
}

// ------------------------------------------------------------------ state_dict

TEST(Module, StateDictRoundTrip) {
  manual_seed(0);
  auto a = small_net();
  manual_seed(1);
  auto b = small_net();
  Tensor x = randn({3, 1, 4, 4});
  a->train();
  (*a)(x);  // changes a's running stats and num_batches_tracked
  a->eval();
  b->eval();
  EXPECT_FALSE(same_values((*a)(x), (*b)(x)));

  NamedTensors sd = a->state_dict();
  // torch's order: each module's parameters, then its buffers, then its children.
  EXPECT_EQ(keys(sd), (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                                "1.running_var", "1.num_batches_tracked", "4.1.weight", "4.1.bias"}));
  for (const auto& [k, t] : sd) EXPECT_FALSE(t.requires_grad()) << k << ": state_dict tensors are detached";
  b->load_state_dict(sd);
  EXPECT_TRUE(same_values((*a)(x), (*b)(x)));
  auto sb = b->state_dict();
  for (size_t i = 0; i < sd.size(); ++i) EXPECT_TRUE(same_values(sd[i].second, sb[i].second)) << sd[i].first;
  // Loading copies: b's tensors stay b's, still trainable.
  for (const auto& [k, p] : b->named_parameters()) {
    EXPECT_TRUE(p.requires_grad()) << k;
    EXPECT_FALSE(p.is_alias_of(a->named_parameters()[0].second));
  }
  EXPECT_EQ(b->named_buffers()[2].second.item<int64_t>(), 1);
}

TEST(Module, LoadStateDictErrorsNameTheKey) {
  manual_seed(0);
  auto net = small_net();
  const NamedTensors good = net->state_dict();
  auto snapshot = [&] {
    std::vector<std::vector<double>> v;
    for (const auto& [k, t] : net->state_dict()) v.push_back(oracle::to_doubles(t));
    return v;
  };
  const auto original = snapshot();
  auto without = [&](const std::string& key) {
    NamedTensors s;
    for (const auto& kv : good)
      if (kv.first != key) s.push_back({kv.first, kv.second.clone()});
    return s;
  };
  auto replaced = [&](const std::string& key, Tensor t) {
    NamedTensors s;
    for (const auto& kv : good) s.push_back({kv.first, kv.first == key ? t : kv.second.clone()});
    return s;
  };

  // Missing key.
  expect_error<ValueError>([&] { net->load_state_dict(without("1.running_var")); },
                           {"load_state_dict", "missing keys", "\"1.running_var\""});
  // Unexpected key.
  NamedTensors extra = without("");
  extra.push_back({"4.1.scale", zeros({3})});
  expect_error<ValueError>([&] { net->load_state_dict(extra); }, {"unexpected keys", "\"4.1.scale\""});
  // Both at once are both listed.
  NamedTensors both = without("0.bias");
  both.push_back({"0.bias_typo", zeros({2})});
  expect_error<ValueError>([&] { net->load_state_dict(both); }, {"missing keys", "\"0.bias\"", "unexpected keys", "\"0.bias_typo\""});
  // Shape mismatch.
  expect_error<ShapeError>([&] { net->load_state_dict(replaced("4.1.weight", zeros({3, 31}))); },
                           {"size mismatch", "4.1.weight", "[3, 31]", "[3, 32]"});
  // Dtype mismatch (float and the integer buffer).
  expect_error<TypeError>([&] { net->load_state_dict(replaced("0.weight", zeros({2, 1, 3, 3}, kFloat64))); },
                          {"dtype mismatch", "0.weight", "float64", "float32"});
  expect_error<TypeError>([&] { net->load_state_dict(replaced("1.num_batches_tracked", zeros({}, kFloat32))); },
                          {"dtype mismatch", "1.num_batches_tracked"});
  // A failed load changes nothing, even when the bad key comes after good ones.
  NamedTensors late_bad = replaced("4.1.bias", zeros({4}));
  for (auto& [k, t] : late_bad)
    if (k != "4.1.bias") t = full_like(t, 7);
  EXPECT_THROW(net->load_state_dict(late_bad), ShapeError);
  EXPECT_EQ(snapshot(), original);

  // Non-strict: missing and unexpected keys are ignored, present ones are loaded.
  NamedTensors partial;
  partial.push_back({"0.bias", full({2}, 0.5)});
  partial.push_back({"not.a.key", zeros({1})});
  net->load_state_dict(partial, /*strict=*/false);
  EXPECT_TRUE(same_values(net->named_parameters()[1].second, full({2}, 0.5)));
  auto now = snapshot();
  for (size_t i = 0; i < now.size(); ++i)
    if (i != 1) {
      EXPECT_EQ(now[i], original[i]) << "key " << i << " changed by a partial load";
    }
  // ... but a shape or dtype mismatch still raises (as PyTorch).
  NamedTensors bad_shape{{"0.bias", zeros({5})}};
  expect_error<ShapeError>([&] { net->load_state_dict(bad_shape, false); }, {"0.bias"});
}

}  // namespace
