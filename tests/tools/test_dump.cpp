// `tandem dump`: the captured graph of the reference models as text and DOT.
#include <gtest/gtest.h>

#include "dump.h"
#include "tandem/core/error.h"

namespace {

using tandem::tools::dump_model_graph;

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(Dump, CnnGraphHasTheModelsOps) {
  const std::string text = dump_model_graph("cnn", 2, "text", false);
  EXPECT_EQ(text.rfind("graph(", 0), 0u) << text;
  // After the passes: conv2d -> relu -> max_pool2d fused (fuse_conv_blocks), the last
  // relu in place on the dying linear output (inplace_reuse).
  EXPECT_EQ(count(text, "= _fused_conv2d("), 2u) << text;
  EXPECT_EQ(count(text, "= relu_("), 1u) << text;
  EXPECT_EQ(count(text, "= addmm("), 2u) << text;
  EXPECT_NE(text.find("float32[2, 10]"), std::string::npos) << "batch 2 logits";
  EXPECT_NE(text.find("return ("), std::string::npos);
  // Parameters are named inputs, as in tandem::compile(module)'s graphs.
  EXPECT_NE(text.find("float32[32, 1, 3, 3] \"0.weight\""), std::string::npos) << text;
  EXPECT_EQ(text.find("lifted"), std::string::npos) << text;
}

TEST(Dump, DotAndRaw) {
  const std::string dot = dump_model_graph("mlp", 1, "dot", false);
  EXPECT_EQ(dot.rfind("digraph", 0), 0u) << dot;
  EXPECT_EQ(dot.back(), '\n');
  EXPECT_NE(dot.find("addmm"), std::string::npos);
  // The raw capture has at least the ops that survive the passes.
  EXPECT_GE(count(dump_model_graph("mlp", 1, "text", true), " = "), count(dump_model_graph("mlp", 1, "text", false), " = "));
}

TEST(Dump, TrainingProgramsShowTheSplitAndTheSavedValues) {
  const std::string text = dump_model_graph("mlp", 4, "text", false, /*training=*/true);
  const size_t fwd = text.find("forward program"), bwd = text.find("backward program");
  ASSERT_NE(fwd, std::string::npos) << text;
  ASSERT_NE(bwd, std::string::npos) << text;
  EXPECT_LT(fwd, bwd);
  // The backward of relu and of the linear layers needs activations: they are saved.
  EXPECT_GE(count(text.substr(fwd, bwd - fwd), "# saved %"), 2u) << text;
  EXPECT_NE(text.find("bytes)"), std::string::npos) << text;
  // The backward program computes the weight gradients with matrix products.
  EXPECT_GE(count(text.substr(bwd), "mm("), 2u) << text;
  const std::string dot = dump_model_graph("cnn", 2, "dot", false, true);
  EXPECT_EQ(count(dot, "digraph"), 2u);
  EXPECT_THROW(dump_model_graph("mlp", 1, "text", true, true), tandem::ValueError);
}

TEST(Dump, BadArguments) {
  EXPECT_THROW(dump_model_graph("resnet", 1, "text", false), tandem::ValueError);
  EXPECT_THROW(dump_model_graph("mlp", 0, "text", false), tandem::ValueError);
  EXPECT_THROW(dump_model_graph("mlp", 1, "svg", false), tandem::ValueError);
  EXPECT_EQ(tandem::tools::dump_main({"--batch"}), 2);
  EXPECT_EQ(tandem::tools::dump_main({"--frobnicate"}), 2);
}

}  // namespace

// --step: the whole training step as one program: the backward's products and the fused
// updates in one graph, the loss and the parameters' new .grad as its outputs.
TEST(Dump, StepProgramHoldsForwardBackwardAndUpdates) {
  const std::string text = tandem::tools::dump_step_program("mlp", 4, "text");
  EXPECT_NE(text.find("the whole training step of mlp (SGD)"), std::string::npos) << text;
  EXPECT_EQ(count(text, "_fused_sgd_("), 6u) << text;
  EXPECT_NE(text.find("nll_loss_backward("), std::string::npos) << text;
  EXPECT_GE(count(text, "mm("), 4u) << text;
  const std::string cnn = tandem::tools::dump_step_program("cnn", 2, "text");
  EXPECT_EQ(count(cnn, "_fused_adam_("), 8u) << cnn;
  EXPECT_EQ(count(tandem::tools::dump_step_program("mlp", 2, "dot"), "digraph"), 1u);
  EXPECT_THROW(tandem::tools::dump_step_program("mlp", 0, "text"), tandem::ValueError);
}
