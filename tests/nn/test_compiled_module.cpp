// tandem::compile(module): the reference models in eval mode equal eager bitwise with an
// arena near the planner's lower bound; parameters are program inputs (optimizer updates
// seen without recompiling); guards on the training flag, hooks and parameter identity.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;

namespace {

bool bitwise_equal(const Tensor& a, const Tensor& b) { return tandem_test::bitwise_equal(a, b, true); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A module whose forward reads its weight from the registry slot, so a test can replace
// the registered parameter itself (nn layers keep a member copy of the handle).
class Scale : public nn::Module {
 public:
  Scale() : Module("Scale") {
    slot_ = &register_parameter("weight", full({3}, 2.0));
    holder = register_module("holder", std::make_shared<nn::Module>("Holder"));  // no forward use
  }
  Tensor forward(const Tensor& x) override { return x * *slot_ + 1.0; }
  Tensor* slot_;  // valid while no parameter is registered on this module itself
  std::shared_ptr<nn::Module> holder;
};

// A module holding a tensor it never registered (read through the member only).
class Unregistered : public nn::Module {
 public:
  Unregistered() : Module("Unregistered"), offset(full({3}, 1.0)) {}
  Tensor forward(const Tensor& x) override { return x + offset; }
  Tensor offset;
};

}  // namespace

// Acceptance: both reference models in eval mode, compiled vs eager, and the arena.
// Compared bitwise: compiled mode runs the same kernels (oneDNN conv/matmul, the same
// pooling and elementwise loops) on the same data in the same order; the only program
// change that touches arithmetic is in-place reuse (relu -> relu_), the same kernel.
TEST(CompiledModule, ReferenceModelsEvalEqualEagerBitwiseAndArenaNearLowerBound) {
  for (const char* which : {"mlp", "cnn"}) {
    for (int64_t batch : {1, 7, 64}) {  // 7: convolution batch slices of unequal sizes
      SCOPED_TRACE(str_cat(which, " batch ", batch));
      manual_seed(0);
      auto model = std::string(which) == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
      model->eval();
      Tensor x = randn({batch, 1, 28, 28});
      NoGradGuard ng;
      Tensor eager = (*model)(x);
      auto cm = compile(model);
      Tensor first = (*cm)(x);   // capture (runs eagerly)
      Tensor second = (*cm)(x);  // the compiled program
      Tensor third = (*cm)(x);   // arena reused
      EXPECT_TRUE(bitwise_equal(eager, first));
      EXPECT_TRUE(bitwise_equal(eager, second));
      EXPECT_TRUE(bitwise_equal(eager, third));
      EXPECT_FALSE(second.is_alias_of(third));  // outputs are fresh per call
      EXPECT_EQ(cm->function().captures(), 1);
      EXPECT_EQ(cm->function().compiled_calls(), 2);
      ASSERT_NE(cm->last_executor(), nullptr);
      const auto& plan = cm->last_executor()->plan();
      std::cout << "[compiled " << which << " batch " << batch << "] " << cm->memory_summary() << "\n";
      EXPECT_GT(plan.lower_bound, 0);
      EXPECT_LE(static_cast<double>(plan.arena_bytes), 1.1 * static_cast<double>(plan.lower_bound));
      // Parameters are graph inputs named after the module's state, not constants.
      const auto& g = cm->last_executor()->graph();
      int named_inputs = 0;
      for (int v : g.inputs()) named_inputs += contains(g.value(v).name, ".weight") || contains(g.value(v).name, ".bias");
      EXPECT_EQ(named_inputs, static_cast<int>(model->parameters().size()));
      for (const auto& v : g.values()) EXPECT_NE(v.kind, ir::ValueKind::Constant) << g.to_text();
    }
  }
}

// Odd batches and input layouts through both reference models: the compiled program
// equals eager bitwise. Batch 0 crashed the executor (every intermediate is empty, so the
// plan had no arena, yet the empty values were still placed in it).
TEST(CompiledModule, OddBatchesAndLayoutsEqualEagerBitwise) {
  for (const char* which : {"mlp", "cnn"}) {
    manual_seed(0);
    auto model = std::string(which) == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
    model->eval();
    NoGradGuard ng;
    const std::vector<std::pair<std::string, Tensor>> inputs = {
        {"batch 0", randn({0, 1, 28, 28})},
        {"batch 2", randn({2, 1, 28, 28})},
        {"batch 33", randn({33, 1, 28, 28})},
        {"batch 1000", randn({1000, 1, 28, 28})},
        {"transposed H/W", randn({5, 1, 28, 28}).transpose(2, 3)},
        {"every other image", randn({10, 1, 28, 28}).slice(0, 0, std::nullopt, 2)},
        {"expanded batch", randn({1, 1, 28, 28}).expand({4, 1, 28, 28})},
        {"every other pixel", randn({3, 1, 56, 56}).slice(2, 0, std::nullopt, 2).slice(3, 0, std::nullopt, 2)},
        {"NaN", full({2, 1, 28, 28}, std::nan(""))},
    };
    for (const auto& [name, x] : inputs) {
      SCOPED_TRACE(str_cat(which, " ", name));
      auto cm = compile(model);  // one per input: the recompile limit would turn later ones eager
      Tensor eager = (*model)(x);
      Tensor first = (*cm)(x);
      Tensor second = (*cm)(x);
      EXPECT_EQ(cm->function().compiled_calls(), 1);
      EXPECT_TRUE(bitwise_equal(eager, first));
      EXPECT_TRUE(bitwise_equal(eager, second));
    }
  }
}

// Inputs the model cannot take raise eager's error from the compiled call too, and the
// compiled module still works afterwards.
TEST(CompiledModule, BadInputsRaiseTheEagerError) {
  manual_seed(0);
  auto model = nn::models::fashion_cnn();
  model->eval();
  NoGradGuard ng;
  auto cm = compile(model);
  const std::vector<Tensor> bad = {randn({2, 1, 28, 28}, kFloat64), ones({2, 1, 28, 28}, kInt64), randn({2, 784}),
                                   randn({1, 2, 1, 28, 28}), randn({2, 3, 28, 28}), randn({2, 1, 27, 27})};
  for (const Tensor& x : bad) {
    SCOPED_TRACE(str_cat("input ", x.sizes(), " ", dtype_name(x.dtype())));
    std::string eager_msg, compiled_msg;
    try {
      (*model)(x);
    } catch (const Error& e) {
      eager_msg = e.what();
    }
    try {
      (*cm)(x);
    } catch (const Error& e) {
      compiled_msg = e.what();
    }
    EXPECT_NE(eager_msg, "");
    EXPECT_EQ(compiled_msg, eager_msg);
  }
  Tensor x = randn({3, 1, 28, 28});
  Tensor eager = (*model)(x);
  (*cm)(x);
  EXPECT_TRUE(bitwise_equal((*cm)(x), eager));
  EXPECT_GE(cm->function().compiled_calls(), 1);
}

TEST(CompiledModule, OptimizerUpdatesAreSeenWithoutRecompiling) {
  manual_seed(1);
  auto model = nn::models::fashion_mlp();
  model->eval();
  auto cm = compile(model);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1));
  Tensor x = randn({4, 784}), y = tensor({1, 2, 3, 4}, kInt64);
  for (int step = 0; step < 3; ++step) {
    {
      NoGradGuard ng;
      Tensor eager = (*model)(x);
      EXPECT_TRUE(bitwise_equal(eager, (*cm)(x))) << "step " << step;
    }
    opt.zero_grad();
    cross_entropy((*model)(x), y).backward();
    opt.step();
  }
  EXPECT_EQ(cm->function().captures(), 1);
  EXPECT_EQ(cm->function().compiled_calls(), 2);
}

TEST(CompiledModule, TrainingFlagIsAGuard) {
  manual_seed(2);
  auto model = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Dropout>(0.5)});
  auto twin = std::make_shared<nn::Sequential>(
      std::vector<nn::ModulePtr>{std::make_shared<nn::Linear>(8, 8), std::make_shared<nn::Dropout>(0.5)});
  twin->load_state_dict(model->state_dict());
  auto cm = compile(model);
  Tensor x = randn({2, 8});
  NoGradGuard ng;
  for (bool training : {false, true, false, true, true}) {
    model->train(training);
    twin->train(training);
    manual_seed(5);
    Tensor eager = (*twin)(x);
    manual_seed(5);
    Tensor got = (*cm)(x);
    EXPECT_TRUE(bitwise_equal(eager, got)) << "training " << training;
  }
  EXPECT_EQ(cm->function().num_programs(), 2);  // one per flag, then cache hits
  ASSERT_EQ(cm->function().recompile_reasons().size(), 1u);
  EXPECT_EQ(cm->function().recompile_reasons()[0], "training flag false -> true");
  // A submodule's own flag is a guard too.
  model->eval();
  (*cm)(x);  // the eval program again
  EXPECT_EQ(cm->function().num_programs(), 2);
  model->children()[1]->train();
  (*cm)(x);
  EXPECT_EQ(cm->function().num_programs(), 3);
  EXPECT_TRUE(contains(cm->function().recompile_reasons().back(), "training flag of submodule '1'"))
      << cm->function().recompile_reasons().back();
}

TEST(CompiledModule, HooksAddedOrRemovedRecompile) {
  manual_seed(3);
  auto model = nn::models::fashion_mlp();
  model->eval();
  auto cm = compile(model);
  Tensor x = randn({2, 784});
  NoGradGuard ng;
  Tensor plain = (*cm)(x);
  auto h = model->children()[1]->register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& out) { return out * 0.0; });  // zeroes Linear(784, 256)
  Tensor hooked = (*cm)(x);
  EXPECT_TRUE(bitwise_equal(hooked, (*model)(x)));
  EXPECT_FALSE(bitwise_equal(hooked, plain));
  EXPECT_EQ(cm->function().captures(), 2);
  EXPECT_TRUE(contains(cm->function().recompile_reasons().back(), "forward hooks"));
  h.remove();
  EXPECT_TRUE(bitwise_equal((*cm)(x), plain));
  EXPECT_EQ(cm->function().captures(), 3);
  // A pre-hook on the root module is traced as well.
  model->register_forward_pre_hook([](nn::Module&, const Tensor& in) { return in * 2.0; });
  EXPECT_TRUE(bitwise_equal((*cm)(x), (*model)(x)));
  EXPECT_EQ(cm->function().captures(), 4);
}

TEST(CompiledModule, ReplacedAddedOrRemovedParametersRecompile) {
  auto m = std::make_shared<Scale>();
  auto cm = compile(m);
  Tensor x = tensor({1.0f, 2.0f, 3.0f});
  NoGradGuard ng;
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({3.0f, 5.0f, 7.0f})));
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({3.0f, 5.0f, 7.0f})));
  // In-place update: the same program sees it.
  m->slot_->mul_(2.0);
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({5.0f, 9.0f, 13.0f})));
  EXPECT_EQ(cm->function().captures(), 1);
  // The registered parameter replaced by another tensor of the same meta: recompiles.
  // (Identity is the tensor's address; `old` stays alive so the new tensor cannot reuse it.
  // A reuse would skip the recompile and still be right: parameters are bound per call.)
  Tensor old = *m->slot_;
  *m->slot_ = full({3}, -1.0).requires_grad_();
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({0.0f, -1.0f, -2.0f})));
  EXPECT_EQ(cm->function().captures(), 2);
  EXPECT_EQ(cm->function().recompile_reasons().back(), "parameter 'weight' (replaced by another tensor)");
  // ... by one of another shape (broadcast [1]): recompiles on the input's sizes.
  *m->slot_ = full({1}, 3.0).requires_grad_();
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({4.0f, 7.0f, 10.0f})));
  EXPECT_TRUE(contains(cm->function().recompile_reasons().back(), "input 'weight' sizes [3] -> [1]"))
      << cm->function().recompile_reasons().back();
  // A parameter added (to a submodule): recompiles (the number of inputs changes).
  Tensor* added = &m->holder->register_parameter("unused", zeros({2}));
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({4.0f, 7.0f, 10.0f})));
  EXPECT_EQ(cm->function().captures(), 4);
  EXPECT_TRUE(contains(cm->function().recompile_reasons().back(), "number of inputs 2 -> 3"))
      << cm->function().recompile_reasons().back();
  // Removed again (an undefined slot is not a parameter): the module is in the state of
  // the third program, whose cached program runs.
  *added = Tensor();
  EXPECT_TRUE(bitwise_equal((*cm)(x), tensor({4.0f, 7.0f, 10.0f})));
  EXPECT_EQ(cm->function().captures(), 4);
  EXPECT_EQ(cm->function().compiled_calls(), 3);
}

TEST(CompiledModule, UnregisteredTensorsAreBoundByReferenceWithANotice) {
  auto m = std::make_shared<Unregistered>();
  auto cm = compile(m);
  Tensor x = zeros({3});
  NoGradGuard ng;
  (*cm)(x);
  m->offset.add_(1.0);  // in place: seen
  EXPECT_TRUE(bitwise_equal((*cm)(x), full({3}, 2.0)));
  EXPECT_EQ(cm->function().compiled_calls(), 1);
  ASSERT_EQ(cm->function().warnings().size(), 1u);
  EXPECT_TRUE(contains(cm->function().warnings()[0], "not registered")) << cm->function().warnings()[0];
}

TEST(CompiledModule, GradRequiringCallsCompileAndBackpropagate) {
  manual_seed(4);
  auto model = nn::models::fashion_mlp();
  auto cm = compile(model);
  Tensor x = randn({2, 784});
  for (int call = 0; call < 2; ++call) {
    model->zero_grad();
    Tensor out = (*cm)(x);  // grad mode on, parameters require grad: forward + backward programs
    EXPECT_TRUE(out.requires_grad());
    out.sum().backward();
    EXPECT_TRUE(model->parameters()[0].grad().defined());
  }
  EXPECT_EQ(cm->function().captures(), 1);
  EXPECT_EQ(cm->function().compiled_calls(), 1);
  EXPECT_TRUE(cm->function().warnings().empty());
  EXPECT_NE(cm->function().last_training_program(), nullptr);
}

TEST(CompiledModule, BatchNormTrainingUpdatesRunningStatsLikeEager) {
  // Training mode under no_grad: batch norm writes running_mean/var in place
  // (OpDef::mutates_inputs), which the compiled program must do exactly as eager does.
  auto make = [] {
    manual_seed(6);
    return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
        std::make_shared<nn::Conv2d>(2, 4, std::vector<int64_t>{3, 3}), std::make_shared<nn::BatchNorm2d>(4),
        std::make_shared<nn::ReLU>()});
  };
  auto model = make(), twin = make();
  auto cm = compile(model);
  NoGradGuard ng;
  for (int step = 0; step < 3; ++step) {
    Tensor x = randn({3, 2, 6, 6});
    Tensor eager = (*twin)(x);
    EXPECT_TRUE(bitwise_equal(eager, (*cm)(x))) << "step " << step;
    auto a = twin->named_buffers(), b = model->named_buffers();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
  EXPECT_EQ(cm->function().compiled_calls(), 2);
  // Eval mode: a second program that reads the stats and writes nothing.
  model->eval();
  twin->eval();
  Tensor x = randn({3, 2, 6, 6});
  EXPECT_TRUE(bitwise_equal((*twin)(x), (*cm)(x)));
  EXPECT_TRUE(bitwise_equal((*twin)(x), (*cm)(x)));
}

TEST(CompiledModule, ExplainNamesParametersAndGuards) {
  manual_seed(7);
  auto model = nn::models::fashion_cnn();
  model->eval();
  auto cm = compile(model);
  NoGradGuard ng;
  auto ex = cm->explain({randn({2, 1, 28, 28})});
  EXPECT_TRUE(ex.compiled);
  std::string text = ex.to_string();
  EXPECT_TRUE(contains(text, "input '0.weight'")) << text;
  EXPECT_TRUE(contains(text, "training flag false")) << text;
  EXPECT_TRUE(contains(text, "forward hooks")) << text;
  EXPECT_TRUE(contains(text, "conv2d")) << text;
  EXPECT_GT(ex.arena_bytes, 0);
  EXPECT_EQ(cm->function().captures(), 0);  // explain caches nothing
  EXPECT_THROW(nn::CompiledModule(nullptr), ValueError);
}

// Issue 12's acceptance, with the model compiled (forward and backward programs) and the
// optimizer eager: 20 steps of the reference models equal eager's bit for bit (losses,
// gradients, parameters, optimizer state).
TEST(CompiledModule, TwentyTrainingStepsOfTheReferenceModelsEqualEagerBitwise) {
  for (const std::string name : {"mlp", "cnn"}) {
    auto make = [&] {
      manual_seed(21);
      return name == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
    };
    auto me = make(), mc = make();
    auto cm = compile(std::static_pointer_cast<nn::Module>(mc));
    std::unique_ptr<optim::Optimizer> oe, oc;
    if (name == "mlp") {
      oe = std::make_unique<optim::SGD>(me->parameters(), optim::SGDOptions(0.05).momentum(0.9));
      oc = std::make_unique<optim::SGD>(mc->parameters(), optim::SGDOptions(0.05).momentum(0.9));
    } else {
      oe = std::make_unique<optim::Adam>(me->parameters(), optim::AdamOptions(1e-3));
      oc = std::make_unique<optim::Adam>(mc->parameters(), optim::AdamOptions(1e-3));
    }
    manual_seed(5);
    for (int step = 0; step < 20; ++step) {
      Tensor x = randn({8, 1, 28, 28});
      Tensor y = randint(0, 10, {8});
      oe->zero_grad();
      oc->zero_grad();
      Tensor le = cross_entropy(me->forward(x), y);
      Tensor lc = cross_entropy((*cm)(x), y);
      ASSERT_TRUE(bitwise_equal(le, lc)) << name << " step " << step;
      le.backward();
      lc.backward();
      auto pe = me->parameters(), pc = mc->parameters();
      for (size_t k = 0; k < pe.size(); ++k)
        ASSERT_TRUE(bitwise_equal(pe[k].grad(), pc[k].grad())) << name << " step " << step << " grad " << k;
      oe->step();
      oc->step();
      for (size_t k = 0; k < pe.size(); ++k)
        ASSERT_TRUE(bitwise_equal(pe[k], pc[k])) << name << " step " << step << " parameter " << k;
    }
    auto se = oe->state_dict(), sc = oc->state_dict();
    ASSERT_EQ(se.state.size(), sc.state.size());
    for (size_t k = 0; k < se.state.size(); ++k) EXPECT_TRUE(bitwise_equal(se.state[k].second, sc.state[k].second)) << name;
    EXPECT_EQ(cm->function().captures(), 1) << name;
    EXPECT_EQ(cm->function().compiled_calls(), 19) << name;
  }
}
