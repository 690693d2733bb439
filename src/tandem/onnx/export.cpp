// ONNX export: captures a module's forward with compiled mode's capture (eval mode,
// no_grad), then writes each IR node as ONNX nodes (opset 13), parameters and buffers as
// initializers. One entry per tandem op in the table below; an op without one raises
// NotImplementedError naming it.
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <unordered_map>

#include "tandem/autograd/engine.h"
#include "tandem/io/file_util.h"
#include "tandem/jit/capture.h"
#include "tandem/onnx/onnx.h"
#include "tandem/ops/creation.h"

namespace tandem::onnx {
namespace {

int onnx_type(DType d) {
  switch (d) {
    case DType::Float32: return ::onnx::TensorProto::FLOAT;
    case DType::Float64: return ::onnx::TensorProto::DOUBLE;
    case DType::Float16: return ::onnx::TensorProto::FLOAT16;
    case DType::BFloat16: return ::onnx::TensorProto::BFLOAT16;
    case DType::Int64: return ::onnx::TensorProto::INT64;
    case DType::Int32: return ::onnx::TensorProto::INT32;
    case DType::Int16: return ::onnx::TensorProto::INT16;
    case DType::Int8: return ::onnx::TensorProto::INT8;
    case DType::UInt8: return ::onnx::TensorProto::UINT8;
    case DType::Bool: return ::onnx::TensorProto::BOOL;
  }
  return 0;
}

void fill_tensor(::onnx::TensorProto* p, const std::string& name, const Tensor& t) {
  p->set_name(name);
  p->set_data_type(onnx_type(t.dtype()));
  for (int64_t d : t.sizes()) p->add_dims(d);
  Tensor c = t.detach().contiguous();
  DispatchDepthGuard quiet;  // exporter's own read, not user code in a capture
  p->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes())));
}

void value_info(::onnx::ValueInfoProto* v, const std::string& name, const TensorMeta& m) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type(m.dtype));
  for (int64_t d : m.sizes) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

// Writes the nodes of one IR node. Helpers give names and attributes.
class Writer {
 public:
  Writer(::onnx::GraphProto* g, const ir::Graph& ir, std::vector<std::string>& names) : g_(g), ir_(ir), names_(names) {}

  const ir::Node* n = nullptr;
  const AttrValue& attr(const std::string& name) const {
    for (size_t i = 0; i < n->op->attrs.size(); ++i)
      if (n->op->attrs[i].name == name) return n->attrs.at(i);
    throw RuntimeError("[onnx export] op " + n->op->name + " has no attribute '" + name + "'");
  }
  std::vector<int64_t> ints(const std::string& name) const { return std::get<std::vector<int64_t>>(attr(name)); }
  int64_t i(const std::string& name) const { return std::get<int64_t>(attr(name)); }
  double scalar(const std::string& name) const {
    const AttrValue& a = attr(name);
    if (auto* s = std::get_if<Scalar>(&a)) return s->to_double();
    if (auto* d = std::get_if<double>(&a)) return *d;
    return static_cast<double>(std::get<int64_t>(a));
  }
  std::string in(size_t k) const { return n->inputs.at(k) < 0 ? "" : names_.at(n->inputs[k]); }
  std::string out(size_t k = 0) const { return names_.at(n->outputs.at(k)); }
  const TensorMeta& out_meta(size_t k = 0) const { return ir_.value(n->outputs.at(k)).meta; }
  const TensorMeta& in_meta(size_t k) const { return ir_.value(n->inputs.at(k)).meta; }

  ::onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins, std::vector<std::string> outs) {
    auto* p = g_->add_node();
    p->set_op_type(op);
    p->set_name(op + "_" + std::to_string(counter_++));
    while (!ins.empty() && ins.back().empty()) ins.pop_back();
    for (auto& s : ins) p->add_input(s);
    for (auto& s : outs) p->add_output(s);
    return p;
  }
  static void set(::onnx::NodeProto* p, const std::string& name, int64_t v) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void set(::onnx::NodeProto* p, const std::string& name, double v) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void set(::onnx::NodeProto* p, const std::string& name, const std::vector<int64_t>& v) {
    auto* a = p->add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  // An int64 initializer holding `v` (Reshape's shape).
  std::string int_const(const std::vector<int64_t>& v) {
    std::string name = "const_" + std::to_string(counter_++);
    fill_tensor(g_->add_initializer(), name, from_vector(v, {static_cast<int64_t>(v.size())}));
    return name;
  }
  std::string temp() { return "tmp_" + std::to_string(counter_++); }

 private:
  ::onnx::GraphProto* g_;
  const ir::Graph& ir_;
  std::vector<std::string>& names_;
  int counter_ = 0;
};

std::vector<int64_t> pair_of(std::vector<int64_t> v, int64_t dflt) {
  if (v.empty()) return {dflt, dflt};
  if (v.size() == 1) return {v[0], v[0]};
  return v;
}

using Emit = std::function<void(Writer&)>;

void unary(Writer& w, const char* op) { w.node(op, {w.in(0)}, {w.out()}); }

const std::map<std::string, Emit>& emitters() {
  static const std::map<std::string, Emit> t = {
      {"relu", [](Writer& w) { unary(w, "Relu"); }},
      {"sigmoid", [](Writer& w) { unary(w, "Sigmoid"); }},
      {"tanh", [](Writer& w) { unary(w, "Tanh"); }},
      {"exp", [](Writer& w) { unary(w, "Exp"); }},
      {"log", [](Writer& w) { unary(w, "Log"); }},
      {"sqrt", [](Writer& w) { unary(w, "Sqrt"); }},
      {"neg", [](Writer& w) { unary(w, "Neg"); }},
      {"abs", [](Writer& w) { unary(w, "Abs"); }},
      {"clone", [](Writer& w) { unary(w, "Identity"); }},
      {"contiguous", [](Writer& w) { unary(w, "Identity"); }},
      {"add", [](Writer& w) {
         if (w.scalar("alpha") != 1.0) throw NotImplementedError("[onnx export] add with alpha != 1");
         w.node("Add", {w.in(0), w.in(1)}, {w.out()});
       }},
      {"sub", [](Writer& w) {
         if (w.scalar("alpha") != 1.0) throw NotImplementedError("[onnx export] sub with alpha != 1");
         w.node("Sub", {w.in(0), w.in(1)}, {w.out()});
       }},
      {"mul", [](Writer& w) { w.node("Mul", {w.in(0), w.in(1)}, {w.out()}); }},
      {"div", [](Writer& w) {
         if (!std::holds_alternative<std::monostate>(w.attr("rounding_mode")))
           throw NotImplementedError("[onnx export] div with a rounding mode");
         w.node("Div", {w.in(0), w.in(1)}, {w.out()});
       }},
      {"mm", [](Writer& w) { w.node("MatMul", {w.in(0), w.in(1)}, {w.out()}); }},
      {"bmm", [](Writer& w) { w.node("MatMul", {w.in(0), w.in(1)}, {w.out()}); }},
      {"addmm", [](Writer& w) {
         auto* p = w.node("Gemm", {w.in(1), w.in(2), w.in(0)}, {w.out()});
         Writer::set(p, "alpha", w.scalar("alpha"));
         Writer::set(p, "beta", w.scalar("beta"));
       }},
      {"conv2d", [](Writer& w) {
         if (!std::holds_alternative<std::vector<int64_t>>(w.attr("padding")))
           throw NotImplementedError("[onnx export] conv2d with a padding mode string");
         auto pad = pair_of(w.ints("padding"), 0);
         auto* p = w.node("Conv", {w.in(0), w.in(1), w.in(2)}, {w.out()});
         Writer::set(p, "strides", pair_of(w.ints("stride"), 1));
         Writer::set(p, "pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]});
         Writer::set(p, "dilations", pair_of(w.ints("dilation"), 1));
         Writer::set(p, "group", w.i("groups"));
       }},
      {"max_pool2d", [](Writer& w) {
         auto k = pair_of(w.ints("kernel_size"), 1);
         auto s = w.ints("stride").empty() ? k : pair_of(w.ints("stride"), 1);
         auto pad = pair_of(w.ints("padding"), 0);
         auto* p = w.node("MaxPool", {w.in(0)}, {w.out()});
         Writer::set(p, "kernel_shape", k);
         Writer::set(p, "strides", s);
         Writer::set(p, "pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]});
         Writer::set(p, "dilations", pair_of(w.ints("dilation"), 1));
         Writer::set(p, "ceil_mode", int64_t{std::get<bool>(w.attr("ceil_mode"))});
       }},
      {"avg_pool2d", [](Writer& w) {
         if (!std::holds_alternative<std::monostate>(w.attr("divisor_override")))
           throw NotImplementedError("[onnx export] avg_pool2d with divisor_override");
         auto k = pair_of(w.ints("kernel_size"), 1);
         auto s = w.ints("stride").empty() ? k : pair_of(w.ints("stride"), 1);
         auto pad = pair_of(w.ints("padding"), 0);
         auto* p = w.node("AveragePool", {w.in(0)}, {w.out()});
         Writer::set(p, "kernel_shape", k);
         Writer::set(p, "strides", s);
         Writer::set(p, "pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]});
         Writer::set(p, "ceil_mode", int64_t{std::get<bool>(w.attr("ceil_mode"))});
         Writer::set(p, "count_include_pad", int64_t{std::get<bool>(w.attr("count_include_pad"))});
       }},
      {"view", [](Writer& w) { w.node("Reshape", {w.in(0), w.int_const(w.out_meta().sizes)}, {w.out()}); }},
      {"reshape", [](Writer& w) { w.node("Reshape", {w.in(0), w.int_const(w.out_meta().sizes)}, {w.out()}); }},
      {"_unsafe_view", [](Writer& w) { w.node("Reshape", {w.in(0), w.int_const(w.out_meta().sizes)}, {w.out()}); }},
      {"flatten", [](Writer& w) { w.node("Reshape", {w.in(0), w.int_const(w.out_meta().sizes)}, {w.out()}); }},
      {"transpose", [](Writer& w) {
         const int64_t r = static_cast<int64_t>(w.in_meta(0).sizes.size());
         int64_t a = w.i("dim0"), b = w.i("dim1");
         if (a < 0) a += r;
         if (b < 0) b += r;
         std::vector<int64_t> perm(r);
         for (int64_t k = 0; k < r; ++k) perm[k] = k;
         std::swap(perm[a], perm[b]);
         Writer::set(w.node("Transpose", {w.in(0)}, {w.out()}), "perm", perm);
       }},
      {"t", [](Writer& w) {
         std::vector<int64_t> perm = w.in_meta(0).sizes.size() == 2 ? std::vector<int64_t>{1, 0} : std::vector<int64_t>{0};
         Writer::set(w.node("Transpose", {w.in(0)}, {w.out()}), "perm", perm);
       }},
      {"permute", [](Writer& w) { Writer::set(w.node("Transpose", {w.in(0)}, {w.out()}), "perm", w.ints("dims")); }},
      {"softmax", [](Writer& w) { Writer::set(w.node("Softmax", {w.in(0)}, {w.out()}), "axis", w.i("dim")); }},
      {"log_softmax", [](Writer& w) { Writer::set(w.node("LogSoftmax", {w.in(0)}, {w.out()}), "axis", w.i("dim")); }},
      {"_to_copy", [](Writer& w) {
         Writer::set(w.node("Cast", {w.in(0)}, {w.out()}), "to", int64_t{onnx_type(std::get<DType>(w.attr("dtype")))});
       }},
      {"native_batch_norm", [](Writer& w) {
         if (std::get<bool>(w.attr("training"))) throw NotImplementedError("[onnx export] batch norm in training mode");
         if (w.in(1).empty() || w.in(2).empty()) throw NotImplementedError("[onnx export] batch norm without affine");
         auto* p = w.node("BatchNormalization", {w.in(0), w.in(1), w.in(2), w.in(3), w.in(4)}, {w.out(0)});
         Writer::set(p, "epsilon", std::get<double>(w.attr("eps")));
       }},
  };
  return t;
}

}  // namespace

void export_model(const nn::ModulePtr& module, const std::vector<Tensor>& example_inputs, const std::string& path) {
  TANDEM_CHECK(module != nullptr, ValueError, "onnx export", "module is null");
  const bool was_training = module->is_training();
  module->eval();
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> inputs = example_inputs;
  std::vector<std::string> names;
  for (size_t k = 0; k < example_inputs.size(); ++k) names.push_back("input_" + std::to_string(k));
  const size_t num_user = inputs.size();
  for (const auto& list : {module->named_parameters(), module->named_buffers()})
    for (const auto& [name, t] : list) {
      inputs.push_back(t);
      names.push_back(name);
    }
  jit::Capture cap = jit::capture([&](const std::vector<Tensor>& in) {
    return module->forward_list(std::vector<Tensor>(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(num_user)));
  }, inputs, names);
  if (was_training) module->train();
  TANDEM_CHECK(cap.ok, NotImplementedError, "onnx export", "the forward does not capture as one graph: ", cap.break_reason);
  const ir::Graph& ir = cap.graph;

  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("tandem");
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("tandem");
  std::vector<std::string> vnames(ir.values().size());
  for (const auto& v : ir.values()) vnames[v.id] = "v" + std::to_string(v.id);
  // Inputs: the caller's are graph inputs; parameters, buffers and lifted tensors initializers.
  for (size_t k = 0; k < ir.inputs().size(); ++k) {
    const auto& v = ir.value(ir.inputs()[k]);
    if (k < num_user) {
      vnames[v.id] = names[k];
      value_info(g->add_input(), names[k], v.meta);
    } else {
      const Tensor& t = k < inputs.size() ? inputs[k] : cap.lifted.at(k - inputs.size());
      vnames[v.id] = k < inputs.size() ? names[k] : "lifted_" + std::to_string(k - inputs.size());
      fill_tensor(g->add_initializer(), vnames[v.id], t);
    }
  }
  for (const auto& v : ir.values())
    if (v.kind == ir::ValueKind::Constant) fill_tensor(g->add_initializer(), vnames[v.id], v.constant);
  Writer w(g, ir, vnames);
  for (const auto& n : ir.nodes()) {
    auto it = emitters().find(n.op->name);
    TANDEM_CHECK(it != emitters().end(), NotImplementedError, "onnx export",
                 "tandem op '", n.op->name, "' has no ONNX mapping yet");
    w.n = &n;
    it->second(w);
  }
  // Graph outputs: an Identity per output names it (an output may also be an input).
  for (size_t k = 0; k < ir.outputs().size(); ++k) {
    const std::string name = "output_" + std::to_string(k);
    w.node("Identity", {vnames[ir.outputs()[k]]}, {name});
    value_info(g->add_output(), name, ir.value(ir.outputs()[k]).meta);
  }
  const std::string bytes = m.SerializeAsString();
  io::atomic_write(path, "onnx export", [&](io::FileWriter& fw) { fw.write(bytes.data(), bytes.size()); });
}

}  // namespace tandem::onnx
