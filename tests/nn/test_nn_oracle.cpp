// Replays tests/data/nn_modules.json (tests/oracle/gen_nn_modules.py, torch.nn 1.13): each
// case builds a tandem layer from torch's constructor arguments (nn_factory.h), loads the
// state torch created with load_state_dict (strict, torch's key names), runs the forward
// and compares the output, the gradients of (output * R).sum() for the floating inputs and
// every parameter, the state after the forward (BatchNorm running stats) and, where
// present, a second forward in eval mode. Layers with several outputs (MaxPool with
// return_indices) compare the others exactly ("extra_outputs"; the gradients are those of
// the first). One GoogleTest test per case.
//
// Tolerances come from the case (generator's TOLERANCES): float32 rtol 1e-4 / atol 1e-5
// (different kernels and summation orders than PyTorch's), float64 1e-10.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "nn_factory.h"
#include "support/tensor_json.h"

using namespace tandem;
using nlohmann::json;

namespace {

class ModuleCase : public ::testing::Test {
 public:
  explicit ModuleCase(json c) : c_(std::move(c)) {}

  void TestBody() override {
    const std::string type = c_.at("type");
    const DType dt = *dtype_from_name(c_.at("dtype").get<std::string>());
    const double rtol = c_.at("rtol"), atol = c_.at("atol");
    manual_seed(0);
    nn::ModulePtr m = nn::testing::make_module(type, c_.at("args"));
    if (dt != kFloat32) m->to(dt);

    // torch's state_dict: the same keys in the same order, then load it.
    nn::NamedTensors state;
    for (const auto& kv : c_.at("state")) state.emplace_back(kv.at(0).get<std::string>(), oracle::tensor_from_json(kv.at(1)));
    std::vector<std::string> want_keys, got_keys;
    for (const auto& [k, v] : state) want_keys.push_back(k);
    for (const auto& [k, v] : m->state_dict()) got_keys.push_back(k);
    EXPECT_EQ(got_keys, want_keys) << "state_dict keys (names and order) differ from torch's";
    m->load_state_dict(state, /*strict=*/true);

    m->train(c_.at("train").get<bool>());
    std::vector<Tensor> inputs;
    for (const auto& j : c_.at("inputs")) {
      Tensor x = oracle::tensor_from_json(j);
      if (x.is_floating_point()) x.requires_grad_(true);
      inputs.push_back(x);
    }
    std::vector<Tensor> ys = nn::testing::run_module(type, *m, inputs);
    const size_t n_extra = c_.contains("extra_outputs") ? c_.at("extra_outputs").size() : 0;
    ASSERT_EQ(ys.size(), 1 + n_extra) << "number of outputs";
    Tensor y = ys[0];
    expect_close(y, c_.at("output"), "output", rtol, atol);
    for (size_t k = 0; k < n_extra; ++k) {
      const json& want = c_.at("extra_outputs").at(k);
      expect_close(ys[k + 1], want, "output " + std::to_string(k + 1), 0, 0);
    }

    Tensor r = oracle::tensor_from_json(c_.at("out_weight"));
    if (y.requires_grad()) (y * r).sum().backward();
    const json& grads = c_.at("grads");
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string key = "input." + std::to_string(i);
      if (!grads.contains(key)) continue;
      Tensor g = inputs[i].grad();
      if (!g.defined()) g = zeros_like(inputs[i]);  // no path from the output (Dropout p = 1)
      expect_close(g, grads.at(key), "grad of " + key, rtol, atol);
    }
    for (const auto& [name, p] : m->named_parameters()) {
      ASSERT_TRUE(grads.contains(name)) << "parameter " << name << " is not one of torch's";
      Tensor g = p.grad();
      if (!g.defined()) g = zeros_like(p);
      expect_close(g, grads.at(name), "grad of " + name, rtol, atol);
    }
    EXPECT_EQ(m->named_parameters().size(), grads.size() - count_inputs(grads)) << "torch has other parameters";

    if (c_.contains("state_after")) {
      const json& after = c_.at("state_after");
      auto sd = m->state_dict();
      ASSERT_EQ(sd.size(), after.size());
      for (size_t i = 0; i < sd.size(); ++i) {
        ASSERT_EQ(sd[i].first, after[i].at(0).get<std::string>());
        expect_close(sd[i].second, after[i].at(1), "state after forward: " + sd[i].first, rtol, atol);
      }
    }
    if (c_.contains("eval_output")) {
      m->eval();
      NoGradGuard ng;
      expect_close(nn::testing::run_module(type, *m, inputs).at(0), c_.at("eval_output"), "eval output", rtol, atol);
    }
  }

 private:
  static size_t count_inputs(const json& grads) {
    size_t n = 0;
    for (auto it = grads.begin(); it != grads.end(); ++it) n += it.key().rfind("input.", 0) == 0;
    return n;
  }
  static void expect_close(const Tensor& got, const json& want_j, const std::string& what, double rtol, double atol) {
    Tensor want = oracle::tensor_from_json(want_j);
    std::string diff = oracle::compare_tensors(got.detach(), want, rtol, atol);
    EXPECT_TRUE(diff.empty()) << what << ": " << diff;
  }
  json c_;
};

std::string sanitize(std::string s) {
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

const bool registered = [] {
  std::ifstream in(std::filesystem::path(TANDEM_TEST_DATA_DIR) / "nn_modules.json");
  if (!in) return false;
  json doc = json::parse(in);
  for (const auto& c : doc.at("cases")) {
    const std::string name = c.at("name");
    auto slash = name.find('/');
    std::string suite = "NnOracle_" + sanitize(name.substr(0, slash));
    std::string test = sanitize(name.substr(slash + 1));
    ::testing::RegisterTest(suite.c_str(), test.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [c]() -> ::testing::Test* { return new ModuleCase(c); });
  }
  return true;
}();

// The data file must exist and hold a case for every layer the issue lists.
TEST(NnOracle, CoversEveryLayer) {
  std::ifstream in(std::filesystem::path(TANDEM_TEST_DATA_DIR) / "nn_modules.json");
  ASSERT_TRUE(in) << "tests/data/nn_modules.json is missing (run tests/oracle/gen_nn_modules.py)";
  json doc = json::parse(in);
  std::set<std::string> types;
  for (const auto& c : doc.at("cases")) types.insert(c.at("type").get<std::string>());
  for (const char* t : {"Linear", "Bilinear", "Conv1d", "Conv2d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d",
                        "MaxUnpool2d", "AvgPool2d", "AdaptiveAvgPool2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm",
                        "GroupNorm", "Dropout", "Embedding", "ReLU", "LeakyReLU", "GELU", "SiLU", "Tanh", "Sigmoid",
                        "Softmax", "LogSoftmax", "Flatten", "Unflatten", "Identity", "Sequential", "ModuleList", "ModuleDict"})
    EXPECT_TRUE(types.count(t)) << "no oracle case for " << t;
}

}  // namespace
