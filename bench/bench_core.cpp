// tandem's core micro-benchmarks: the workloads in bench/workloads.h, shared with the
// libtorch peer (bench/peer/torch_core.cpp). Run them all with `./run bench`.
#include "tandem/tandem.h"
#include "autograd_workloads.h"
#include "workloads.h"

namespace {

struct TandemLib {
  using Tensor = tandem::Tensor;
  // No-grad guard from core (autograd's NoGradGuard is built on the same flag).
  struct NoGrad {
    tandem::AutoGradMode guard{false};
  };
  static Tensor zeros(tandem::IntArrayRef sizes) { return tandem::zeros(sizes); }
  static Tensor ones(tandem::IntArrayRef sizes) { return tandem::ones(sizes); }
  static Tensor add(const Tensor& a, const Tensor& b) { return tandem::add(a, b); }
  static Tensor sum_dim0(const Tensor& a) { return a.sum(0); }
  static Tensor to_double(const Tensor& a) { return a.to(tandem::kFloat64); }
};

// The autograd cases' adapter (bench/autograd_workloads.h).
struct TandemGradLib : TandemLib {
  using Linear = std::shared_ptr<tandem::nn::Linear>;
  static Linear linear(int64_t in, int64_t out) { return std::make_shared<tandem::nn::Linear>(in, out); }
  static Tensor forward(Linear& l, const Tensor& x) { return l->forward(x); }
  static void zero_grad(Linear& l, bool set_to_none) { l->zero_grad(set_to_none); }
  static Tensor relu(const Tensor& x) { return tandem::relu(x); }
  static Tensor mse_loss(const Tensor& a, const Tensor& b) { return tandem::mse_loss(a, b); }
  static void backward(const Tensor& loss) { loss.backward(); }
  static Tensor requires_grad(Tensor t) { return t.requires_grad_(); }
  static Tensor grad(const Tensor& t) { return t.grad(); }
  static Tensor weight(Linear& l) { return l->weight; }
  static int64_t numel(const Tensor& t) { return t.defined() ? t.numel() : 0; }
  static int64_t tensor_bytes_in_use() { return tandem::memory::stats().bytes_in_use; }
  static void reset_tensor_peak() { tandem::memory::reset_peak_stats(); }
  static int64_t tensor_peak_bytes() { return tandem::memory::stats().peak_bytes_in_use; }
  static int64_t block_bytes(int64_t n) { return static_cast<int64_t>(tandem::cpu_allocator_round_size(n)); }
};

/// The tiny MLP step of autograd/mlp16_step (zero_grad set to none, forward, MSE,
/// backward) with the forward and the loss compiled (issue 12): tandem::compile of a
/// function returning the loss, the layers' parameters read by reference (lifted); its
/// call runs the forward program and puts one node on the tape, whose backward runs the
/// backward program. Issue 12's target: <= 0.5x autograd/mlp16_step.
void mlp16_step_compiled(benchmark::State& st) {
  bench::TinyMlp<TandemGradLib> m;
  auto loss_fn = tandem::compile([&m](const std::vector<tandem::Tensor>& in) {
    auto h = tandem::relu(m.l1->forward(in[0]));
    h = tandem::relu(m.l2->forward(h));
    return std::vector<tandem::Tensor>{tandem::mse_loss(m.l3->forward(h), in[1])};
  });
  auto step = [&] {
    m.l1->zero_grad(true);
    m.l2->zero_grad(true);
    m.l3->zero_grad(true);
    (*loss_fn)({m.x, m.y})[0].backward();
  };
  for (int i = 0; i < 3; ++i) step();  // capture, then the program
  if (loss_fn->compiled_calls() < 2 || loss_fn->last_training_program() == nullptr)
    return st.SkipWithError("the tiny MLP's loss did not compile");
  if (!m.grads_ok()) return st.SkipWithError("compiled MLP step gave no weight gradients");
  for (auto _ : st) step();
}

/// The tiny MLP's whole step compiled (issue 12): tandem::compile of a function that does
/// zero_grad(set_to_none), forward, MSE and backward itself, so the backward and the
/// gradients' binding are in the program too. No optimizer step, like autograd/mlp16_step,
/// so the two compare. Issue 12's target: <= 0.5x autograd/mlp16_step.
void mlp16_step_compiled_whole(benchmark::State& st) {
  bench::TinyMlp<TandemGradLib> m;
  auto step_fn = tandem::compile([&m](const std::vector<tandem::Tensor>& in) {
    m.l1->zero_grad(true);
    m.l2->zero_grad(true);
    m.l3->zero_grad(true);
    auto h = tandem::relu(m.l1->forward(in[0]));
    h = tandem::relu(m.l2->forward(h));
    tandem::Tensor loss = tandem::mse_loss(m.l3->forward(h), in[1]);
    loss.backward();
    return std::vector<tandem::Tensor>{loss.detach()};
  });
  const std::vector<tandem::Tensor> in{m.x, m.y};
  // Warm-up: the capture (a second one where .grad defined on entry or not is a guard),
  // then the program.
  for (int i = 0; i < 5; ++i) (*step_fn)(in);
  if (step_fn->compiled_calls() < 2 || step_fn->last_executor() == nullptr)
    return st.SkipWithError("the tiny MLP's step did not compile");
  if (!m.grads_ok()) return st.SkipWithError("compiled whole MLP step gave no weight gradients");
  for (auto _ : st) (*step_fn)(in);
}

}  // namespace

int main(int argc, char** argv) {
  bench::register_autograd<TandemGradLib>();
  // tandem only: the rows are compared with tandem's eager step (issue 12).
  benchmark::RegisterBenchmark("autograd/mlp16_step_compiled", mlp16_step_compiled)->UseRealTime();
  benchmark::RegisterBenchmark("autograd/mlp16_step_compiled_whole", mlp16_step_compiled_whole)->UseRealTime();
  return bench::run_main<TandemLib>(argc, argv);
}
