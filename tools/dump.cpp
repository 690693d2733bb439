#include "dump.h"

#include <iostream>

#include "tandem/tandem.h"
#include "train.h"

namespace tandem::tools {

std::string dump_usage() {
  return R"(usage: tandem dump [FLAGS]

Prints the graph compiled mode captures for a reference model in eval mode, or with
--training the forward and backward programs of a training call (train mode, gradients),
or with --step the program of a whole compiled training step.

  --model NAME     mlp (default) | cnn (the models of `tandem train`)
  --batch N        batch size of the example input [N, 1, 28, 28] (default 1)
  --format NAME    text (default) | dot (Graphviz: `tandem dump --format dot | dot -Tsvg`)
  --raw            the graph as captured, before the optimisation passes
  --training       the training call: the forward program (outputs, then the values
                   saved for the backward, each marked "# saved") and the backward
                   program (saved values + output gradient -> parameter gradients),
                   each after its passes; with --format dot, two digraphs
  --step           the whole training step compiled as one program (zero_grad, forward,
                   loss, backward, optimizer step: SGD momentum for mlp, Adam for cnn):
                   its outputs are the loss and the parameters' new .grad; the fused
                   update ops write parameters and optimizer state in place
  --help           this text

Set TANDEM_DUMP_PASSES=1 to print the graph after every pass of a compiled call.
)";
}

namespace {
// The reference model named by --model (seed 0) after checking the flags both dumps take.
std::shared_ptr<nn::Sequential> checked_model(const std::string& model, int64_t batch, const std::string& format) {
  TANDEM_CHECK(model == "mlp" || model == "cnn", ValueError, "tandem dump", "--model got \"", model,
               "\", expected mlp | cnn");
  TANDEM_CHECK(format == "text" || format == "dot", ValueError, "tandem dump", "--format got \"", format,
               "\", expected text | dot");
  TANDEM_CHECK(batch >= 1, ValueError, "tandem dump", "--batch got ", batch, ", expected >= 1");
  manual_seed(0);
  std::shared_ptr<nn::Sequential> m = model == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
  return m;
}
}  // namespace

std::string dump_model_graph(const std::string& model, int64_t batch, const std::string& format, bool raw,
                             bool training) {
  std::shared_ptr<nn::Sequential> m = checked_model(model, batch, format);
  if (training) {
    TANDEM_CHECK(!raw, ValueError, "tandem dump", "--raw and --training: the training programs exist only after the split");
    // The split a compiled module makes on a call that needs gradients.
    auto cm = compile(std::static_pointer_cast<nn::Module>(m));
    for (int call = 0; call < 2; ++call) (*cm)(zeros({batch, 1, 28, 28}));  // capture, then the programs
    const auto* p = cm->function().last_training_program();
    TANDEM_CHECK(p != nullptr, RuntimeError, "tandem dump", "the training call did not compile: ",
                 cm->function().warnings().empty() ? std::string("no reason given") : cm->function().warnings()[0]);
    if (format == "dot") return p->forward->graph().to_dot() + p->backward->graph().to_dot();
    return p->to_text();
  }
  m->eval();
  NoGradGuard no_grad;
  // The parameters and buffers are passed as named inputs (forward still reads them from
  // the module; capture maps them to these inputs), so the graph names them as
  // tandem::compile(module) does ("0.weight"), not as lifted tensors ("lifted0").
  std::vector<Tensor> inputs{zeros({batch, 1, 28, 28})};
  std::vector<std::string> names{"input"};
  for (const auto& list : {m->named_parameters(), m->named_buffers()})
    for (const auto& [name, t] : list) {
      inputs.push_back(t);
      names.push_back(name);
    }
  jit::Capture cap = jit::capture([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{m->forward(in[0])}; },
                                  inputs, names);
  TANDEM_CHECK(cap.ok, RuntimeError, "tandem dump", "capture broke: ", cap.break_reason);
  if (!raw) passes::PassManager().run(cap.graph);
  return format == "dot" ? cap.graph.to_dot() : cap.graph.to_text();
}

std::string dump_step_program(const std::string& model, int64_t batch, const std::string& format) {
  std::shared_ptr<nn::Sequential> m = checked_model(model, batch, format);
  std::unique_ptr<optim::Optimizer> opt;
  if (model == "cnn") opt = std::make_unique<optim::Adam>(m->parameters(), optim::AdamOptions(1e-3));
  else opt = std::make_unique<optim::SGD>(m->parameters(), optim::SGDOptions(0.05).momentum(0.9));
  auto step = compile([&](const std::vector<Tensor>& in) {
    opt->zero_grad();
    Tensor loss = cross_entropy(m->forward(in[0]), in[1]);
    loss.backward();
    opt->step();
    return std::vector<Tensor>{loss.detach()};
  });
  const Tensor x = zeros({batch, 1, 28, 28}), y = zeros({batch}, DType::Int64);
  // The optimizer makes its state on the first call (eager), the second is captured, the
  // third runs the program.
  for (int call = 0; call < 3; ++call) (*step)({x, y});
  TANDEM_CHECK(step->compiled_calls() == 1 && step->last_executor() != nullptr, RuntimeError, "tandem dump",
               "the training step did not compile: ",
               step->warnings().empty() ? std::string("no reason given") : step->warnings()[0]);
  const ir::Graph& g = step->last_executor()->graph();
  if (format == "dot") return g.to_dot();
  std::ostringstream os;
  os << "# the whole training step of " << model << " (" << opt->name() << "): forward, backward and the fused updates;\n"
     << "# outputs: the loss, then the new .grad of each of the " << m->parameters().size()
     << " parameters; the parameters and the optimizer state are written in place. "
     << step->last_executor()->memory_summary() << "\n"
     << g.to_text();
  return os.str();
}

namespace {
// Largest --batch: the graph does not depend on it beyond the sizes, and a huge batch
// would only allocate a huge input tensor.
constexpr int64_t kMaxDumpBatch = int64_t{1} << 20;
}  // namespace

int dump_main(const std::vector<std::string>& args) {
  std::string model = "mlp", format = "text";
  int64_t batch = 1;
  bool raw = false, training = false, step = false;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << dump_usage();
        return 0;
      }
      if (a == "--raw") {
        raw = true;
        continue;
      }
      if (a == "--training") {
        training = true;
        continue;
      }
      if (a == "--step") {
        step = true;
        continue;
      }
      TANDEM_CHECK(a == "--model" || a == "--batch" || a == "--format", ValueError, "tandem dump", "unknown flag \"", a,
                   "\" (see tandem dump --help)");
      TANDEM_CHECK(i + 1 < args.size(), ValueError, "tandem dump", a, " needs a value");
      const std::string& v = args[++i];
      if (a == "--model") model = v;
      else if (a == "--format") format = v;
      else {
        size_t pos = 0;
        bool too_large = false;
        try {
          batch = std::stoll(v, &pos);
        } catch (const std::out_of_range&) {
          too_large = v.find('-') == std::string::npos;
        } catch (const std::exception&) {
          pos = 0;
        }
        too_large = too_large || (pos == v.size() && batch > kMaxDumpBatch);
        TANDEM_CHECK(!too_large, ValueError, "tandem dump", "--batch got \"", v, "\", which is too large; expected an integer in [1, ",
                     kMaxDumpBatch, "]");
        TANDEM_CHECK(pos == v.size() && pos > 0, ValueError, "tandem dump", "--batch got \"", v, "\", expected an integer");
      }
    }
    TANDEM_CHECK(!(step && (raw || training)), ValueError, "tandem dump",
                 "--step shows the compiled step's program after its passes: it takes no --raw or --training");
    std::cout << (step ? dump_step_program(model, batch, format) : dump_model_graph(model, batch, format, raw, training));
    return 0;
  } catch (const ValueError& e) {
    std::cerr << command_error_text("tandem dump", e) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << command_error_text("tandem dump", e) << "\n";
    return 1;
  }
}

}  // namespace tandem::tools
