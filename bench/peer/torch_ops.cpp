// The PyTorch (libtorch 1.13) peer of bench_ops.cpp: the same workloads
// (bench/ops_workloads.h) on torch. It never links tandem. PyTorch uses OpenBLAS for GEMM
// (set OPENBLAS_CORETYPE to get the right kernels on this CPU) and oneDNN for conv.
#include <torch/torch.h>

#include <string>

#include "../ops_workloads.h"

namespace {

struct TorchLib {
  using Tensor = torch::Tensor;
  using NoGrad = torch::NoGradGuard;
  static Tensor full(c10::IntArrayRef sizes, double v, bool f64) {
    return torch::full(sizes, v, torch::TensorOptions().dtype(f64 ? torch::kFloat64 : torch::kFloat32));
  }
  static Tensor matmul(const Tensor& a, const Tensor& b) { return torch::matmul(a, b); }
  static Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t pad) {
    return torch::conv2d(x, w, b, 1, pad);
  }
  static Tensor max_pool2d(const Tensor& x, int64_t k) { return torch::max_pool2d(x, k); }
  static double at2(const Tensor& t, int64_t i, int64_t j) { return t[i][j].item<double>(); }
  static double at4(const Tensor& t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return t[a][b][c][d].item<double>();
  }
};

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(2);  // comparisons are at 2 threads, as bench/peer/torch_core.cpp
  benchmark::AddCustomContext("torch_version", TORCH_VERSION);
  benchmark::AddCustomContext("torch_threads", std::to_string(at::get_num_threads()));
  return bench_ops::run_main<TorchLib>(argc, argv);
}
