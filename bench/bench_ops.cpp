// tandem's linear-algebra and convolution benchmarks: the workloads in
// bench/ops_workloads.h, shared with the libtorch peer (bench/peer/torch_ops.cpp).
// tandem runs with no environment settings: oneDNN for float32 GEMM/conv, 2 threads.
#include "ops_workloads.h"
#include "tandem/tandem.h"

namespace {

struct TandemLib {
  using Tensor = tandem::Tensor;
  struct NoGrad {
    tandem::AutoGradMode guard{false};
  };
  static Tensor full(tandem::IntArrayRef sizes, double v, bool f64) {
    return tandem::full(sizes, v, f64 ? tandem::kFloat64 : tandem::kFloat32);
  }
  static Tensor matmul(const Tensor& a, const Tensor& b) { return tandem::matmul(a, b); }
  static Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t pad) {
    return tandem::conv2d(x, w, b, {1}, {pad});
  }
  static Tensor max_pool2d(const Tensor& x, int64_t k) { return tandem::max_pool2d(x, {k}); }
  static double at2(const Tensor& t, int64_t i, int64_t j) { return t.select(0, i).select(0, j).item<double>(); }
  static double at4(const Tensor& t, int64_t a, int64_t b, int64_t c, int64_t d) {
    return t.select(0, a).select(0, b).select(0, c).select(0, d).item<double>();
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::AddCustomContext("tandem_threads", std::to_string(tandem::get_num_threads()));
  return bench_ops::run_main<TandemLib>(argc, argv);
}
