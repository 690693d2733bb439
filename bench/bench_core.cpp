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

}  // namespace

int main(int argc, char** argv) {
  bench::register_autograd<TandemGradLib>();
  return bench::run_main<TandemLib>(argc, argv);
}
