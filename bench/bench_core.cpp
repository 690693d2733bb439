// tandem's core micro-benchmarks: the workloads in bench/workloads.h, shared with the
// libtorch peer (bench/peer/torch_core.cpp). Run them all with `./run bench`.
#include "tandem/tandem.h"
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
};

}  // namespace

int main(int argc, char** argv) { return bench::run_main<TandemLib>(argc, argv); }
