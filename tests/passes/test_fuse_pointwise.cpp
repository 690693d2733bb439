// The elementwise fusion (fuse_pointwise + _fused_pointwise): fused programs must give
// eager's bytes for every fusible op and dtype, with broadcast, 0-d and non-contiguous
// operands, in forward and backward programs, and the pass must leave what it cannot fuse.
// NaN compares equal to NaN whatever its sign and payload (bitwise_equal_nan_as_nan): an
// operand the fused kernel gathers into a block runs the op's dense loop where eager ran
// its strided one, and when two NaNs meet, which one comes out depends on that code.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "support/bitwise.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::bitwise_equal;
using tandem_test::bitwise_equal_nan_as_nan;

namespace {

int count_op(const ir::Graph& g, const std::string& name) {
  int c = 0;
  for (const auto& n : g.nodes()) c += n.op->name == name;
  return c;
}

/// Random values of dtype d with the awkward ones mixed in (NaN, +-inf, -0.0, 0, 1) for
/// floating dtypes; small integers (no zeros: integer division checks data) otherwise.
Tensor awkward(IntArrayRef sizes, DType d) {
  Tensor t = randn(sizes, kFloat64) * 3.0;
  if (is_floating_point(d)) {
    Tensor flat = t.view({-1});
    const double special[] = {std::nan(""), INFINITY, -INFINITY, -0.0, 0.0, 1.0, 0.5};
    for (int64_t k = 0; k < flat.numel() && k < 7 * 5; k += 5) flat.slice(0, k, k + 1).fill_(special[k / 5]);
    return t.to(d);
  }
  if (d == kBool) return t > Scalar(0);
  Tensor i = t.round().to(kInt64);
  i = where(i == Scalar(0), full({}, 1.0).to(kInt64), i);
  return i.to(d);
}

/// Runs fn eagerly and compiled (no gradients) and expects the same bytes, and (when
/// `expect_fused`) a _fused_pointwise node in the program. Returns whether the program has
/// one (false too when eager raised: the op does not take these dtypes).
bool expect_fused_equals_eager(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                               const std::vector<Tensor>& in, bool expect_fused, const std::string& what) {
  NoGradGuard ng;
  std::vector<Tensor> want;
  try {
    want = fn(in);
  } catch (const Error&) {
    return false;  // the op does not take this dtype: nothing to compare
  }
  auto cf = compile(fn);
  for (int call = 0; call < 2; ++call) {
    std::vector<Tensor> got = (*cf)(in);
    EXPECT_EQ(got.size(), want.size()) << what;
    for (size_t k = 0; k < got.size() && k < want.size(); ++k)
      EXPECT_TRUE(bitwise_equal_nan_as_nan(got[k], want[k])) << what << " output " << k;
  }
  EXPECT_NE(cf->last_executor(), nullptr) << what;
  const bool fused = cf->last_executor() && count_op(cf->last_executor()->graph(), "_fused_pointwise") > 0;
  if (expect_fused) {
    EXPECT_TRUE(fused) << what;
  }
  return fused;
}

}  // namespace

TEST(FusePointwise, EveryFusibleOpInAChainIsBitwiseEager) {
  // For each elementwise op: its first input made by a cast inside the chain, the others
  // broadcast ([1, N]), transposed (non-contiguous) or 0-d, its result cast again: the three
  // nodes become one. Sizes span several blocks of the fused kernel and a ragged last one.
  manual_seed(21);
  int fused_ops = 0;  // ops that fused with at least one dtype
  for (const OpDef* op : all_ops()) {
    if (!op->pointwise || op->is_inplace || op->raises_on_data || op->random || op->num_outputs != 1) continue;
    bool simple = !op->variadic;
    for (const auto& in : op->inputs) simple = simple && !in.optional;
    if (!simple) continue;
    bool fused = false;
    for (DType d : {kFloat32, kFloat64, kBFloat16, kInt64, kBool}) {
      for (int layout = 0; layout < 3; ++layout) {
        const int64_t rows = 7, cols = 2500;  // 17500 elements: 3 blocks of 8192, the last ragged
        // The first operand reaches the op through a cast from float64 inside the chain:
        // values that cast exactly (no inf or NaN turned into integers).
        std::vector<Tensor> in{awkward({rows, cols}, d).to(kFloat64)};
        for (size_t k = 1; k < op->inputs.size(); ++k) {
          if (layout == 0) in.push_back(awkward({1, cols}, d));
          else if (layout == 1) in.push_back(awkward({cols, rows}, d).t());
          else in.push_back(awkward({}, d));
        }
        auto fn = [op, d](const std::vector<Tensor>& x) {
          std::vector<Tensor> args{x[0].to(d)};
          args.insert(args.end(), x.begin() + 1, x.end());
          Tensor y = dispatch1(*op, args);
          return std::vector<Tensor>{y.to(kFloat64)};
        };
        SCOPED_TRACE(str_cat(op->name, " ", dtype_name(d), " layout ", layout));
        // float32 and bfloat16 results are cast back: the chain has three nodes
        const bool chain = d == kFloat32 || d == kBFloat16;
        const bool f = expect_fused_equals_eager(fn, in, /*expect_fused=*/false, op->name);
        fused = fused || (chain && f);
        if (::testing::Test::HasFailure()) return;
      }
    }
    fused_ops += fused;
  }
  EXPECT_GE(fused_ops, 60);  // unary, binary, comparison, logical, bitwise, ternary ops, casts
}

TEST(FusePointwise, RandomChainsAreBitwiseEagerForwardAndBackward) {
  // Chains of 2-7 float ops over inputs that broadcast or are transposed, with and without
  // gradients (the backward program's gradient chains fuse too).
  std::mt19937 rng(7);
  const char* unary[] = {"neg", "abs", "exp", "tanh", "sigmoid", "relu", "sin", "sqrt", "log1p", "square", "gelu", "silu"};
  const char* binary[] = {"add", "sub", "mul", "maximum", "minimum", "threshold_backward", "atan2"};
  int fused_programs = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const DType d = trial % 3 == 0 ? kFloat64 : (trial % 3 == 1 ? kFloat32 : kBFloat16);
    const int len = 2 + static_cast<int>(rng() % 6);
    std::vector<std::string> ops;
    std::vector<int> which;  // per op: which input feeds a binary op's second operand
    for (int k = 0; k < len; ++k) {
      const bool bin = rng() % 2;
      ops.push_back(bin ? binary[rng() % std::size(binary)] : unary[rng() % std::size(unary)]);
      which.push_back(static_cast<int>(rng() % 3));
    }
    manual_seed(static_cast<uint64_t>(trial));
    std::vector<Tensor> in{awkward({33, 300}, d), awkward({1, 300}, d), awkward({300, 33}, d).t()};
    auto fn = [ops, which](const std::vector<Tensor>& x) {
      Tensor y = x[0];
      for (size_t k = 0; k < ops.size(); ++k) {
        const OpDef& op = get_op(ops[k]);
        y = op.inputs.size() == 1 ? dispatch1(op, {y}) : dispatch1(op, {y, x[static_cast<size_t>(which[k])]});
      }
      return std::vector<Tensor>{y};
    };
    std::string what;
    for (const auto& o : ops) what += o + " ";
    SCOPED_TRACE(str_cat("trial ", trial, " ", dtype_name(d), ": ", what));
    expect_fused_equals_eager(fn, in, /*expect_fused=*/false, what);
    // With gradients: forward and backward programs against eager's gradients.
    if (d == kBFloat16) continue;
    std::vector<Tensor> leaves;
    for (const Tensor& t : in) leaves.push_back(t.detach().clone().requires_grad_());
    auto loss_fn = [fn](const std::vector<Tensor>& x) { return std::vector<Tensor>{fn(x)[0].sum()}; };
    std::vector<Tensor> eager_grads;
    bool eager_ok = true;
    try {
      loss_fn(leaves)[0].backward();
    } catch (const Error&) {
      eager_ok = false;  // an op without a backward rule: nothing to compare
    }
    if (!eager_ok) continue;
    for (auto& l : leaves) {
      eager_grads.push_back(l.grad());
      l.set_grad(Tensor());
    }
    auto cf = compile(loss_fn);
    (*cf)(leaves)[0].backward();  // the capture
    for (auto& l : leaves) l.set_grad(Tensor());
    (*cf)(leaves)[0].backward();  // the programs
    for (size_t k = 0; k < leaves.size(); ++k) {
      ASSERT_EQ(leaves[k].grad().defined(), eager_grads[k].defined()) << "gradient " << k;
      if (eager_grads[k].defined()) {
        EXPECT_TRUE(bitwise_equal_nan_as_nan(leaves[k].grad(), eager_grads[k])) << "gradient " << k;
      }
    }
    const jit::TrainingProgram* tp = cf->last_training_program();
    ASSERT_NE(tp, nullptr);
    if (count_op(tp->backward->graph(), "_fused_pointwise") > 0) ++fused_programs;
  }
  EXPECT_GT(fused_programs, 0);
}

TEST(FusePointwise, ChainsFuseIntoOneNodeAndSharedIntermediatesStay) {
  ir::Graph g;
  auto meta = [](std::vector<int64_t> s) { return TensorMeta{kFloat32, DimVector(s.begin(), s.end()), {}}; };
  int x = g.add_input(meta({4, 5}), "x");
  int b = g.add_input(meta({5}), "b");
  int a = g.nodes()[g.add_node(get_op("mul"), {x, x}, {})].outputs[0];   // read twice below: stays out
  int e = g.nodes()[g.add_node(get_op("add"), {a, b}, {AttrValue(Scalar(1))})].outputs[0];
  int r = g.nodes()[g.add_node(get_op("relu"), {e}, {})].outputs[0];
  int t = g.nodes()[g.add_node(get_op("tanh"), {r}, {})].outputs[0];
  int s = g.nodes()[g.add_node(get_op("sum"), {a}, {})].outputs[0];  // a second reader of a
  g.set_outputs({t, s});
  EXPECT_TRUE(passes::fuse_pointwise(g));
  ir::verify(g);
  EXPECT_EQ(count_op(g, "_fused_pointwise"), 1);
  EXPECT_EQ(count_op(g, "mul"), 1);   // its result is also summed
  EXPECT_EQ(count_op(g, "relu"), 0);  // add, relu and tanh are one node
  EXPECT_EQ(g.outputs()[0], t);       // the chain's result keeps its value
  EXPECT_FALSE(passes::fuse_pointwise(g));  // nothing left to fuse
}

TEST(FusePointwise, AResultReadTwiceByOneOpOfTheChainFuses) {
  // y = x + 1; z = y * y: y's two reads are both the chain's, so the two ops are one node.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] + 1.0;
    return std::vector<Tensor>{(y * y).tanh()};
  };
  manual_seed(6);
  NoGradGuard ng;
  auto cf = compile(fn);
  Tensor x = randn({40, 50});
  Tensor want = fn({x})[0];
  (*cf)({x});
  EXPECT_TRUE(bitwise_equal((*cf)({x})[0], want));
  ASSERT_NE(cf->last_executor(), nullptr);
  const ir::Graph& g = cf->last_executor()->graph();
  EXPECT_EQ(count_op(g, "_fused_pointwise"), 1);
  EXPECT_EQ(count_op(g, "add") + count_op(g, "mul") + count_op(g, "tanh"), 0) << g.to_text();
}

TEST(FusePointwise, NeverMovesAnOpPastAWriteToItsInput) {
  // y = neg(x); x.mul_(2); z = exp(y): neg must not run where exp runs, after the write.
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor x = in[0].clone();
    Tensor y = neg(x);
    x.mul_(2.0);
    return std::vector<Tensor>{exp(y), x};
  };
  manual_seed(4);
  expect_fused_equals_eager(fn, {randn({6, 7})}, /*expect_fused=*/false, "write between");
}

TEST(FusePointwise, MalformedProgramsAreErrorsNotCrashes) {
  Tensor x = randn({3});
  auto run = [&](std::string ops, std::vector<int64_t> prog, std::vector<AttrValue> extra = {}) {
    std::vector<AttrValue> a{AttrValue(ops), AttrValue(prog)};
    a.insert(a.end(), extra.begin(), extra.end());
    return dispatch1(get_op("_fused_pointwise"), {x}, a);
  };
  const int64_t f32 = static_cast<int64_t>(kFloat32);
  EXPECT_TRUE(bitwise_equal(run("neg,exp", {1, 0, 0, f32, 1, -1, 0, f32}), exp(neg(x))));
  EXPECT_THROW(run("sum", {1, 0, 0, f32}), ValueError);          // not elementwise
  EXPECT_THROW(run("no_such_op", {1, 0, 0, f32}), ValueError);   // unknown
  EXPECT_THROW(run("neg", {1, 5, 0, f32}), ValueError);          // input 5 of 1
  EXPECT_THROW(run("neg", {1, -1, 0, f32}), ValueError);         // a result not made yet
  EXPECT_THROW(run("neg", {1, 0, 3, f32}), ValueError);          // attributes missing
  EXPECT_THROW(run("neg", {1, 0, 0, f32, 9}), ValueError);       // trailing entries
  EXPECT_THROW(run("neg", {1, 0, 0, 999}), ValueError);          // a bad dtype
  EXPECT_THROW(run("neg", {1, 0, 0, static_cast<int64_t>(kInt64)}), ValueError);  // a wrong dtype
}
