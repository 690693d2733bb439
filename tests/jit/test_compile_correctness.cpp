// Compiled mode never returns a wrong value silently (issue 19): one test per class of
// bug found by testing compiled mode as users would. Each compares a compiled call with
// the eager call on copies of the inputs: outputs bitwise (bytes, dtype, sizes, strides),
// their aliasing (fresh memory vs a view of an input, distinct objects), the inputs after
// the call, and errors (the same error type when eager raises).
#include <gtest/gtest.h>

#include <cstring>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Deep copies of `in` that keep each tensor's geometry (sizes, strides, storage offset and
// storage size), so eager runs on copies exactly like the compiled call's inputs.
std::vector<Tensor> twin(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) {
    const int64_t n = static_cast<int64_t>(t.storage()->nbytes()) / t.element_size();
    Tensor flat = empty_tensor({n}, t.dtype());
    if (n > 0) std::memcpy(flat.data_ptr(), t.storage()->data(), t.storage()->nbytes());
    out.push_back(flat.as_strided(t.sizes(), t.strides(), t.storage_offset()));
  }
  return out;
}

// Same bytes, dtype, sizes, strides and storage offset.
bool identical(const Tensor& a, const Tensor& b) {
  return bitwise_equal(a, b, /*same_strides=*/true) && a.storage_offset() == b.storage_offset();
}

// Runs fn compiled (`calls` times, each on fresh inputs made by `make`) and eagerly on twins;
// checks outputs, inputs after the call, and that outputs alias an input exactly when the
// eager ones do.
void expect_same(const std::shared_ptr<jit::CompiledFunction>& cf, const jit::TensorFn& fn,
                 const std::function<std::vector<Tensor>()>& make, int calls = 3) {
  for (int call = 0; call < calls; ++call) {
    std::vector<Tensor> in = make();
    std::vector<Tensor> ein = twin(in);
    std::vector<Tensor> want = fn(ein);
    std::vector<Tensor> got = (*cf)(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_TRUE(identical(got[k], want[k])) << "call " << call << " output " << k << ": " << got[k] << " vs " << want[k];
      for (size_t i = 0; i < in.size(); ++i) {
        EXPECT_EQ(got[k].storage().get() == in[i].storage().get(), want[k].storage().get() == ein[i].storage().get())
            << "call " << call << " output " << k << " input " << i << ": aliasing differs";
        EXPECT_EQ(got[k].impl() == in[i].impl(), want[k].impl() == ein[i].impl())
            << "call " << call << " output " << k << " input " << i << ": object identity differs";
      }
      for (size_t j = 0; j < k; ++j)
        EXPECT_EQ(got[k].storage().get() == got[j].storage().get(), want[k].storage().get() == want[j].storage().get())
            << "call " << call << " outputs " << j << " and " << k << ": sharing differs";
    }
    for (size_t i = 0; i < in.size(); ++i)
      EXPECT_TRUE(identical(in[i], ein[i])) << "call " << call << " input " << i << " after the call";
  }
}

}  // namespace

// ------------------------------------------------------------------ guards

TEST(CompileCorrectness, AsStridedWithoutOffsetFollowsTheInputsOffset) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].as_strided({2, 2}, {1, 2}) * 2.0}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor base = arange(12, kFloat32);
  int offset = 0;
  // Same sizes and strides each call, another storage offset.
  expect_same(cf, fn, [&] {
        const int start = offset++;
        return std::vector<Tensor>{base.slice(0, start, start + 6)};
      }, 4);
  EXPECT_GE(cf->compiled_calls(), 3);
}

TEST(CompileCorrectness, AsStridedWithAnAbsoluteOffsetCountsFromTheStorage) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].as_strided({3}, {2}, 1) + 1.0}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor base = arange(12, kFloat32);
  int offset = 0;
  expect_same(cf, fn, [&] {
        const int start = offset++;
        return std::vector<Tensor>{base.slice(0, start, start + 6)};
      }, 3);
}

TEST(CompileCorrectness, AsStridedBoundsAreCheckedOnEveryCall) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].as_strided({3}, {2}) + 1.0}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor big = arange(8, kFloat32);
  (*cf)({big.slice(0, 0, 4)});  // 5 elements from offset 0 fit in 8
  (*cf)({big.slice(0, 0, 4)});
  // The same sizes and strides, but 5 elements from offset 4 do not fit in 8: eager raises.
  EXPECT_NO_THROW((*cf)({big.slice(0, 3, 7)}));  // offset 3: elements 3..7 fit
  EXPECT_THROW(fn({big.slice(0, 4, 8)}), ValueError);
  EXPECT_THROW((*cf)({big.slice(0, 4, 8)}), ValueError);
  Tensor small = arange(4, kFloat32);  // a storage of its own, too small
  EXPECT_THROW((*cf)({small}), ValueError);
}

TEST(CompileCorrectness, AsStridedOfAnIntermediateUsesItsOwnBuffer) {
  // b lives somewhere in the arena; eagerly it has a storage of its own at offset 0.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0].exp();
    Tensor b = in[0] * 2.0;
    Tensor c = (in[0] - 1.0).sum({0}, true);
    Tensor v = b.as_strided({2, 2}, {1, 3}, 1);
    Tensor w = b.as_strided({2}, {2});
    return std::vector<Tensor>{v + a.sum(), w * c.sum()};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{randn({6})}; });
}

TEST(CompileCorrectness, TensorsMadeFromCppDataStartFreshEachCall) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor acc = tensor({1.0f, 2.0f, 3.0f});
    acc.add_(in[0]);  // eager: a new acc each call
    std::vector<float> raw{5, 6, 7};
    Tensor blob = from_blob(raw.data(), {3}, kFloat32).clone();
    return std::vector<Tensor>{acc, acc * blob};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{ones({3})}; }, 4);
  EXPECT_GE(cf->compiled_calls(), 3);
  auto ex = explain(fn, {ones({3})});
  bool listed = false;
  for (const auto& g : ex.guards) listed = listed || contains(g, "made from C++ data");
  EXPECT_TRUE(listed) << ex.to_string();
}

TEST(CompileCorrectness, HooksAddedAfterCaptureOnAModuleACompiledFunctionCalls) {
  manual_seed(0);
  auto lin = std::make_shared<nn::Linear>(3, 2);
  auto fn = [lin](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*lin)(in[0])}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  Tensor x = randn({4, 3});
  (*cf)({x});
  (*cf)({x});
  auto h = lin->register_forward_hook([](nn::Module&, const Tensor&, const Tensor& y) { return y * 2.0; });
  EXPECT_TRUE(identical((*cf)({x})[0], fn({x})[0]));
  EXPECT_TRUE(identical((*cf)({x})[0], fn({x})[0]));
  ASSERT_FALSE(cf->recompile_reasons().empty());
  EXPECT_TRUE(contains(cf->recompile_reasons().back(), "module 'Linear'")) << cf->recompile_reasons().back();
  // Replacing a registered parameter tensor recompiles too.
  lin->weight.mul_(1.0);
  h.remove();
  EXPECT_TRUE(identical((*cf)({x})[0], fn({x})[0]));
  lin->train(false);
  EXPECT_TRUE(identical((*cf)({x})[0], fn({x})[0]));
}

namespace {
// A module whose forward rebinds a registered buffer to a new tensor each call.
struct Accumulator : nn::Module {
  Tensor* acc;
  Accumulator() : nn::Module("Accumulator") { acc = &register_buffer("acc", ones({2})); }
  Tensor forward(const Tensor& x) override {
    *acc = *acc * x;  // a new tensor, not an in-place update
    return *acc + 0.0;
  }
};
}  // namespace

TEST(CompileCorrectness, ABufferReboundInForwardRunsEagerlyWithANotice) {
  auto m = std::make_shared<Accumulator>();
  auto m2 = std::make_shared<Accumulator>();
  auto cf = compile([m](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*m)(in[0])}; });
  NoGradGuard ng;
  for (int call = 0; call < 3; ++call) {
    Tensor x = full({2}, 2.0);
    Tensor got = (*cf)({x})[0];
    Tensor want = (*m2)(x);
    EXPECT_TRUE(identical(got, want)) << got << " vs " << want;
  }
  EXPECT_EQ(cf->compiled_calls(), 0);
  ASSERT_FALSE(cf->warnings().empty());
  EXPECT_TRUE(contains(cf->warnings()[0], "replaced one of its parameters or buffers")) << cf->warnings()[0];
}

// ------------------------------------------------------------------ passes

TEST(CompileCorrectness, InPlaceOpsWithAWiderResultTypeComputeWideThenCopy) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0].clone();
    a.add_(in[1]);  // float16 += float32: computed in float32, rounded once
    Tensor b = in[2].clone();
    b.lt_(in[3]);  // int64 < float: bool, stored as int64
    Tensor c = in[2].clone();
    c.mul_(in[3]);  // int64 *= float raises in eager (float can't be cast to int64)
    return std::vector<Tensor>{a, b};
  };
  auto make = [] {
    return std::vector<Tensor>{randn({5}).to(kFloat16), randn({5}), arange(5, kInt64), randn({5})};
  };
  NoGradGuard ng;
  auto ins = make();
  EXPECT_THROW(fn(ins), TypeError);
  auto cf = compile(fn);
  EXPECT_THROW((*cf)(ins), TypeError);
  auto fn2 = [](const std::vector<Tensor>& in) {
    Tensor a = in[0].clone();
    a.add_(in[1]);
    Tensor b = in[2].clone();
    b.lt_(in[3]);
    Tensor self = in[0];
    self.mul_(in[1]);  // and on an input
    return std::vector<Tensor>{a, b};
  };
  auto cf2 = compile(fn2);
  expect_same(cf2, fn2, make);
  EXPECT_GE(cf2->compiled_calls(), 2);
}

TEST(CompileCorrectness, AFoldedOutputIsAFreshTensorEachCall) {
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{full({3}, 2.0) * 3.0, in[0] + 1.0};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  for (int call = 0; call < 3; ++call) {
    auto got = (*cf)({ones({3})});
    EXPECT_TRUE(identical(got[0], full({3}, 6.0)));
    got[0].add_(100.0);  // the caller owns its result
  }
}

TEST(CompileCorrectness, CopiesAndIdentityViewsOfReturnedValuesStay) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor c = in[0].clone();
    Tensor v = c.view({2, 3});  // returned view of a copy: must not alias the input
    Tensor t = in[1].to(kFloat32);   // same dtype: a no-op copy, viewed and returned
    Tensor s = in[2].view({4});      // identity view, written in place and returned
    Tensor r = s.relu_();
    return std::vector<Tensor>{v, t.view({3, 2}), r};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{randn({6}), randn({6}), randn({4})}; });
}

TEST(CompileCorrectness, StaleAliasesAfterFoldingDoNotLetInPlaceReuseWriteAConstant) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor k = full({4}, 2.0).view({2, 2}) * 1.0;  // folds to a constant; its view is live
    Tensor v = k.view({4});
    Tensor y = v * in[0];  // y could be written into v's storage if v looked dead
    return std::vector<Tensor>{y, in[1].relu()};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{randn({4}), randn({3})}; }, 4);
}

TEST(CompileCorrectness, InPlaceReuseOnlyOnViewsCoveringTheirBuffer) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor a = in[0] * 2.0;        // [4, 3], dies at the tanh
    return std::vector<Tensor>{tanh(a.select(0, 3))};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{randn({4, 3})}; });
  auto got = (*cf)({randn({4, 3})})[0];
  EXPECT_EQ(got.storage_offset(), 0);
  EXPECT_EQ(static_cast<int64_t>(got.storage()->nbytes()), 3 * 4);
}

TEST(CompileCorrectness, CseKeepsTwoReturnedResultsDistinct) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2.0, in[0] * 2.0}; };
  auto cf = compile(fn);
  NoGradGuard ng;
  expect_same(cf, fn, [] { return std::vector<Tensor>{randn({3})}; });
  auto got = (*cf)({randn({3})});
  EXPECT_NE(got[0].storage().get(), got[1].storage().get());
}

TEST(CompileCorrectness, OperandOrderOfFloatOpsIsKept) {
  // max/min of +0 and -0, and NaN payloads, depend on the operand order.
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{maximum(in[1], in[0]), minimum(in[1], in[0]), in[1] + in[0], in[1] * in[0]};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  auto make = [] {
    Tensor a = tensor({0.0f, -0.0f, 1.0f, 0.0f});
    Tensor b = tensor({-0.0f, 0.0f, 2.0f, 0.0f});
    uint32_t nan1 = 0x7fc00001u, nan2 = 0x7fc00002u;
    std::memcpy(static_cast<float*>(a.data_ptr()) + 3, &nan1, 4);
    std::memcpy(static_cast<float*>(b.data_ptr()) + 3, &nan2, 4);
    return std::vector<Tensor>{a, b};
  };
  expect_same(cf, fn, make);
}

TEST(CompileCorrectness, FusedConvReluPoolKeepsNaNPayloads) {
  manual_seed(3);
  Tensor w = randn({4, 2, 3, 3}), b = randn({4});
  auto fn = [&](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{max_pool2d(relu(conv2d(in[0], w, b, {1, 1}, {1, 1})), {2, 2}, {2, 2})};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  auto make = [] {
    Tensor x = randn({2, 2, 8, 8});
    uint32_t nan = 0x7fc12345u;
    std::memcpy(static_cast<float*>(x.data_ptr()) + 9, &nan, 4);
    std::memcpy(static_cast<float*>(x.data_ptr()) + 140, &nan, 4);
    return std::vector<Tensor>{x};
  };
  expect_same(cf, fn, make);
  auto ex = explain(fn, make());
  EXPECT_TRUE(contains(ex.graph_text, "_fused_conv2d")) << ex.graph_text;
  // The reference CNN's blocks (channel-blocked layouts), with NaNs of several payloads
  // and infinities (inf - inf makes the default NaN inside the convolution).
  for (int64_t cin : {1, 32}) {
    const int64_t cout = cin == 1 ? 32 : 64, hw = cin == 1 ? 28 : 14;
    Tensor w2 = randn({cout, cin, 3, 3}), b2 = randn({cout});
    auto block = [w2, b2](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{max_pool2d(relu(conv2d(in[0], w2, b2, {1, 1}, {1, 1})), {2, 2}, {2, 2})};
    };
    auto cb = compile(block);
    uint64_t seed = 7;
    auto make_block = [&] {
      Tensor x = randn({3, cin, hw, hw});
      const uint32_t bits[] = {0x7fc12345u, 0xffc10000u, 0x7f800000u, 0xff800000u, 0x7fa00001u};
      for (int e = 0; e < 12; ++e) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        std::memcpy(static_cast<float*>(x.data_ptr()) + (seed >> 33) % x.numel(), &bits[(seed >> 20) % 5], 4);
      }
      return std::vector<Tensor>{x};
    };
    expect_same(cb, block, make_block);
  }
}

TEST(CompileCorrectness, UnusedOpsThatRaiseOnDataStillRaise) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor unused = in[0].div(in[1], "trunc");       // integer division by zero
    Tensor unused2 = index_select(in[2], 0, in[3]);  // index out of range
    return std::vector<Tensor>{in[2] * 2.0};
  };
  auto cf = compile(fn);
  NoGradGuard ng;
  auto ok = [] {
    return std::vector<Tensor>{arange(4, kInt64), full({4}, 2, kInt64), randn({3}), tensor({0, 2}).to(kInt64)};
  };
  (*cf)(ok());
  (*cf)(ok());
  auto zero_div = ok();
  zero_div[1] = zeros({4}, kInt64);
  EXPECT_THROW(fn(zero_div), ValueError);
  EXPECT_THROW((*cf)(zero_div), ValueError);
  auto bad_index = ok();
  bad_index[3] = tensor({0, 7}).to(kInt64);
  EXPECT_THROW(fn(bad_index), IndexError);
  EXPECT_THROW((*cf)(bad_index), IndexError);
}

// ------------------------------------------------------------------ C++ numbers

TEST(CompileCorrectness, NumbersPassedAsArgumentsAreProgramInputs) {
  auto cf = compile_with_scalars([](const std::vector<Tensor>& t, const std::vector<Tensor>& s) {
    return std::vector<Tensor>{t[0] * s[0] + s[1]};
  });
  NoGradGuard ng;
  Tensor x = randn({4}).to(kFloat16);
  for (double k : {0.5, 2.0, -3.25}) {
    Tensor got = (*cf)({x}, {k, 1})[0];
    Tensor want = x * k + 1;
    EXPECT_TRUE(identical(got, want)) << "k = " << k;  // float16 stays float16
  }
  EXPECT_EQ(cf->function().captures(), 1);
  EXPECT_EQ(cf->function().compiled_calls(), 2);
  // Another kind of number (an integer for a float) is another program.
  Tensor xi = arange(4, kInt64);
  EXPECT_TRUE(identical((*cf)({xi}, {3, 1})[0], xi * 3 + 1));
  EXPECT_TRUE(identical((*cf)({xi}, {3.5, 1})[0], xi * 3.5 + 1));
}

TEST(CompileCorrectness, ExplainListsNumbersBakedIntoTheProgram) {
  double k = 2.0;
  auto fn = [&k](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * k}; };
  NoGradGuard ng;
  auto ex = explain(fn, {ones({2})});
  bool listed = false;
  for (const auto& g : ex.guards) listed = listed || contains(g, "C++ number 2");
  EXPECT_TRUE(listed) << ex.to_string();
}

// ------------------------------------------------------------------ module members

TEST(CompileCorrectness, AssigningALayersParameterMemberReplacesTheParameter) {
  manual_seed(1);
  auto lin = std::make_shared<nn::Linear>(3, 2);
  auto compiled = compile(lin);
  NoGradGuard ng;
  Tensor x = randn({4, 3});
  (*compiled)(x);
  (*compiled)(x);
  lin->weight = randn({2, 3});  // not through the registry
  EXPECT_EQ(lin->named_parameters()[0].second.impl(), lin->weight.impl());
  EXPECT_TRUE(lin->weight.requires_grad());  // a trainable slot, as an nn.Parameter
  EXPECT_TRUE(identical((*compiled)(x), (*lin)(x)));
  EXPECT_TRUE(identical((*compiled)(x), (*lin)(x)));
  auto fn = compile([lin](const std::vector<Tensor>& in) { return std::vector<Tensor>{(*lin)(in[0])}; });
  (*fn)({x});
  (*fn)({x});
  lin->bias = zeros({2});
  EXPECT_TRUE(identical((*fn)({x})[0], (*lin)(x)));
}

// ------------------------------------------------------------------ the checker

TEST(CompileCorrectness, CheckerComparesEveryNodeAndNamesTheFirstDifference) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor h = relu(in[0] * 2.0 + 1.0);
    return std::vector<Tensor>{h.sum({1}), softmax(h, 0)};
  };
  NoGradGuard ng;
  auto rep = jit::check_compiled(fn, {randn({3, 4})});
  EXPECT_TRUE(rep.compiled);
  EXPECT_TRUE(rep.equal) << rep.to_string();
  EXPECT_GE(rep.values_compared, 3);  // the fused mul/add/relu, the sum, the softmax
  // A C++ number captured by reference is baked in at capture: the checker on a later call
  // names the node that used it.
  double k = 2.0;
  auto baked = [&k](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0] + 1.0) * k}; };
  auto cf = compile(baked);
  Tensor x = randn({3});
  (*cf)({x});
  (*cf)({x});
  EXPECT_TRUE(cf->check_last({x}).equal);
  k = 3.0;
  auto stale = cf->check_last({x});
  EXPECT_FALSE(stale.equal);
  // (the name of the program's own node: add and mul are one fused node)
  EXPECT_TRUE(contains(stale.first_difference, "(_fused_pointwise")) << stale.first_difference;
}

TEST(CompileCorrectness, CheckerCoversTheBackwardOfTrainingCalls) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{(in[0].tanh() * in[1]).sum()}; };
  auto rep = jit::check_compiled(fn, {randn({5}).requires_grad_(), randn({5}).requires_grad_()});
  EXPECT_TRUE(rep.compiled);
  EXPECT_TRUE(rep.equal) << rep.to_string();
  EXPECT_GE(rep.values_compared, 5);  // forward and backward values
}
