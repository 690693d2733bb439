// The PyTorch (libtorch 1.13) peer of bench_core.cpp: the same workloads
// (bench/workloads.h) on torch. It never links tandem. All peer cases stay in this one
// file because each file including <torch/torch.h> takes ~17 s to compile.
#include <torch/torch.h>

#include <string>

#include "../workloads.h"

namespace {

struct TorchLib {
  using Tensor = torch::Tensor;
  using NoGrad = torch::NoGradGuard;
  static Tensor zeros(c10::IntArrayRef sizes) { return torch::zeros(sizes); }
  static Tensor ones(c10::IntArrayRef sizes) { return torch::ones(sizes); }
  static Tensor add(const Tensor& a, const Tensor& b) { return a + b; }
};

}  // namespace

int main(int argc, char** argv) {
  // Comparisons are at 2 threads (docs/FACTS); set it here so the environment cannot
  // change it. OPENBLAS_CORETYPE / OMP_WAIT_POLICY are left to run_all.sh.
  at::set_num_threads(2);
  benchmark::AddCustomContext("torch_version", TORCH_VERSION);
  benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
  return bench::run_main<TorchLib>(argc, argv);
}
