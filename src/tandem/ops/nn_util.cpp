#include "tandem/ops/nn_util.h"

#include "tandem/ops/shape.h"

namespace tandem::ops {

kernels::Reduction parse_reduction(const char* op, const std::string& r, bool allow_batchmean) {
  if (r == "none") return kernels::Reduction::None;
  if (r == "mean") return kernels::Reduction::Mean;
  if (r == "sum") return kernels::Reduction::Sum;
  if (allow_batchmean && r == "batchmean") return kernels::Reduction::BatchMean;
  throw ValueError(str_cat("[", op, "] got reduction '", r, "', expected 'none', 'mean', 'sum'",
                           allow_batchmean ? " or 'batchmean'" : ""));
}

Tensor sum_keepdim(const Tensor& t, int64_t dim) {
  if (t.dim() == 0) return t;
  DimVector s = t.sizes().vec();
  s[static_cast<size_t>(dim)] = 1;
  return sum_to_size(t, s);
}

Tensor sum_all(const Tensor& t) { return sum_to_size(t, DimVector{}); }

void require_floating_input(const char* op, DType t, const char* what) {
  TANDEM_CHECK(is_floating_point(t), TypeError, op, "got ", what, " of dtype ", dtype_name(t),
               ", expected a floating dtype");
}

void check_vector(const char* op, const MetaRef& m, int64_t n, const char* what) {
  if (!m.defined) return;
  TANDEM_CHECK(m.dim() == 1 && m.sizes[0] == n, ShapeError, op, "got ", what, " of shape ", m.sizes,
               ", expected [", n, "]");
}

}  // namespace tandem::ops
