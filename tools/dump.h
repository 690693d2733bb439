#pragma once
// `tandem dump`: prints the graph that compiled mode captures for a reference model
// (nn/models.h), as text or Graphviz DOT, before or after the optimisation passes.
#include <string>
#include <vector>

namespace tandem::tools {

/// The --help text of `tandem dump`.
std::string dump_usage();

/// Entry point of `tandem dump ARGS...`: writes the graph to stdout; returns the exit
/// status (0 done, 1 error, 2 bad usage).
int dump_main(const std::vector<std::string>& args);

/// The graph of `model` ("mlp" | "cnn") in eval mode on a float32 batch [batch, 1, 28, 28]:
/// as text (format "text") or DOT ("dot"), after the default passes unless `raw`. With
/// `training`: the forward and backward programs of a call in train mode that needs
/// gradients (TrainingProgram::to_text, saved values marked; DOT: two digraphs).
/// ValueError for an unknown model/format, batch < 1, or raw with training.
std::string dump_model_graph(const std::string& model, int64_t batch, const std::string& format, bool raw,
                             bool training = false);

/// The program of a whole compiled training step of `model` (zero_grad, forward,
/// cross_entropy, backward, optimizer step: SGD lr 0.05 momentum 0.9 for mlp, Adam lr 1e-3
/// for cnn, as bench/ trains them) on a float32 batch [batch, 1, 28, 28] with int64 labels
/// [batch]: one graph holding the forward, the backward and the fused updates, after its
/// passes, as text (a header names its outputs: the loss, then each parameter's new .grad)
/// or DOT. ValueError for an unknown model/format or batch < 1; RuntimeError if the step
/// did not compile (names the reason).
std::string dump_step_program(const std::string& model, int64_t batch, const std::string& format);

}  // namespace tandem::tools
