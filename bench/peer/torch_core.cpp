// The PyTorch (libtorch 1.13) peer of bench_core.cpp: the same workloads
// (bench/workloads.h) on torch. It never links tandem. All peer cases stay in this one
// file because each file including <torch/torch.h> takes ~17 s to compile.
#include <torch/torch.h>

#include <string>

#include "../autograd_workloads.h"
#include "../workloads.h"

namespace {

struct TorchLib {
  using Tensor = torch::Tensor;
  using NoGrad = torch::NoGradGuard;
  static Tensor zeros(c10::IntArrayRef sizes) { return torch::zeros(sizes); }
  static Tensor ones(c10::IntArrayRef sizes) { return torch::ones(sizes); }
  static Tensor add(const Tensor& a, const Tensor& b) { return a + b; }
  static Tensor sum_dim0(const Tensor& a) { return a.sum(0); }
  static Tensor to_double(const Tensor& a) { return a.to(torch::kFloat64); }
};

// The autograd cases' adapter (bench/autograd_workloads.h). libtorch's CPU allocator keeps
// no statistics outside its profiler, so the allocator figures are -1 ("not available").
struct TorchGradLib : TorchLib {
  using Linear = torch::nn::Linear;
  static Linear linear(int64_t in, int64_t out) { return torch::nn::Linear(in, out); }
  static Tensor forward(Linear& l, const Tensor& x) { return l->forward(x); }
  static void zero_grad(Linear& l, bool set_to_none) { l->zero_grad(set_to_none); }
  static Tensor relu(const Tensor& x) { return torch::relu(x); }
  static Tensor mse_loss(const Tensor& a, const Tensor& b) { return torch::mse_loss(a, b); }
  static void backward(const Tensor& loss) { loss.backward(); }
  static Tensor requires_grad(Tensor t) { return t.requires_grad_(); }
  static Tensor grad(const Tensor& t) { return t.grad(); }
  static Tensor weight(Linear& l) { return l->weight; }
  static int64_t numel(const Tensor& t) { return t.defined() ? t.numel() : 0; }
  static int64_t tensor_bytes_in_use() { return -1; }
  static void reset_tensor_peak() {}
  static int64_t tensor_peak_bytes() { return -1; }
  static int64_t block_bytes(int64_t n) { return n; }
};

}  // namespace

int main(int argc, char** argv) {
  // Comparisons are at 2 threads (docs/FACTS); set it here so the environment cannot
  // change it. OPENBLAS_CORETYPE / OMP_WAIT_POLICY are left to run_all.sh.
  at::set_num_threads(2);
  benchmark::AddCustomContext("torch_version", TORCH_VERSION);
  benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
  bench::register_autograd<TorchGradLib>();
  return bench::run_main<TorchLib>(argc, argv);
}
