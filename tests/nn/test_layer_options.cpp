// Layer options beyond the basics, the parts tests/data/nn_modules.json (PyTorch's values)
// cannot express: constructor and forward errors, eager vs tandem::compile (bitwise: the
// compiled program runs the same kernels), printing. The values themselves are oracle cases
// (tests/oracle/gen_nn_modules.py): Conv*d padding_mode, MaxPool return_indices, BatchNorm
// momentum None, Embedding max_norm, hooks on two-input modules.
#include <gtest/gtest.h>

#include <cstring>

#include "support/bitwise.h"
#include "nn_test_util.h"

using namespace tandem;
using tandem_test::bitwise_equal;
using namespace tandem::nn;
using nn::testing::expect_error;
using nn::testing::same_values;

namespace {


// Eager vs compiled of two twins (same seed, so the same parameters), several calls (the
// first captures, the others run the program); the state (buffers, parameters) after each
// call equal too. `make` builds the module; `inputs` gives each call's inputs.
template <typename Make, typename Inputs>
void expect_compiled_like_eager(Make make, Inputs inputs, int calls = 3) {
  manual_seed(11);
  ModulePtr eager = make();
  manual_seed(11);
  ModulePtr model = make();
  auto cm = compile(model);
  NoGradGuard ng;
  for (int i = 0; i < calls; ++i) {
    SCOPED_TRACE(str_cat("call ", i));
    std::vector<Tensor> in = inputs(i);
    std::vector<Tensor> want = (*eager)(in);
    std::vector<Tensor> got = (*cm)(in);
    ASSERT_EQ(want.size(), got.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_TRUE(bitwise_equal(want[k], got[k])) << "output " << k;
    auto a = eager->state_dict(), b = model->state_dict();
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(bitwise_equal(a[k].second, b[k].second)) << a[k].first;
  }
  EXPECT_EQ(cm->function().captures(), 1);
  EXPECT_EQ(cm->function().compiled_calls(), calls - 1);
}

ConvOptions conv_opts(std::vector<int64_t> padding, std::string mode, std::string same = "") {
  ConvOptions o;
  o.padding = std::move(padding);
  o.padding_mode = std::move(mode);
  o.padding_mode_same = std::move(same);
  return o;
}

// ------------------------------------------------------------------ Conv padding_mode

TEST(ConvPaddingMode, ConstructorErrors) {
  expect_error<ValueError>([] { Conv2d(2, 3, {3}, conv_opts({1}, "reflection")); },
                           {"Conv2d", "padding_mode 'reflection'", "'zeros', 'reflect', 'replicate' or 'circular'"});
  expect_error<ValueError>([] { Conv1d(2, 3, 3, conv_opts({1}, "")); }, {"Conv1d", "padding_mode ''"});
  expect_error<ValueError>([] { ConvTranspose2d(2, 3, {3}, conv_opts({1}, "reflect")); },
                           {"ConvTranspose2d", "padding_mode 'reflect'", "transposed"});
  expect_error<ValueError>([] { Conv2d(2, 3, {3}, conv_opts({0}, "zeros", "full")); },
                           {"Conv2d", "padding 'full'", "'same' or 'valid'"});
  ConvOptions strided = conv_opts({0}, "reflect", "same");
  strided.stride = {1, 2};
  expect_error<ValueError>([&] { Conv2d(2, 3, {3}, strided); }, {"Conv2d", "'same'", "stride [1, 2]"});
  // Fine: the four modes, and ConvTranspose2d with "zeros".
  for (const char* m : {"zeros", "reflect", "replicate", "circular"}) {
    EXPECT_NO_THROW(Conv2d(2, 3, {3}, conv_opts({1}, m)));
    EXPECT_NO_THROW(Conv1d(2, 3, 3, conv_opts({1}, m)));
  }
  EXPECT_NO_THROW(ConvTranspose2d(2, 3, {3}, conv_opts({1}, "zeros")));
}

TEST(ConvPaddingMode, ForwardErrorsComeFromPad) {
  manual_seed(0);
  // reflect: padding must be smaller than the input dim (F.pad's rule).
  Conv2d reflect(1, 1, {3}, conv_opts({3}, "reflect"));
  expect_error<ValueError>([&] { reflect(zeros({1, 1, 3, 5})); }, {"pad", "smaller than the dim's size"});
  EXPECT_EQ(reflect(zeros({1, 1, 4, 4})).sizes().vec(), (std::vector<int64_t>{1, 1, 8, 8}));
  // circular: at most the input dim, batched input only (as torch 1.13's F.pad).
  Conv1d circ(2, 1, 3, conv_opts({4}, "circular"));
  expect_error<ValueError>([&] { circ(zeros({1, 2, 3})); }, {"pad", "at most the dim's size"});
  expect_error<NotImplementedError>([&] { circ(zeros({2, 6})); }, {"pad", "circular"});
  EXPECT_EQ(circ(zeros({1, 2, 4})).sizes().vec(), (std::vector<int64_t>{1, 1, 10}));
}

TEST(ConvPaddingMode, NonZeroModesDifferFromZerosAndEachOther) {
  // A check independent of the oracle: an all-ones 3-tap kernel over the ramp 1 2 3 4
  // padded by 1 sums each padded neighbourhood (the padded row is in each comment).
  std::vector<Tensor> outs;
  for (const char* m : {"zeros", "reflect", "replicate", "circular"}) {
    ConvOptions o = conv_opts({1}, m);
    o.bias = false;
    Conv1d c(1, 1, 3, o);
    {
      NoGradGuard ng;
      c.weight.fill_(1.0);
    }
    outs.push_back(c(tensor({1.0f, 2.0f, 3.0f, 4.0f}).reshape({1, 1, 4})).detach());
  }
  EXPECT_TRUE(same_values(outs[0], tensor({3.0f, 6.0f, 9.0f, 7.0f}).reshape({1, 1, 4})));    // 0 1 2 3 4 0
  EXPECT_TRUE(same_values(outs[1], tensor({5.0f, 6.0f, 9.0f, 10.0f}).reshape({1, 1, 4})));   // 2 1 2 3 4 3
  EXPECT_TRUE(same_values(outs[2], tensor({4.0f, 6.0f, 9.0f, 11.0f}).reshape({1, 1, 4})));   // 1 1 2 3 4 4
  EXPECT_TRUE(same_values(outs[3], tensor({7.0f, 6.0f, 9.0f, 8.0f}).reshape({1, 1, 4})));    // 4 1 2 3 4 1
}

TEST(ConvPaddingMode, CompiledEqualsEager) {
  for (const char* m : {"reflect", "replicate", "circular"}) {
    SCOPED_TRACE(m);
    expect_compiled_like_eager(
        [m] {
          ConvOptions o = conv_opts({1, 2}, m);
          o.stride = {2, 1};
          return std::make_shared<Conv2d>(2, 3, std::vector<int64_t>{3, 3}, o);
        },
        [](int i) { return std::vector<Tensor>{randn({2, 2, 6, 5 + 0 * i})}; });
    expect_compiled_like_eager([m] { return std::make_shared<Conv1d>(2, 3, 4, conv_opts({0}, m, "same")); },
                               [](int) { return std::vector<Tensor>{randn({2, 2, 9})}; });
  }
}

TEST(ConvPaddingMode, Repr) {
  Conv2d c(2, 3, {3}, conv_opts({1}, "reflect"));
  EXPECT_EQ(c.to_string(), "Conv2d(2, 3, kernel_size=[3, 3], stride=[1], padding=[1], padding_mode=reflect)");
  Conv2d z(2, 3, {3}, conv_opts({1}, "zeros"));
  EXPECT_EQ(z.to_string(), "Conv2d(2, 3, kernel_size=[3, 3], stride=[1], padding=[1])");
}

// ------------------------------------------------------------------ MaxPool return_indices

TEST(MaxPoolIndices, ListCallReturnsValuesAndIndices) {
  Tensor x = tensor({1.0f, 5.0f, 2.0f, 4.0f, 3.0f, 0.0f}).reshape({1, 1, 6});
  MaxPool1d p1(2, std::nullopt, 0, 1, false, true);
  auto out = p1(std::vector<Tensor>{x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(same_values(out[0], tensor({5.0f, 4.0f, 3.0f}).reshape({1, 1, 3})));
  EXPECT_EQ(out[1].dtype(), kInt64);
  EXPECT_TRUE(same_values(out[1], tensor({1, 3, 4}, kInt64).reshape({1, 1, 3})));
  // Without return_indices the list call has one output, equal to the one-tensor call.
  MaxPool1d plain(2);
  auto one = plain(std::vector<Tensor>{x});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(same_values(one[0], out[0]));
  EXPECT_TRUE(same_values(plain(x), out[0]));
  // 2-D: indices flattened over each H x W plane.
  MaxPool2d p2({2}, {}, {0}, {1}, false, true);
  Tensor x2 = tensor({1.0f, 2.0f, 3.0f, 4.0f, 8.0f, 7.0f, 6.0f, 5.0f}).reshape({1, 2, 4});
  auto out2 = p2(std::vector<Tensor>{x2});
  ASSERT_EQ(out2.size(), 2u);
  EXPECT_TRUE(same_values(out2[0], tensor({8.0f, 6.0f}).reshape({1, 1, 2})));
  EXPECT_TRUE(same_values(out2[1], tensor({4, 6}, kInt64).reshape({1, 1, 2})));
}

TEST(MaxPoolIndices, Errors) {
  MaxPool2d p2({2}, {}, {0}, {1}, false, true);
  expect_error<ValueError>([&] { p2(zeros({1, 1, 4, 4})); }, {"MaxPool2d", "return_indices", "list call"});
  expect_error<ValueError>([&] { p2(std::vector<Tensor>{zeros({1, 1, 4, 4}), zeros({1})}); },
                           {"MaxPool2d", "one tensor, got 2"});
  MaxPool1d p1(2, std::nullopt, 0, 1, false, true);
  expect_error<ValueError>([&] { p1(zeros({1, 1, 4})); }, {"MaxPool1d", "return_indices"});
  expect_error<ShapeError>([&] { p1(std::vector<Tensor>{zeros({1, 1, 4, 4})}); }, {"MaxPool1d", "2D or 3D", "4D"});
  expect_error<ShapeError>([&] { MaxPool1d(2)(zeros({4})); }, {"MaxPool1d", "2D or 3D"});
  expect_error<ValueError>([] { MaxPool1d(0); }, {"MaxPool1d", "kernel_size"});
  expect_error<ValueError>([] { MaxPool1d(2, 0); }, {"MaxPool1d", "stride"});
  expect_error<ValueError>([] { MaxPool1d(2, 1, 0, 0); }, {"MaxPool1d", "dilation"});
  expect_error<ValueError>([] { MaxPool1d(3, 1, 2); }, {"MaxPool1d", "padding 2", "half the kernel"});
  EXPECT_EQ(MaxPool1d(3).to_string(), "MaxPool1d(kernel_size=3, stride=3, padding=0, dilation=1, ceil_mode=False)");
}

TEST(MaxPoolIndices, CompiledEqualsEager) {
  expect_compiled_like_eager(
      [] { return std::make_shared<MaxPool2d>(std::vector<int64_t>{3}, std::vector<int64_t>{2}, std::vector<int64_t>{1},
                                              std::vector<int64_t>{1}, true, true); },
      [](int) { return std::vector<Tensor>{randn({2, 3, 7, 6})}; });
  expect_compiled_like_eager([] { return std::make_shared<MaxPool1d>(3, 2, 1, 1, false, true); },
                             [](int) { return std::vector<Tensor>{randn({2, 3, 9})}; });
  expect_compiled_like_eager([] { return std::make_shared<MaxPool1d>(2, 1, 1, 2, true, false); },
                             [](int) { return std::vector<Tensor>{randn({3, 10})}; });
}

// ------------------------------------------------------------------ MaxUnpool2d

TEST(MaxUnpool, InvertsMaxPoolOnTheMaxima) {
  manual_seed(8);
  MaxPool2d pool({2}, {}, {0}, {1}, false, true);
  MaxUnpool2d unpool({2});
  Tensor x = randn({2, 3, 4, 6});
  auto vi = pool(std::vector<Tensor>{x});
  Tensor y = unpool(std::vector<Tensor>{vi[0], vi[1]})[0];
  ASSERT_EQ(y.sizes().vec(), x.sizes().vec());
  // Each 2x2 window keeps its maximum in place and zeros elsewhere.
  Tensor mask = y != 0.0;
  EXPECT_TRUE(same_values(where(mask, x, 0.0), y));
  EXPECT_EQ(mask.sum().item<int64_t>(), 2 * 3 * 2 * 3);
  // output_size: the default or within (default - stride, default + stride); leading dims ignored.
  Tensor big = unpool.unpool(vi[0], vi[1], std::vector<int64_t>{2, 3, 5, 7});
  EXPECT_EQ(big.sizes().vec(), (std::vector<int64_t>{2, 3, 5, 7}));
  EXPECT_EQ((big != 0.0).sum().item<int64_t>(), 2 * 3 * 2 * 3);
  // Unbatched.
  EXPECT_EQ(unpool.unpool(vi[0][0], vi[1][0]).sizes().vec(), (std::vector<int64_t>{3, 4, 6}));
}

TEST(MaxUnpool, Errors) {
  MaxUnpool2d unpool({2});
  Tensor v = zeros({1, 1, 2, 2});
  Tensor i = zeros({1, 1, 2, 2}, kInt64);
  expect_error<NotImplementedError>([&] { unpool(v); }, {"MaxUnpool2d"});
  expect_error<ValueError>([&] { unpool(std::vector<Tensor>{v}); }, {"MaxUnpool2d", "two inputs", "got 1"});
  expect_error<ShapeError>([&] { unpool.unpool(zeros({2, 2}), zeros({2, 2}, kInt64)); }, {"MaxUnpool2d", "3D or 4D"});
  expect_error<TypeError>([&] { unpool.unpool(v, zeros({1, 1, 2, 2}, kInt32)); }, {"MaxUnpool2d", "int32", "int64"});
  expect_error<ShapeError>([&] { unpool.unpool(v, zeros({1, 1, 2, 1}, kInt64)); }, {"MaxUnpool2d", "[1, 1, 2, 1]"});
  expect_error<ValueError>([&] { unpool.unpool(v, i, std::vector<int64_t>{6, 4}); }, {"MaxUnpool2d", "output_size [6, 4]"});
  expect_error<ValueError>([&] { unpool.unpool(v, i, std::vector<int64_t>{4}); }, {"MaxUnpool2d", "at least 2"});
  expect_error<IndexError>([&] { unpool.unpool(v, full({1, 1, 2, 2}, 16, kInt64)); }, {"16"});
  expect_error<ValueError>([] { MaxUnpool2d({0}); }, {"MaxUnpool2d", "kernel_size"});
  expect_error<ValueError>([] { MaxUnpool2d({2}, {1, 2, 3}); }, {"MaxUnpool2d", "one value or two"});
  expect_error<ValueError>([] { MaxUnpool2d({2}, {}, {-1}); }, {"MaxUnpool2d", "padding"});
}

TEST(MaxUnpool, CompiledEqualsEager) {
  expect_compiled_like_eager([] { return std::make_shared<MaxUnpool2d>(std::vector<int64_t>{3}, std::vector<int64_t>{2},
                                                                       std::vector<int64_t>{1}); },
                             [](int) {
                               auto [v, i] = max_pool2d_with_indices(randn({2, 2, 7, 5}), {3}, {2}, {1});
                               return std::vector<Tensor>{v, i};
                             });
}

// ------------------------------------------------------------------ BatchNorm momentum None

TEST(BatchNormMomentumNone, RunningStatsAreTheAverageOfAllBatches) {
  // From the initial state (count 0), the cumulative moving average after k batches is the
  // plain mean of the k batch means and of the k unbiased batch variances.
  manual_seed(3);
  BatchNorm1d bn(4, 1e-5, std::nullopt);
  bn.to(kFloat64);
  std::vector<Tensor> means, vars;
  for (int k = 0; k < 4; ++k) {
    Tensor x = randn({6, 4}, kFloat64) * (k + 1.0) + k;
    means.push_back(x.mean({0}));
    vars.push_back(x.var({0}));
    bn(x);
  }
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 4);
  Tensor want_mean = (means[0] + means[1] + means[2] + means[3]) / 4.0;
  Tensor want_var = (vars[0] + vars[1] + vars[2] + vars[3]) / 4.0;
  EXPECT_TRUE(oracle::compare_tensors(bn.running_mean, want_mean, 1e-12, 1e-12).empty());
  EXPECT_TRUE(oracle::compare_tensors(bn.running_var, want_var, 1e-12, 1e-12).empty());
  // Eval mode ignores momentum and changes nothing.
  bn.eval();
  Tensor before = bn.running_mean.clone();
  bn(randn({6, 4}, kFloat64));
  EXPECT_TRUE(same_values(bn.running_mean, before));
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 4);
}

TEST(BatchNormMomentumNone, Repr) {
  EXPECT_EQ(BatchNorm2d(3, 1e-5, std::nullopt).to_string(),
            "BatchNorm2d(3, eps=1e-05, momentum=None, affine=True, track_running_stats=True)");
  EXPECT_EQ(BatchNorm2d(3).to_string(), "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)");
}

TEST(BatchNormMomentumNone, CompiledEqualsEagerAsTheCountGrows) {
  // Each call's factor (1, 1/2, 1/3, ...) comes from num_batches_tracked: the compiled
  // program must read the buffer, not a constant captured at the first call.
  expect_compiled_like_eager(
      [] {
        return std::make_shared<Sequential>(std::vector<ModulePtr>{
            std::make_shared<Conv2d>(2, 3, std::vector<int64_t>{3}),
            std::make_shared<BatchNorm2d>(3, 1e-5, std::nullopt)});
      },
      [](int) { return std::vector<Tensor>{randn({3, 2, 5, 5})}; }, 5);
  expect_compiled_like_eager([] { return std::make_shared<BatchNorm1d>(4, 1e-3, std::nullopt, false); },
                             [](int) { return std::vector<Tensor>{randn({5, 4, 3})}; }, 4);
}

// ------------------------------------------------------------------ Embedding max_norm

TEST(EmbeddingMaxNorm, RenormalisesOnlyLookedUpRowsOverTheBound) {
  Embedding emb(4, 2, std::nullopt, 1.0);
  {
    NoGradGuard ng;
    emb.weight.copy_(tensor({3.0f, 4.0f, 0.6f, 0.8f, 0.3f, 0.4f, 6.0f, 8.0f}).reshape({4, 2}));
  }
  Tensor y = emb(tensor({0, 2, 0}, kInt64));
  // Row 0 (norm 5) -> norm 1; row 2 (0.5) kept; row 3 (norm 10) is not looked up: kept.
  const float s = static_cast<float>(1.0 / (5.0 + 1e-7));
  Tensor want_w = tensor({3.0f * s, 4.0f * s, 0.6f, 0.8f, 0.3f, 0.4f, 6.0f, 8.0f}).reshape({4, 2});
  EXPECT_TRUE(oracle::compare_tensors(emb.weight, want_w, 1e-6, 1e-7).empty()) << emb.weight;
  EXPECT_TRUE(oracle::compare_tensors(y, index_select(want_w, 0, tensor({0, 2, 0}, kInt64)), 1e-6, 1e-7).empty());
  EXPECT_TRUE(emb.weight.requires_grad());
  // The gradient still reaches the weight (the renorm itself is not differentiated).
  y.sum().backward();
  EXPECT_TRUE(same_values(emb.weight.grad(), tensor({2.0f, 2.0f, 0.0f, 0.0f, 1.0f, 1.0f, 0.0f, 0.0f}).reshape({4, 2})));
  // int32 indices work too.
  EXPECT_EQ(emb(tensor({3}, kInt32)).sizes().vec(), (std::vector<int64_t>{1, 2}));
  EXPECT_NEAR(norm(emb.weight.select(0, 3)).item<double>(), 1.0, 1e-6);
}

TEST(EmbeddingMaxNorm, ErrorsLeaveTheWeightUnchanged) {
  manual_seed(1);
  Embedding emb(5, 3, std::nullopt, 0.5);
  Tensor before = emb.weight.detach().clone();
  expect_error<IndexError>([&] { emb(tensor({1, 5}, kInt64)); }, {"5"});
  expect_error<IndexError>([&] { emb(tensor({-1}, kInt64)); }, {});
  expect_error<TypeError>([&] { emb(zeros({2})); }, {"embedding_renorm_", "float32"});
  EXPECT_TRUE(same_values(emb.weight, before));
  Tensor w = zeros({5});
  expect_error<ShapeError>([&] { nn::functional::embedding_renorm_(w, tensor({1}, kInt64), 1.0); },
                           {"embedding_renorm_", "[5]"});
}

TEST(EmbeddingMaxNorm, Repr) {
  EXPECT_EQ(Embedding(5, 3).to_string(), "Embedding(5, 3)");
  EXPECT_EQ(Embedding(5, 3, -1, 1.5, 1.0, true).to_string(),
            "Embedding(5, 3, padding_idx=4, max_norm=1.5, norm_type=1, scale_grad_by_freq=True)");
}

TEST(EmbeddingMaxNorm, CompiledEqualsEager) {
  // The renorm writes the weight (a program input) in place: each call sees the previous
  // call's renormalised rows, in compiled mode as in eager.
  expect_compiled_like_eager([] { return std::make_shared<Embedding>(8, 4, 1, 1.2); },
                             [](int i) { return std::vector<Tensor>{tensor({i, 2 * i, 7, 1}, kInt64).reshape({2, 2})}; },
                             4);
  expect_compiled_like_eager([] { return std::make_shared<Embedding>(6, 3, std::nullopt, 0.9, 3.0); },
                             [](int i) { return std::vector<Tensor>{tensor({5 - i, 0, 5 - i}, kInt64)}; });
}

// ------------------------------------------------------------------ hooks on two-input modules

TEST(ListHooks, RunOnBilinearAndMayReplaceInputsAndOutputs) {
  manual_seed(4);
  auto bil = std::make_shared<Bilinear>(2, 3, 4);
  Tensor x1 = randn({5, 2}), x2 = randn({5, 3});
  std::vector<std::string> calls;
  auto pre = bil->register_forward_pre_hook([&](Module& m, const std::vector<Tensor>& in) {
    EXPECT_EQ(&m, bil.get());
    EXPECT_EQ(in.size(), 2u);
    calls.push_back("pre");
    return std::vector<Tensor>{in[0] * 2.0, in[1]};  // replaces the inputs
  });
  auto keep = bil->register_forward_hook([&](Module&, const std::vector<Tensor>& in, const std::vector<Tensor>& out) {
    calls.push_back("keep");
    EXPECT_EQ(in.size(), 2u);
    EXPECT_EQ(out.size(), 1u);
    EXPECT_TRUE(same_values(in[0], x1 * 2.0)) << "hooks see the replaced inputs";
    return std::vector<Tensor>{};  // keeps the outputs
  });
  auto post = bil->register_forward_hook([&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
    calls.push_back("post");
    return std::vector<Tensor>{out[0] + 1.0};
  });
  std::vector<Tensor> y = (*bil)(std::vector<Tensor>{x1, x2});
  EXPECT_EQ(calls, (std::vector<std::string>{"pre", "keep", "post"}));
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(same_values(y[0], bil->forward2(x1 * 2.0, x2) + 1.0));
  // forward_list itself runs no hooks; removed hooks stop running.
  calls.clear();
  EXPECT_TRUE(same_values(bil->forward_list({x1, x2})[0], bil->forward2(x1, x2)));
  EXPECT_TRUE(calls.empty());
  pre.remove();
  post.remove();
  keep.remove();
  EXPECT_TRUE(same_values((*bil)(std::vector<Tensor>{x1, x2})[0], bil->forward2(x1, x2)));
  EXPECT_TRUE(calls.empty());
}

TEST(ListHooks, OneTensorHooksOnSeveralInputsOrOutputsRaise) {
  manual_seed(4);
  Bilinear bil(2, 3, 4);
  std::vector<Tensor> in{randn({5, 2}), randn({5, 3})};
  int ran = 0;
  auto h = bil.register_forward_hook([&](Module&, const Tensor&, const Tensor&) {
    ++ran;
    return Tensor();
  });
  expect_error<ValueError>([&] { bil(in); }, {"Bilinear", "one-tensor forward hook", "2 inputs", "list hook"});
  h.remove();
  auto p = bil.register_forward_pre_hook([&](Module&, const Tensor&) {
    ++ran;
    return Tensor();
  });
  expect_error<ValueError>([&] { bil(in); }, {"Bilinear", "one-tensor forward pre-hook", "2 inputs"});
  p.remove();
  EXPECT_EQ(ran, 0);
  // One input, two outputs (return_indices): a one-tensor hook raises, a list hook sees both.
  MaxPool2d pool({2}, {}, {0}, {1}, false, true);
  auto one = pool.register_forward_hook([](Module&, const Tensor&, const Tensor&) { return Tensor(); });
  expect_error<ValueError>([&] { pool(std::vector<Tensor>{zeros({1, 1, 4, 4})}); }, {"MaxPool2d", "2 outputs"});
  one.remove();
  auto lh = pool.register_forward_hook([](Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
    EXPECT_EQ(out.size(), 2u);
    return std::vector<Tensor>{out[0] * 0.0, out[1]};
  });
  auto out = pool(std::vector<Tensor>{randn({1, 1, 4, 4})});
  EXPECT_TRUE(same_values(out[0], zeros({1, 1, 2, 2})));
  EXPECT_EQ(out[1].dtype(), kInt64);
}

TEST(ListHooks, MixWithOneTensorHooksOnOneTensorCalls) {
  manual_seed(5);
  auto lin = std::make_shared<Linear>(3, 2);
  Tensor x = randn({4, 3});
  std::vector<std::string> calls;
  lin->register_forward_pre_hook([&](Module&, const Tensor& in) {
    calls.push_back("pre1");
    return in + 1.0;
  });
  lin->register_forward_pre_hook([&](Module&, const std::vector<Tensor>& in) {
    calls.push_back("preL");
    EXPECT_EQ(in.size(), 1u);
    return std::vector<Tensor>{in[0] * 3.0};
  });
  auto post_list = lin->register_forward_hook([&](Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
    calls.push_back("postL");
    return std::vector<Tensor>{out[0] - 1.0};
  });
  Tensor want = lin->forward((x + 1.0) * 3.0) - 1.0;
  EXPECT_TRUE(same_values((*lin)(x), want));
  EXPECT_EQ(calls, (std::vector<std::string>{"pre1", "preL", "postL"}));
  auto v = (*lin)(std::vector<Tensor>{x});  // the list call runs the same hooks
  ASSERT_EQ(v.size(), 1u);
  EXPECT_TRUE(same_values(v[0], want));
  post_list.remove();
  auto two = lin->register_forward_hook([](Module&, const std::vector<Tensor>&, const std::vector<Tensor>& out) {
    return std::vector<Tensor>{out[0], out[0]};
  });
  expect_error<ValueError>([&] { (*lin)(x); }, {"Linear", "returned 2 outputs", "one-tensor call"});
  EXPECT_EQ((*lin)(std::vector<Tensor>{x}).size(), 2u);  // a list call takes them
  two.remove();
}

TEST(ListHooks, CompiledBilinearRunsHooksLikeEager) {
  manual_seed(6);
  auto bil = std::make_shared<Bilinear>(3, 2, 4);
  auto cm = compile(bil);
  std::vector<Tensor> in{randn({5, 3}), randn({5, 2})};
  NoGradGuard ng;
  Tensor plain = (*cm)(in)[0];
  EXPECT_TRUE(bitwise_equal(plain, (*bil)(in)[0]));
  auto h = bil->register_forward_hook([](Module&, const std::vector<Tensor>& xs, const std::vector<Tensor>& out) {
    return std::vector<Tensor>{out[0] * 2.0 + xs[0].sum()};
  });
  Tensor hooked = (*cm)(in)[0];
  EXPECT_TRUE(bitwise_equal(hooked, (*bil)(in)[0]));
  EXPECT_FALSE(bitwise_equal(hooked, plain));
  EXPECT_TRUE(bitwise_equal((*cm)(in)[0], hooked));  // the hooked program, cached
  EXPECT_EQ(cm->function().captures(), 2);
  h.remove();
  EXPECT_TRUE(bitwise_equal((*cm)(in)[0], plain));
  // A list hook registered before compiling is traced into the program.
  expect_compiled_like_eager(
      [] {
        auto b = std::make_shared<Bilinear>(3, 2, 4);
        b->register_forward_pre_hook([](Module&, const std::vector<Tensor>& xs) {
          return std::vector<Tensor>{xs[0], xs[1] * -1.0};
        });
        return b;
      },
      [](int) { return std::vector<Tensor>{randn({5, 3}), randn({5, 2})}; });
}

}  // namespace
