#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;

namespace {
TensorMeta meta(DimVector sizes, DType dt = kFloat32) { return TensorMeta{dt, std::move(sizes), {}}; }
int count_op(const ir::Graph& g, const std::string& name) {
  int c = 0;
  for (const auto& n : g.nodes()) c += n.op->name == name;
  return c;
}
}  // namespace

TEST(Passes, DceRemovesUnusedButKeepsInplaceAndRandom) {
  ir::Graph g;
  int x = g.add_input(meta({4}), "x");
  int two = g.add_constant(full({}, 2.0));
  int unused = g.add_node(get_op("mul"), {x, two}, {});
  int r = g.add_node(get_op("rand"), {}, {AttrValue(DimVector{4}), AttrValue(kFloat32)});
  g.add_node(*get_op("add").inplace, {x, two}, {AttrValue(Scalar(1))});
  int used = g.add_node(get_op("add"), {x, two}, {AttrValue(Scalar(1))});
  g.set_outputs({g.nodes()[used].outputs[0]});
  (void)unused;
  (void)r;
  EXPECT_TRUE(passes::dead_code_elimination(g));
  ir::verify(g);
  EXPECT_EQ(count_op(g, "mul"), 0);
  EXPECT_EQ(count_op(g, "rand"), 1);
  EXPECT_EQ(count_op(g, "add_"), 1);
  EXPECT_FALSE(passes::dead_code_elimination(g));
}

TEST(Passes, CseMergesButNotAcrossWritesOrRandom) {
  ir::Graph g;
  int x = g.add_input(meta({4}), "x");
  int two = g.add_constant(full({}, 2.0));
  int a = g.nodes()[g.add_node(get_op("mul"), {x, two}, {})].outputs[0];
  int b = g.nodes()[g.add_node(get_op("mul"), {x, two}, {})].outputs[0];
  g.add_node(*get_op("add").inplace, {x, two}, {AttrValue(Scalar(1))});  // x changes
  int c = g.nodes()[g.add_node(get_op("mul"), {x, two}, {})].outputs[0];
  int r1 = g.nodes()[g.add_node(get_op("rand"), {}, {AttrValue(DimVector{4}), AttrValue(kFloat32)})].outputs[0];
  int r2 = g.nodes()[g.add_node(get_op("rand"), {}, {AttrValue(DimVector{4}), AttrValue(kFloat32)})].outputs[0];
  g.set_outputs({a, b, c, r1, r2});
  EXPECT_TRUE(passes::common_subexpression_elimination(g));
  ir::verify(g);
  EXPECT_EQ(count_op(g, "mul"), 2);  // a == b merged; c after the write is kept
  EXPECT_EQ(count_op(g, "rand"), 2);
  EXPECT_EQ(g.outputs()[0], g.outputs()[1]);
  EXPECT_NE(g.outputs()[0], g.outputs()[2]);
}

TEST(Passes, CanonicalizeEnablesCse) {
  ir::Graph g;
  int x = g.add_input(meta({4}), "x");
  int y = g.add_input(meta({4}), "y");
  int a = g.nodes()[g.add_node(get_op("mul"), {x, y}, {})].outputs[0];
  int b = g.nodes()[g.add_node(get_op("mul"), {y, x}, {})].outputs[0];
  g.set_outputs({a, b});
  EXPECT_TRUE(passes::canonicalize(g));
  EXPECT_TRUE(passes::common_subexpression_elimination(g));
  EXPECT_EQ(count_op(g, "mul"), 1);
}

TEST(Passes, ConstantFoldingFoldsFactoriesUnlessWritten) {
  ir::Graph g;
  int x = g.add_input(meta({3}), "x");
  int f = g.nodes()[g.add_node(get_op("full"), {}, {AttrValue(DimVector{3}), AttrValue(Scalar(2.0)), AttrValue(kFloat32)})].outputs[0];
  int f2 = g.nodes()[g.add_node(get_op("mul"), {f, f}, {})].outputs[0];  // constant * constant
  int buf = g.nodes()[g.add_node(get_op("full"), {}, {AttrValue(DimVector{3}), AttrValue(Scalar(0.0)), AttrValue(kFloat32)})].outputs[0];
  g.add_node(*get_op("add").inplace, {buf, x}, {AttrValue(Scalar(1))});  // buf is written: keep it
  int out = g.nodes()[g.add_node(get_op("mul"), {x, f2}, {})].outputs[0];
  g.set_outputs({out, buf});
  EXPECT_TRUE(passes::constant_folding(g));
  passes::dead_code_elimination(g);
  ir::verify(g);
  EXPECT_EQ(count_op(g, "full"), 1);
  EXPECT_EQ(count_op(g, "mul"), 1);
  const auto& mul = g.nodes().back();
  EXPECT_EQ(g.value(mul.inputs[1]).kind, ir::ValueKind::Constant);
  EXPECT_FLOAT_EQ(g.value(mul.inputs[1]).constant[0].item<float>(), 4.0f);
}

TEST(Passes, NoopRemoval) {
  ir::Graph g;
  int x = g.add_input(meta({2, 3}), "x");
  int one = g.add_constant(full({}, 1.0));
  int zero = g.add_constant(full({}, 0.0));
  int v = g.nodes()[g.add_node(get_op("view"), {x}, {AttrValue(DimVector{2, 3})})].outputs[0];
  int m = g.nodes()[g.add_node(get_op("mul"), {v, one}, {})].outputs[0];
  int a = g.nodes()[g.add_node(get_op("add"), {m, zero}, {AttrValue(Scalar(1))})].outputs[0];  // float +0 kept
  int s = g.nodes()[g.add_node(get_op("sub"), {a, zero}, {AttrValue(Scalar(1))})].outputs[0];
  int t = g.nodes()[g.add_node(get_op("mul"), {s, s}, {})].outputs[0];
  g.set_outputs({t});
  EXPECT_TRUE(passes::noop_removal(g));
  ir::verify(g);
  EXPECT_EQ(count_op(g, "view"), 0);
  EXPECT_EQ(count_op(g, "sub"), 0);
  EXPECT_EQ(count_op(g, "add"), 1);
  EXPECT_EQ(count_op(g, "mul"), 1);  // mul by one removed, x*x kept
  // The add now reads x directly.
  EXPECT_EQ(g.nodes()[0].op->name, "add");
  EXPECT_EQ(g.nodes()[0].inputs[0], x);
}

TEST(Passes, ManagerSwitchesAndVerifierCatchesBadGraphs) {
  passes::PassManager pm;
  EXPECT_THROW(pm.set_enabled("nope", false), ValueError);
  pm.set_enabled("dce", false);
  ir::Graph g;
  int x = g.add_input(meta({2}), "x");
  int two = g.add_constant(full({}, 2.0));
  g.add_node(get_op("mul"), {x, two}, {});
  g.set_outputs({x});
  pm.run(g);
  EXPECT_EQ(count_op(g, "mul"), 1);  // dce disabled
  // A node whose recorded meta disagrees with meta inference is rejected.
  ir::Graph bad;
  int y = bad.add_input(meta({2}), "y");
  bad.add_node(get_op("mul"), {y, y}, {}, {meta({3})});
  EXPECT_THROW(ir::verify(bad), RuntimeError);
  EXPECT_NE(g.to_text().find("mul("), std::string::npos);
  EXPECT_NE(g.to_dot().find("digraph"), std::string::npos);
}
