// Value converters: the ONNX ops that take or produce sequences and optionals (Sequence*,
// SplitToSequence, ConcatFromSequence, Optional*, Identity of any value) and control flow
// (If, Loop, Scan, SequenceMap), which interpret their subgraphs (GRAPH attributes) with
// run_graph, the enclosing graphs' values visible by name. Semantics follow
// onnx/docs/Operators.md (ONNX 1.12). Sequences live on the host (a list of tensors), so
// only the tensor ops inside run through the dispatcher; control flow reads its conditions
// and trip counts from tensor data (a graph break under compiled mode, which then runs
// that signature eagerly).
#include <algorithm>
#include <cstring>
#include <map>

#include "tandem/onnx/graph.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/index.h"
#include "tandem/ops/shape.h"

namespace tandem::onnx {
namespace {

using Vals = std::vector<Value>;

// The one element of a bool or integer tensor `t` (input or subgraph output `what`) as a
// bool: read on the host (a data read, so a graph break under capture).
bool read_bool(const Ctx& c, const Tensor& t, const std::string& what) {
  if (t.numel() != 1) c.invalid(what + " must hold one element, got " + std::to_string(t.numel()));
  if (is_floating_point(t.dtype())) c.invalid(what + " must be a bool tensor, got " + std::string(dtype_name(t.dtype())));
  Tensor x = t.to(DType::Int64).contiguous();
  int64_t v = 0;
  std::memcpy(&v, x.data_ptr(), sizeof v);
  return v != 0;
}

// A position input (SequenceAt/Insert/Erase): one integer, in [-n, n - 1] (or [-n, n] when
// `insert`), negative counting from the end.
int64_t position(const Ctx& c, size_t i, int64_t n, bool insert) {
  std::vector<int64_t> p = c.ints(i);
  if (p.size() != 1) c.invalid("position must be a scalar, got " + std::to_string(p.size()) + " elements");
  const int64_t hi = insert ? n : n - 1;
  if (p[0] < -n || p[0] > hi)
    c.invalid("position " + std::to_string(p[0]) + " is out of range [" + std::to_string(-n) + ", " +
              std::to_string(hi) + "] for a sequence of " + std::to_string(n) + " tensors");
  return p[0] < 0 ? p[0] + n : p[0];
}

void check_same_dtype(const Ctx& c, const std::vector<Tensor>& s, const Tensor& t) {
  if (!s.empty() && s[0].dtype() != t.dtype())
    c.invalid("the sequence holds " + std::string(dtype_name(s[0].dtype())) + " tensors, got a " +
              std::string(dtype_name(t.dtype())) + " tensor");
}

const Value& tensor_value(const Ctx& c, const Value& v, const std::string& what) {
  if (v.kind != Value::Kind::Tensor) c.invalid(what + " is a " + v.kind_name() + ", expected a tensor");
  return v;
}

// Stacks per-iteration slices (Loop's and Scan's scan outputs) along `axis` (a new axis,
// in [-(r+1), r] for slices of rank r); with no iterations, an empty float tensor [0].
Tensor stack_slices(const Ctx& c, const std::vector<Tensor>& slices, int64_t axis, const std::string& what) {
  if (slices.empty()) return empty({0});
  const int64_t r = slices[0].dim();
  if (axis < -(r + 1) || axis > r) c.invalid(what + " axis " + std::to_string(axis) + " is out of range");
  for (const Tensor& s : slices)
    if (s.sizes().vec() != slices[0].sizes().vec() || s.dtype() != slices[0].dtype())
      c.invalid(what + ": the iterations' slices differ in shape or dtype");
  return stack(slices, axis < 0 ? axis + r + 1 : axis);
}

Vals loop(Ctx& c) {
  const Graph& body = c.graph_attr("body");
  const size_t n_carried = c.num_inputs() >= 2 ? c.num_inputs() - 2 : 0;
  if (body.user_inputs.size() != n_carried + 2)
    c.invalid("the body takes " + std::to_string(body.user_inputs.size()) + " inputs, expected " +
              std::to_string(n_carried + 2) + " (iteration number, condition, " + std::to_string(n_carried) +
              " loop-carried values)");
  if (body.outputs.size() < n_carried + 1)
    c.invalid("the body has " + std::to_string(body.outputs.size()) + " outputs, expected at least " +
              std::to_string(n_carried + 1) + " (condition, loop-carried values)");
  const size_t n_scan = body.outputs.size() - 1 - n_carried;
  std::optional<int64_t> trip;
  if (c.has(0)) {
    std::vector<int64_t> m = c.ints(0);
    if (m.size() != 1) c.invalid("trip count M must be a scalar");
    trip = m[0];
  }
  bool cond = true;
  Tensor cond_t = scalar_tensor(true, DType::Bool);
  if (c.has(1)) {
    cond_t = c.in(1);
    cond = read_bool(c, cond_t, "condition");
  }
  Vals carried;
  for (size_t k = 0; k < n_carried; ++k) carried.push_back(c.value(2 + k));
  std::vector<std::vector<Tensor>> scans(n_scan);
  // No bound here: ONNX allows a Loop without a trip count whose condition never turns
  // false, and trip counts up to 2^63-1; Ctx::run bounds the body runs per call
  // (set_max_subgraph_runs).
  for (int64_t i = 0; cond && (!trip || i < *trip); ++i) {
    Vals ins{Value::tensor(scalar_tensor(i, DType::Int64)), Value::tensor(cond_t)};
    ins.insert(ins.end(), carried.begin(), carried.end());
    Vals outs = c.run(body, std::move(ins));
    cond_t = tensor_value(c, outs[0], "the body's condition output").t;
    cond = read_bool(c, cond_t, "the body's condition output");
    for (size_t k = 0; k < n_carried; ++k) carried[k] = std::move(outs[1 + k]);
    for (size_t k = 0; k < n_scan; ++k)
      scans[k].push_back(tensor_value(c, outs[1 + n_carried + k], "scan output " + std::to_string(k)).t);
  }
  Vals result = carried;
  for (size_t k = 0; k < n_scan; ++k)
    result.push_back(Value::tensor(stack_slices(c, scans[k], 0, "scan output " + std::to_string(k))));
  return result;
}

// One Scan (opset 9+ semantics) over `states` and `scan_in` (scanned along in_axes).
Vals scan_core(Ctx& c, const Graph& body, Vals states, const std::vector<Tensor>& scan_in,
               const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
               const std::vector<int64_t>& out_axes, const std::vector<int64_t>& out_dirs) {
  const size_t n_state = states.size(), m = scan_in.size();
  if (body.user_inputs.size() != n_state + m)
    c.invalid("the body takes " + std::to_string(body.user_inputs.size()) + " inputs, expected " +
              std::to_string(n_state + m) + " (state and scan inputs)");
  if (body.outputs.size() < n_state) c.invalid("the body has fewer outputs than state variables");
  const size_t k_out = body.outputs.size() - n_state;
  int64_t len = -1;
  std::vector<int64_t> axes(m);
  for (size_t j = 0; j < m; ++j) {
    const int64_t r = scan_in[j].dim();
    int64_t a = j < in_axes.size() ? in_axes[j] : 0;
    if (a < -r || a >= r) c.invalid("scan_input_axes " + std::to_string(a) + " is out of range for rank " + std::to_string(r));
    axes[j] = a < 0 ? a + r : a;
    const int64_t l = scan_in[j].size(axes[j]);
    if (len >= 0 && l != len)
      c.invalid("the scan inputs have different sequence lengths (" + std::to_string(len) + " and " + std::to_string(l) + ")");
    len = l;
  }
  if (len < 0) c.invalid("needs at least one scan input");
  std::vector<std::vector<Tensor>> outs_k(k_out);
  for (int64_t t = 0; t < len; ++t) {
    Vals ins = states;
    for (size_t j = 0; j < m; ++j) {
      const bool rev = j < in_dirs.size() && in_dirs[j] != 0;
      ins.push_back(Value::tensor(select(scan_in[j], axes[j], rev ? len - 1 - t : t)));
    }
    Vals outs = c.run(body, std::move(ins));
    for (size_t s = 0; s < n_state; ++s) states[s] = std::move(outs[s]);
    for (size_t k = 0; k < k_out; ++k) outs_k[k].push_back(tensor_value(c, outs[n_state + k], "scan output").t);
  }
  Vals result = states;
  for (size_t k = 0; k < k_out; ++k) {
    if (k < out_dirs.size() && out_dirs[k] != 0) std::reverse(outs_k[k].begin(), outs_k[k].end());
    result.push_back(Value::tensor(stack_slices(c, outs_k[k], k < out_axes.size() ? out_axes[k] : 0, "scan output")));
  }
  return result;
}

Vals scan(Ctx& c) {
  const Graph& body = c.graph_attr("body");
  const int64_t m = c.attr_i("num_scan_inputs", -1);
  if (!c.has_attr("num_scan_inputs") || m < 1) c.invalid("attribute num_scan_inputs must be a positive integer");
  if (c.opset() >= 9) {
    if (static_cast<size_t>(m) > c.num_inputs()) c.invalid("num_scan_inputs exceeds the number of inputs");
    const size_t n_state = c.num_inputs() - m;
    Vals states;
    std::vector<Tensor> scan_in;
    for (size_t i = 0; i < n_state; ++i) states.push_back(c.value(i));
    for (size_t i = n_state; i < c.num_inputs(); ++i) scan_in.push_back(c.in(i));
    return scan_core(c, body, states, scan_in, c.attr_ints("scan_input_axes"), c.attr_ints("scan_input_directions"),
                     c.attr_ints("scan_output_axes"), c.attr_ints("scan_output_directions"));
  }
  // Opset 8: input 0 is the optional sequence_lens; states and scan inputs carry a batch
  // axis 0 and scan along axis 1. Each batch entry scans on its own; results are stacked.
  if (c.num_inputs() < static_cast<size_t>(m) + 1) c.invalid("num_scan_inputs exceeds the number of inputs");
  const size_t n_state = c.num_inputs() - 1 - m;
  std::vector<Tensor> all;
  for (size_t i = 1; i < c.num_inputs(); ++i) all.push_back(c.in(i));
  const int64_t batch = all[0].dim() > 0 ? all[0].size(0) : -1;
  for (const Tensor& t : all)
    if (t.dim() < 1 || t.size(0) != batch) c.invalid("opset-8 Scan inputs must share a batch axis 0");
  for (size_t j = n_state; j < all.size(); ++j)
    if (all[j].dim() < 2) c.invalid("opset-8 scan inputs need a batch and a sequence axis");
  if (c.has(0)) {
    std::vector<int64_t> lens = c.ints(0);
    for (int64_t l : lens)
      if (l != all[n_state].size(1)) c.unsupported("sequence_lens shorter than the scan inputs' sequence axis");
  }
  std::vector<std::vector<Tensor>> per_out;
  for (int64_t b = 0; b < batch; ++b) {
    Vals states;
    std::vector<Tensor> scan_in;
    for (size_t i = 0; i < n_state; ++i) states.push_back(Value::tensor(select(all[i], 0, b)));
    for (size_t i = n_state; i < all.size(); ++i) scan_in.push_back(select(all[i], 0, b));
    Vals r = scan_core(c, body, states, scan_in, {}, c.attr_ints("directions"), {}, {});
    per_out.resize(r.size());
    for (size_t k = 0; k < r.size(); ++k) per_out[k].push_back(tensor_value(c, r[k], "output").t);
  }
  Vals result;
  for (auto& slices : per_out) result.push_back(Value::tensor(stack_slices(c, slices, 0, "output")));
  return result;
}

Vals if_op(Ctx& c) {
  const bool cond = read_bool(c, c.in(0), "condition");
  const Graph& branch = c.graph_attr(cond ? "then_branch" : "else_branch");
  if (!branch.user_inputs.empty()) c.invalid("its branches must take no inputs");
  Vals outs = c.run(branch, {});
  if (outs.size() != c.node().outputs.size())
    c.invalid(std::string(cond ? "then_branch" : "else_branch") + " has " + std::to_string(outs.size()) +
              " outputs, the node " + std::to_string(c.node().outputs.size()));
  return outs;
}

Vals sequence_map(Ctx& c) {
  const Graph& body = c.graph_attr("body");
  const std::vector<Tensor>& first = c.seq(0);
  const int64_t n = static_cast<int64_t>(first.size());
  for (size_t j = 1; j < c.num_inputs(); ++j) {
    const Value& v = c.value(j);
    if (v.kind == Value::Kind::Sequence && static_cast<int64_t>(v.seq.size()) != n)
      c.invalid("input " + std::to_string(j) + " is a sequence of " + std::to_string(v.seq.size()) +
                " tensors, input 0 one of " + std::to_string(n));
    if (v.kind == Value::Kind::None) c.invalid("input " + std::to_string(j) + " is an empty optional");
  }
  std::vector<std::vector<Tensor>> outs(body.outputs.size());
  for (int64_t i = 0; i < n; ++i) {
    Vals ins;
    for (size_t j = 0; j < c.num_inputs(); ++j) {
      const Value& v = c.value(j);
      ins.push_back(v.kind == Value::Kind::Sequence ? Value::tensor(v.seq[i]) : v);
    }
    Vals r = c.run(body, std::move(ins));
    for (size_t k = 0; k < r.size(); ++k) outs[k].push_back(tensor_value(c, r[k], "a body output").t);
  }
  Vals result;
  for (auto& s : outs) result.push_back(Value::sequence(std::move(s)));
  return result;
}

Vals split_to_sequence(Ctx& c) {
  const Tensor& x = c.in(0);
  const int64_t r = x.dim();
  int64_t axis = c.attr_i("axis", 0);
  if (axis < -r || axis >= std::max<int64_t>(r, 1)) c.invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(r));
  if (axis < 0) axis += r;
  const int64_t dim = x.size(axis);
  std::vector<Tensor> parts;
  // A sequence holds at most 2^20 tensors (an axis of 2^30 with a zero-sized other dim
  // would otherwise mean a billion narrow calls).
  constexpr int64_t kMaxParts = int64_t{1} << 20;
  if (!c.has(1)) {
    if (dim > kMaxParts) c.invalid("would make a sequence of " + std::to_string(dim) + " tensors (more than 2^20)");
    const bool keep = c.attr_i("keepdims", 1) != 0;
    for (int64_t i = 0; i < dim; ++i) parts.push_back(keep ? narrow(x, axis, i, 1) : select(x, axis, i));
    return {Value::sequence(std::move(parts))};
  }
  const Tensor& st = c.in(1);
  std::vector<int64_t> split = c.ints(1);
  std::vector<int64_t> sizes;
  if (st.dim() == 0) {
    if (split[0] <= 0) c.invalid("split " + std::to_string(split[0]) + " must be positive");
    if ((dim + split[0] - 1) / split[0] > kMaxParts) c.invalid("would make a sequence of more than 2^20 tensors");
    for (int64_t off = 0; off < dim; off += split[0]) sizes.push_back(std::min(split[0], dim - off));
  } else {
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) c.invalid("split sizes must be non-negative");
      total += s;
    }
    if (total != dim)
      c.invalid("split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(dim));
    sizes = split;
  }
  int64_t off = 0;
  for (int64_t s : sizes) {
    parts.push_back(narrow(x, axis, off, s));
    off += s;
  }
  return {Value::sequence(std::move(parts))};
}

Vals concat_from_sequence(Ctx& c) {
  const std::vector<Tensor>& s = c.seq(0);
  if (s.empty()) c.invalid("the sequence is empty");
  if (!c.has_attr("axis")) c.invalid("attribute axis is required");
  const bool new_axis = c.attr_i("new_axis", 0) != 0;
  const int64_t r = s[0].dim() + (new_axis ? 1 : 0);
  int64_t axis = c.attr_i("axis", 0);
  if (axis < -r || axis >= r) c.invalid("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += r;
  for (const Tensor& t : s) {
    if (t.dtype() != s[0].dtype()) c.invalid("the sequence's tensors differ in dtype");
    if (t.dim() != s[0].dim()) c.invalid("the sequence's tensors differ in rank");
  }
  return {Value::tensor(new_axis ? stack(s, axis) : cat(s, axis))};
}

const std::map<std::string, ValueConverter>& value_table() {
  static const std::map<std::string, ValueConverter> tbl = {
      {"Identity", [](Ctx& c) -> Vals { return {c.value(0)}; }},
      {"SequenceConstruct",
       [](Ctx& c) -> Vals {
         std::vector<Tensor> s;
         for (size_t i = 0; i < c.num_inputs(); ++i) {
           check_same_dtype(c, s, c.in(i));
           s.push_back(c.in(i));
         }
         return {Value::sequence(std::move(s))};
       }},
      {"SequenceEmpty", [](Ctx& c) -> Vals { return {Value::sequence({})}; }},
      {"SequenceInsert",
       [](Ctx& c) -> Vals {
         std::vector<Tensor> s = c.seq(0);
         const Tensor& t = c.in(1);
         check_same_dtype(c, s, t);
         const int64_t n = static_cast<int64_t>(s.size());
         const int64_t pos = c.has(2) ? position(c, 2, n, true) : n;
         s.insert(s.begin() + pos, t);
         return {Value::sequence(std::move(s))};
       }},
      {"SequenceAt",
       [](Ctx& c) -> Vals {
         const std::vector<Tensor>& s = c.seq(0);
         return {Value::tensor(s[position(c, 1, static_cast<int64_t>(s.size()), false)])};
       }},
      {"SequenceErase",
       [](Ctx& c) -> Vals {
         std::vector<Tensor> s = c.seq(0);
         const int64_t n = static_cast<int64_t>(s.size());
         if (n == 0) c.invalid("the sequence is empty");
         const int64_t pos = c.has(1) ? position(c, 1, n, false) : n - 1;
         s.erase(s.begin() + pos);
         return {Value::sequence(std::move(s))};
       }},
      {"SequenceLength",
       [](Ctx& c) -> Vals {
         return {Value::tensor(scalar_tensor(static_cast<int64_t>(c.seq(0).size()), DType::Int64))};
       }},
      {"SplitToSequence", split_to_sequence},
      {"ConcatFromSequence", concat_from_sequence},
      {"Optional",
       [](Ctx& c) -> Vals {
         if (c.num_inputs() == 0 || !c.has(0)) return {Value::none()};
         return {c.value(0)};
       }},
      {"OptionalHasElement",
       [](Ctx& c) -> Vals { return {Value::tensor(scalar_tensor(c.has(0), DType::Bool))}; }},
      {"OptionalGetElement",
       [](Ctx& c) -> Vals {
         const Value& v = c.value(0);
         if (v.kind == Value::Kind::None) c.invalid("the optional input is empty");
         return {v};
       }},
      {"SequenceMap", sequence_map},
      {"If", if_op},
      {"Loop", loop},
      {"Scan", scan},
  };
  return tbl;
}

}  // namespace

const ValueConverter* find_value_converter(const std::string& op_type) {
  const auto& t = value_table();
  auto it = t.find(op_type);
  return it == t.end() ? nullptr : &it->second;
}

std::vector<std::string> value_converter_names() {
  std::vector<std::string> names;
  for (const auto& [k, v] : value_table()) names.push_back(k);
  return names;
}

}  // namespace tandem::onnx
