#include "tandem/jit/check.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/core/generator.h"
#include "tandem/core/grad_mode.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/reduce.h"
#include "tandem/ops/unary.h"

namespace tandem::jit {

namespace {

// A copy of `t` with the same sizes, strides, storage offset and storage size (so views
// and as_strided reach the same elements), the same requires_grad and wrapped-number flag.
Tensor copy_like(const Tensor& t) {
  const int64_t n = static_cast<int64_t>(t.storage()->nbytes()) / t.element_size();
  Tensor flat = empty_tensor({n}, t.dtype());
  if (n > 0) std::memcpy(flat.data_ptr(), t.storage()->data(), t.storage()->nbytes());
  Tensor out = flat.as_strided(t.sizes(), t.strides(), t.storage_offset());
  out.impl()->set_wrapped_number(t.impl()->is_wrapped_number());
  if (t.requires_grad()) out.requires_grad_(true);
  return out;
}

std::vector<Tensor> copies(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.defined() ? copy_like(t) : Tensor());
  return out;
}

// "" when `got` equals `want` bitwise (dtype, sizes, bytes in logical order); else how.
std::string diff_of(const Tensor& want, const Tensor& got) {
  if (!got.defined() || !want.defined()) return got.defined() == want.defined() ? "" : "one side is undefined";
  if (want.dtype() != got.dtype()) return str_cat("dtype ", dtype_name(got.dtype()), ", eager ", dtype_name(want.dtype()));
  if (!want.sizes().equals(got.sizes())) return str_cat("sizes ", got.sizes(), ", eager ", want.sizes());
  NoGradGuard ng;
  const Tensor a = want.contiguous(), b = got.contiguous();
  if (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<size_t>(a.nbytes())) == 0) return "";
  const int64_t es = a.element_size();
  int64_t differing = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    differing += std::memcmp(static_cast<const char*>(a.data_ptr()) + i * es, static_cast<const char*>(b.data_ptr()) + i * es,
                             static_cast<size_t>(es)) != 0;
  std::string out = str_cat(differing, " of ", a.numel(), " elements differ in their bytes");
  if (is_floating_point(a.dtype())) {
    const double worst = amax(abs(a.to(kFloat64) - b.to(kFloat64))).item<double>();
    out += str_cat(" (max abs difference ", worst, ")");
  }
  return out;
}

// Compares the values a program computes with the eager tensors of a capture.
struct Comparer {
  CheckReport& report;
  const std::vector<Tensor>& eager;  // by capture value id
  std::vector<bool> skip;            // by capture value id: written in place somewhere

  runtime::Executor::NodeCallback callback(const char* phase, const std::vector<int>* origin) {
    return [this, phase, origin](const ir::Node& n, const std::vector<Tensor>& env) {
      if (!report.equal) return;
      for (int o : n.outputs) {
        const int j = origin ? (*origin)[static_cast<size_t>(o)] : o;
        if (j < 0 || static_cast<size_t>(j) >= eager.size() || skip[static_cast<size_t>(j)] ||
            !eager[static_cast<size_t>(j)].defined())
          continue;
        ++report.values_compared;
        std::string d = diff_of(eager[static_cast<size_t>(j)], env[static_cast<size_t>(o)]);
        if (d.empty()) continue;
        report.equal = false;
        const Tensor& t = env[static_cast<size_t>(o)];
        report.first_difference = str_cat(phase, " node ", n.id, " (", n.op->name, ") value %", j, " ", dtype_name(t.dtype()),
                                          t.sizes(), ": ", d);
        return;
      }
    };
  }

  void outputs(const char* what, const std::vector<Tensor>& want, const std::vector<Tensor>& got) {
    for (size_t k = 0; k < want.size() && k < got.size() && report.equal; ++k) {
      std::string d = diff_of(want[k], got[k]);
      if (d.empty()) continue;
      report.equal = false;
      report.first_difference = str_cat(what, " ", k, ": ", d);
    }
  }
};

std::vector<bool> written_roots(const ir::Graph& g) {
  std::vector<bool> w(g.values().size(), false), skip(g.values().size(), false);
  for (const auto& n : g.nodes())
    for (int v : ir::written_values(n)) w[static_cast<size_t>(g.storage_root(v))] = true;
  for (const auto& v : g.values()) skip[static_cast<size_t>(v.id)] = w[static_cast<size_t>(g.storage_root(v.id))];
  return skip;
}

}  // namespace

std::string CheckReport::to_string() const {
  if (!compiled) return "not compiled: " + break_reason;
  if (equal) return str_cat("compiled equals eager bitwise (", values_compared, " values compared)");
  return "compiled differs from eager: first at " + first_difference;
}

CheckReport check_compiled(const TensorFn& fn, const std::vector<Tensor>& inputs, const CompileOptions& opts) {
  CheckReport r;
  Capture c = capture(fn, copies(inputs), {}, /*with_backward=*/is_grad_enabled());
  if (!c.ok) {
    r.break_reason = c.break_reason;
    return r;
  }
  r.compiled = true;
  Comparer cmp{r, c.value_tensors, written_roots(c.graph)};
  std::vector<Tensor> all = copies(inputs);
  all.insert(all.end(), c.lifted.begin(), c.lifted.end());
  if (c.has_backward) {
    auto p = build_training_program(c, opts);
    p->forward->set_node_callback(cmp.callback("forward", &p->forward_origin));
    std::vector<Tensor> outs = p->forward->run(all);
    p->forward->set_node_callback({});
    cmp.outputs("output", c.outputs, outs);
    std::vector<Tensor> bin(outs.begin() + static_cast<std::ptrdiff_t>(p->num_outputs), outs.end());
    for (size_t k = 0; k < p->num_outputs; ++k) {
      if (!p->output_differentiable[k]) continue;
      Tensor seed = empty_tensor(outs[k].sizes(), outs[k].dtype());
      seed.fill_(1.0);  // the capture's output gradients
      bin.push_back(seed);
    }
    p->backward->set_node_callback(cmp.callback("backward", &p->backward_origin));
    std::vector<Tensor> grads = p->backward->run(bin);
    p->backward->set_node_callback({});
    std::vector<Tensor> want;
    for (int v : c.grad_values)
      if (v >= 0) want.push_back(c.value_tensors[static_cast<size_t>(v)]);
    cmp.outputs("gradient", want, grads);
    return r;
  }
  auto exec = build_program(c, opts);
  exec->set_node_callback(cmp.callback("forward", nullptr));
  std::vector<Tensor> outs = exec->run(all);
  cmp.outputs("output", c.outputs, outs);
  return r;
}

CheckReport check_program(const TensorFn& fn, const std::vector<Tensor>& inputs, runtime::Executor& program,
                          const std::vector<Tensor>& lifted, const std::vector<int>* origin,
                          const std::vector<std::string>& program_ops) {
  CheckReport r;
  Capture c = capture(fn, copies(inputs), {}, /*with_backward=*/false);
  if (!c.ok) {
    r.break_reason = c.break_reason;
    return r;
  }
  r.compiled = true;
  // Values line up by id only when this capture recorded the program's op sequence.
  const bool aligned = c.captured_ops == program_ops;
  Comparer cmp{r, c.value_tensors, written_roots(c.graph)};
  std::vector<Tensor> all = copies(inputs);
  all.insert(all.end(), lifted.begin(), lifted.end());
  if (aligned) program.set_node_callback(cmp.callback("forward", origin));
  std::vector<Tensor> outs;
  try {
    outs = program.run(all);
  } catch (...) {
    program.set_node_callback({});
    throw;
  }
  program.set_node_callback({});
  std::vector<Tensor> got(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(std::min(outs.size(), c.outputs.size())));
  cmp.outputs("output", c.outputs, got);
  return r;
}

namespace {
// The bytes of a tensor's whole storage, to put back later.
std::vector<uint8_t> storage_bytes(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.storage()->data());
  return std::vector<uint8_t>(p, p + t.storage()->nbytes());
}
void put_back(const Tensor& t, const std::vector<uint8_t>& bytes) {
  if (!bytes.empty()) std::memcpy(t.storage()->data(), bytes.data(), bytes.size());
}
}  // namespace

CheckReport check_step(const TensorFn& fn, const std::vector<Tensor>& inputs,
                       const std::function<std::vector<Tensor>()>& run_program, const std::vector<Tensor>& state,
                       const std::vector<Tensor>& grad_owners, std::vector<Tensor>& program_outputs) {
  CheckReport r;
  r.compiled = true;
  // The state both runs start from.
  const Generator generator = default_generator();
  std::vector<std::vector<uint8_t>> state_before;
  for (const Tensor& t : state) state_before.push_back(storage_bytes(t));
  std::vector<Tensor> grad_before;
  std::vector<std::vector<uint8_t>> grad_bytes_before;
  for (const Tensor& o : grad_owners) {
    const autograd::AutogradMeta* m = autograd::get_meta(o);
    grad_before.push_back(m ? m->grad : Tensor());
    grad_bytes_before.push_back(grad_before.back().defined() ? storage_bytes(grad_before.back()) : std::vector<uint8_t>{});
  }
  // Eagerly, keeping what it made.
  std::vector<Tensor> eager_out = copies(fn(copies(inputs)));
  std::vector<Tensor> state_eager = copies(state), grad_eager;
  for (const Tensor& o : grad_owners) {
    const autograd::AutogradMeta* m = autograd::get_meta(o);
    grad_eager.push_back(m && m->grad.defined() ? copy_like(m->grad) : Tensor());
  }
  // Back to the start, then the program.
  default_generator() = generator;
  for (size_t i = 0; i < state.size(); ++i) put_back(state[i], state_before[i]);
  for (size_t i = 0; i < grad_owners.size(); ++i) {
    autograd::ensure_meta(grad_owners[i]).grad = grad_before[i];
    if (grad_before[i].defined()) put_back(grad_before[i], grad_bytes_before[i]);
  }
  program_outputs = run_program();
  const std::vector<Tensor> no_values;
  Comparer cmp{r, no_values, {}};
  cmp.outputs("output", eager_out, program_outputs);
  for (size_t i = 0; i < state.size() && r.equal; ++i) {
    std::string d = diff_of(state_eager[i], state[i]);
    r.values_compared++;
    if (d.empty()) continue;
    r.equal = false;
    r.first_difference = str_cat("state tensor ", i, " (bound by reference) ", dtype_name(state[i].dtype()), state[i].sizes(),
                                 ": ", d);
  }
  for (size_t i = 0; i < grad_owners.size() && r.equal; ++i) {
    const autograd::AutogradMeta* m = autograd::get_meta(grad_owners[i]);
    std::string d = diff_of(grad_eager[i], m ? m->grad : Tensor());
    r.values_compared++;
    if (d.empty()) continue;
    r.equal = false;
    r.first_difference = str_cat("the .grad of the ", dtype_name(grad_owners[i].dtype()), grad_owners[i].sizes(),
                                 " tensor ", i, ": ", d);
  }
  r.values_compared += static_cast<int>(std::min(eager_out.size(), program_outputs.size()));
  return r;
}

bool check_every_compiled_call() {
  static const bool on = [] {
    const char* e = std::getenv("TANDEM_CHECK_COMPILED");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return on;
}

}  // namespace tandem::jit
