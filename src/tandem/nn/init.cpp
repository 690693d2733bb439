#include "tandem/nn/init.h"

#include <cmath>
#include <vector>

#include "tandem/autograd/engine.h"
#include "tandem/core/generator.h"
#include "tandem/ops/creation.h"

namespace tandem::nn::init {

namespace {
// Fills t (any layout, floating) from a host buffer of doubles in logical order.
Tensor assign(Tensor t, const std::vector<double>& vals) {
  NoGradGuard ng;
  Tensor src = from_vector(vals, t.sizes());
  t.copy_(src);
  return t;
}
void check_floating(const Tensor& t, const char* fn) {
  TANDEM_CHECK(t.defined() && t.is_floating_point(), TypeError, fn, "expected a floating tensor, got ",
               t.defined() ? dtype_name(t.dtype()) : "an undefined tensor");
}
}  // namespace

double calculate_gain(const std::string& nl, double param) {
  if (nl == "linear" || nl == "conv1d" || nl == "conv2d" || nl == "conv3d" || nl == "conv_transpose2d" || nl == "sigmoid")
    return 1.0;
  if (nl == "tanh") return 5.0 / 3.0;
  if (nl == "relu") return std::sqrt(2.0);
  if (nl == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nl == "selu") return 3.0 / 4.0;
  throw ValueError(str_cat("[calculate_gain] unsupported nonlinearity '", nl, "'"));
}

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  TANDEM_CHECK(t.dim() >= 2, ValueError, "calculate_fan_in_and_fan_out",
               "fan in and fan out can not be computed for a tensor with fewer than 2 dimensions (got sizes ", t.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

Tensor uniform_(Tensor t, double a, double b) {
  check_floating(t, "uniform_");
  TANDEM_CHECK(a <= b, ValueError, "uniform_", "expected a <= b, got a=", a, " b=", b);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  default_generator().fill_uniform(v.data(), t.numel(), a, b);
  return assign(t, v);
}

Tensor normal_(Tensor t, double mean, double std) {
  check_floating(t, "normal_");
  TANDEM_CHECK(std >= 0, ValueError, "normal_", "expected std >= 0, got ", std);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  default_generator().fill_normal(v.data(), t.numel(), mean, std);
  return assign(t, v);
}

Tensor constant_(Tensor t, const Scalar& value) {
  NoGradGuard ng;
  t.fill_(value);
  return t;
}
Tensor zeros_(Tensor t) { return constant_(t, 0); }
Tensor ones_(Tensor t) { return constant_(t, 1); }

Tensor xavier_uniform_(Tensor t, double gain) {
  auto [fi, fo] = calculate_fan_in_and_fan_out(t);
  double a = gain * std::sqrt(6.0 / static_cast<double>(fi + fo));
  return uniform_(t, -a, a);
}

Tensor xavier_normal_(Tensor t, double gain) {
  auto [fi, fo] = calculate_fan_in_and_fan_out(t);
  return normal_(t, 0.0, gain * std::sqrt(2.0 / static_cast<double>(fi + fo)));
}

namespace {
double kaiming_std(const Tensor& t, double a, const std::string& mode, const std::string& nl) {
  TANDEM_CHECK(mode == "fan_in" || mode == "fan_out", ValueError, "kaiming", "mode ", mode, " not supported, expected fan_in or fan_out");
  auto [fi, fo] = calculate_fan_in_and_fan_out(t);
  int64_t fan = mode == "fan_in" ? fi : fo;
  TANDEM_CHECK(fan > 0, ValueError, "kaiming", "initializing a zero-element tensor is a no-op");
  return calculate_gain(nl, a) / std::sqrt(static_cast<double>(fan));
}
}  // namespace

Tensor kaiming_uniform_(Tensor t, double a, const std::string& mode, const std::string& nl) {
  if (t.numel() == 0) return t;
  double bound = std::sqrt(3.0) * kaiming_std(t, a, mode, nl);
  return uniform_(t, -bound, bound);
}

Tensor kaiming_normal_(Tensor t, double a, const std::string& mode, const std::string& nl) {
  if (t.numel() == 0) return t;
  return normal_(t, 0.0, kaiming_std(t, a, mode, nl));
}

Tensor orthogonal_(Tensor t, double gain) {
  check_floating(t, "orthogonal_");
  TANDEM_CHECK(t.dim() >= 2, ValueError, "orthogonal_", "only tensors with 2 or more dimensions are supported, got ", t.dim());
  if (t.numel() == 0) return t;
  const int64_t rows = t.size(0), cols = t.numel() / rows;
  // Orthonormalise the rows (or columns, whichever is fewer) of a normal matrix with
  // modified Gram-Schmidt; sign-fix by the diagonal as QR does, so the result is unique.
  const bool transpose = rows < cols;
  const int64_t n = transpose ? cols : rows, m = transpose ? rows : cols;  // A is n x m, n >= m
  std::vector<double> A(static_cast<size_t>(n * m));
  default_generator().fill_normal(A.data(), n * m, 0.0, 1.0);
  for (int64_t j = 0; j < m; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < n; ++i) dot += A[i * m + j] * A[i * m + k];
      for (int64_t i = 0; i < n; ++i) A[i * m + j] -= dot * A[i * m + k];
    }
    double norm = 0;
    for (int64_t i = 0; i < n; ++i) norm += A[i * m + j] * A[i * m + j];
    norm = std::sqrt(norm);
    for (int64_t i = 0; i < n; ++i) A[i * m + j] /= norm;
  }
  std::vector<double> out(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) out[r * cols + c] = gain * (transpose ? A[c * m + r] : A[r * m + c]);
  return assign(t, out);
}

Tensor trunc_normal_(Tensor t, double mean, double std, double a, double b) {
  check_floating(t, "trunc_normal_");
  TANDEM_CHECK(a < b && std > 0, ValueError, "trunc_normal_", "expected a < b and std > 0, got a=", a, " b=", b, " std=", std);
  std::vector<double> v(static_cast<size_t>(t.numel()));
  Generator& g = default_generator();
  for (auto& x : v) {
    int tries = 0;
    do {
      x = mean + std * g.next_normal();
      TANDEM_CHECK(++tries < 1000000, ValueError, "trunc_normal_", "interval [", a, ", ", b, "] has negligible probability");
    } while (x < a || x > b);
  }
  return assign(t, v);
}

}  // namespace tandem::nn::init
