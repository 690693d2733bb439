#include "tandem/autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/random.h"

namespace tandem::autograd {

namespace {

// Pointer to logical element `i` of a float64 tensor (any strides).
double* element(const Tensor& t, int64_t i) {
  int64_t off = 0;
  for (int64_t d = t.dim() - 1; d >= 0; --d) {
    int64_t sz = t.sizes()[d];
    off += (i % sz) * t.strides()[d];
    i /= sz;
  }
  return static_cast<double*>(t.data_ptr()) + off;
}

std::vector<double> flat(const Tensor& t) {
  Tensor c = t.to(DType::Float64).contiguous();
  const double* p = c.data_ptr<double>();
  return std::vector<double>(p, p + c.numel());
}

bool fail(const GradcheckOptions& o, const std::string& msg) {
  if (o.raise_exception) throw RuntimeError("[gradcheck] " + msg);
  return false;
}

}  // namespace

bool gradcheck(const DiffFunction& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts) {
  std::vector<size_t> diff;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || !inputs[i].requires_grad()) continue;
    TANDEM_CHECK(inputs[i].dtype() == DType::Float64, TypeError, "gradcheck", "input ", i, " has dtype ",
                 dtype_name(inputs[i].dtype()), ", expected float64 for finite differences");
    diff.push_back(i);
  }
  TANDEM_CHECK(!diff.empty(), ValueError, "gradcheck", "no input requires grad");
  std::vector<Tensor> outputs = fn(inputs);
  std::vector<size_t> outs;
  for (size_t k = 0; k < outputs.size(); ++k)
    if (outputs[k].defined() && outputs[k].is_floating_point()) outs.push_back(k);

  for (size_t k : outs) {
    const Tensor& out = outputs[k];
    const int64_t n_out = out.numel();
    // Analytical Jacobian rows: one backward per output element.
    std::vector<std::vector<std::vector<double>>> ana(n_out);  // [row][input][elem]
    for (int64_t r = 0; r < n_out; ++r) {
      if (!out.requires_grad()) {
        for (size_t di = 0; di < diff.size(); ++di) ana[r].push_back(std::vector<double>(inputs[diff[di]].numel(), 0.0));
        continue;
      }
      Tensor seed;
      Tensor s64 = zeros(out.sizes(), DType::Float64);
      *element(s64, r) = 1.0;
      seed = s64.to(out.dtype());
      std::vector<Tensor> ins;
      for (size_t i : diff) ins.push_back(inputs[i]);
      auto g = grad({out}, ins, {seed}, true, false, true);
      for (size_t di = 0; di < diff.size(); ++di) {
        if (g[di].defined()) ana[r].push_back(flat(g[di]));
        else ana[r].push_back(std::vector<double>(inputs[diff[di]].numel(), 0.0));
      }
    }
    // Numerical Jacobian columns by central differences. fn runs with grad mode as the
    // caller has it: gradgradcheck's fn differentiates internally. Inputs are perturbed
    // through their data pointers (no autograd involvement).
    for (size_t di = 0; di < diff.size(); ++di) {
      const Tensor& x = inputs[diff[di]];
      for (int64_t j = 0; j < x.numel(); ++j) {
        double* p = element(x, j);
        const double orig = *p;
        *p = orig + opts.eps;
        std::vector<double> plus = flat(fn(inputs)[k]);
        *p = orig - opts.eps;
        std::vector<double> minus = flat(fn(inputs)[k]);
        *p = orig;
        for (int64_t r = 0; r < n_out; ++r) {
          double num = (plus[r] - minus[r]) / (2 * opts.eps);
          double a = ana[r][di][j];
          if (!(std::fabs(a - num) <= opts.atol + opts.rtol * std::fabs(num))) {
            std::ostringstream os;
            os << "Jacobian mismatch for output " << k << " element " << r << " w.r.t. input " << diff[di]
               << " element " << j << ": analytical " << a << ", numerical " << num;
            return fail(opts, os.str());
          }
        }
      }
    }
  }
  return true;
}

bool gradgradcheck(const DiffFunction& fn, const std::vector<Tensor>& inputs, const GradcheckOptions& opts,
                   uint64_t seed) {
  std::vector<size_t> diff;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) diff.push_back(i);
  std::vector<Tensor> outs = fn(inputs);
  Generator g(seed);
  std::vector<Tensor> vs;
  for (const Tensor& o : outs) {
    Tensor v = empty(o.sizes(), DType::Float64);
    Tensor vc = v;
    g.fill_normal(vc.data_ptr<double>(), vc.numel());
    vs.push_back(v.requires_grad_());
  }
  const size_t n_in = inputs.size();
  DiffFunction grad_fn = [&](const std::vector<Tensor>& all) {
    std::vector<Tensor> ins(all.begin(), all.begin() + static_cast<int64_t>(n_in));
    std::vector<Tensor> v(all.begin() + static_cast<int64_t>(n_in), all.end());
    std::vector<Tensor> o = fn(ins);
    std::vector<Tensor> diff_ins;
    for (size_t i : diff) diff_ins.push_back(ins[i]);
    std::vector<Tensor> vv;
    for (size_t k = 0; k < o.size(); ++k) vv.push_back(v[k].to(o[k].dtype()));
    return grad(o, diff_ins, vv, true, true, true);
  };
  std::vector<Tensor> all = inputs;
  for (auto& v : vs) all.push_back(v);
  return gradcheck(grad_fn, all, opts);
}

}  // namespace tandem::autograd
