#include "tandem/jit/training.h"

#include <algorithm>
#include <any>
#include <sstream>

#include "tandem/autograd/function.h"
#include "tandem/jit/compile.h"
#include "tandem/jit/partition.h"
#include "tandem/passes/pass_manager.h"
#include "tandem/runtime/memory_budget.h"

namespace tandem::jit {

namespace {

// Copies the nodes at `positions` (in that order) of `src` into a new graph with `inputs`
// (src value ids) as its inputs and `outputs` (src value ids) as its outputs. Constants are
// copied where used; any other value not made by those nodes must be among the inputs.
ir::Graph extract(const ir::Graph& src, const std::vector<int>& inputs, const std::vector<size_t>& positions,
                  const std::vector<int>& outputs, std::vector<int>& origin) {
  ir::Graph dst;
  std::vector<int> map(src.values().size(), -1);
  for (int v : inputs) {
    const ir::Value& sv = src.value(v);
    const int id = dst.add_input(sv.meta, sv.name.empty() ? "%" + std::to_string(v) : sv.name);
    dst.mutable_value(id).wrapped_number = sv.wrapped_number;
    map[static_cast<size_t>(v)] = id;
  }
  auto use = [&](int v) -> int {
    if (v < 0) return -1;
    int& m = map[static_cast<size_t>(v)];
    if (m >= 0) return m;
    const ir::Value& sv = src.value(v);
    TANDEM_INTERNAL_ASSERT(sv.kind == ir::ValueKind::Constant, "training split: value %", v,
                           " crosses programs without being passed");
    m = dst.add_constant(sv.constant, sv.name);
    return m;
  };
  for (size_t k : positions) {
    const ir::Node& n = src.nodes()[k];
    std::vector<int> ins;
    for (int i : n.inputs) ins.push_back(use(i));
    std::vector<TensorMeta> metas;
    for (int o : n.outputs) metas.push_back(src.value(o).meta);
    const int id = dst.add_node(*n.op, std::move(ins), n.attrs, std::move(metas));
    const auto& outs = dst.nodes()[static_cast<size_t>(id)].outputs;
    for (size_t j = 0; j < outs.size(); ++j) map[static_cast<size_t>(n.outputs[j])] = outs[j];
  }
  std::vector<int> outs;
  for (int o : outputs) outs.push_back(use(o));
  dst.set_outputs(std::move(outs));
  origin.assign(dst.values().size(), -1);
  for (size_t v = 0; v < map.size(); ++v)
    if (map[v] >= 0) origin[static_cast<size_t>(map[v])] = static_cast<int>(v);
  return dst;
}

std::unique_ptr<runtime::Executor> optimise(ir::Graph g, const CompileOptions& opts) {
  passes::PassManager pm;
  for (const auto& name : opts.disabled_passes) pm.set_enabled(name, false);
  pm.run(g);
  ir::verify(g);
  auto exec = std::make_unique<runtime::Executor>(std::move(g));
  exec->set_profiling(opts.profile);
  return exec;
}

// The backward of one compiled call: the backward program on the saved values.
std::vector<Tensor> compiled_backward(autograd::AutogradContext* ctx, std::vector<Tensor> grads) {
  TANDEM_CHECK(!is_grad_enabled(), NotImplementedError, "CompiledFunctionBackward",
               "double backward (create_graph=true) through a compiled function is not supported; call the function "
               "eagerly for higher-order gradients");
  const auto& p = std::any_cast<const std::shared_ptr<TrainingProgram>&>(ctx->saved_data.at("program"));
  std::vector<Tensor> in = ctx->get_saved_variables();  // RuntimeError if modified in place since
  // Without retain_graph the node drops its saved values after this call anyway: dropping
  // them now lets the program free each one after its last use (run(&&) below).
  if (!autograd::detail::backward_keeps_graph())
    for (auto& s : ctx->saved_) s.reset();
  // Outputs the caller's loss does not reach get no gradient (the node does not make
  // zeros): their gradient inputs are left out, as eager mode's engine leaves them.
  std::vector<bool> present;
  for (size_t k = 0; k < grads.size(); ++k)
    if (p->output_differentiable[k]) present.push_back(grads[k].defined());
  const bool all = std::all_of(present.begin(), present.end(), [](bool b) { return b; });
  const TrainingProgram::PartialBackward* partial = all ? nullptr : &p->backward_without(present);
  runtime::Executor& program = partial ? *partial->program : *p->backward;
  const auto& gin = program.graph().inputs();
  for (size_t k = 0; k < grads.size(); ++k) {
    if (!p->output_differentiable[k] || !grads[k].defined()) continue;
    Tensor g = std::move(grads[k]);  // the program frees it after its last use, as eager does
    // The program was planned for the layout of the capture's gradient (contiguous).
    const auto& m = program.graph().value(gin[in.size()]).meta;
    if (!g.strides().equals(m.strides) || g.dtype() != m.dtype) g = g.contiguous().to(m.dtype);
    in.push_back(std::move(g));
  }
  std::vector<Tensor> res = program.run(std::move(in));
  std::vector<Tensor> out(ctx->needs_input_grad_.size());
  size_t r = 0, with_grad = 0;
  for (size_t j = 0; j < p->targets.size(); ++j) {
    if (!p->target_has_grad[j]) continue;
    if (!partial || partial->has_grad[with_grad]) out[static_cast<size_t>(p->targets[j])] = std::move(res[r++]);
    ++with_grad;
  }
  return out;
}

// The backward graph `g` (inputs: `num_saved` saved values, then one gradient per
// differentiable output) without the gradients `present` marks false: values computed
// from missing gradients only are dropped (eager's engine never runs the nodes they come
// from), and a sum in which one term is missing becomes the other term (the engine's
// accumulation of a slot that received one gradient). `has_grad` gets one flag per output.
ir::Graph prune_missing_gradients(const ir::Graph& g, size_t num_saved, const std::vector<bool>& present,
                                  bool joins_gradients, std::vector<bool>& has_grad) {
  constexpr int kMissing = -2;
  const size_t nv = g.values().size();
  std::vector<int> map(nv, -1);
  std::vector<bool> from_grad(nv, false);  // depends on an output gradient
  std::vector<bool> written(nv, false);    // storage written in place by some node
  for (const ir::Node& n : g.nodes())
    for (int w : written_values(n)) written[static_cast<size_t>(g.storage_root(w))] = true;
  ir::Graph dst;
  const auto& ins = g.inputs();
  TANDEM_INTERNAL_ASSERT(ins.size() == num_saved + present.size(), "backward program inputs");
  for (size_t k = 0; k < ins.size(); ++k) {
    const ir::Value& v = g.value(ins[k]);
    if (k >= num_saved) {
      from_grad[static_cast<size_t>(ins[k])] = true;
      if (!present[k - num_saved]) {
        map[static_cast<size_t>(ins[k])] = kMissing;
        continue;
      }
    }
    const int id = dst.add_input(v.meta, v.name);
    dst.mutable_value(id).wrapped_number = v.wrapped_number;
    map[static_cast<size_t>(ins[k])] = id;
  }
  auto use = [&](int v) -> int {
    if (v < 0) return -1;
    int& m = map[static_cast<size_t>(v)];
    if (m == -1) {  // a constant, copied where used
      const ir::Value& sv = g.value(v);
      TANDEM_INTERNAL_ASSERT(sv.kind == ir::ValueKind::Constant, "backward value %", v, " used before it is made");
      m = dst.add_constant(sv.constant, sv.name);
    }
    return m;
  };
  auto unsupported = [&](const std::string& where) {
    throw NotImplementedError(str_cat(
        "[CompiledFunctionBackward] the caller gave no gradient to some of the compiled function's outputs, and its "
        "backward combines their gradients with others ",
        where,
        " (eager mode's result for the missing gradient cannot be derived from the compiled program); call the "
        "function eagerly, or use every differentiable output in the loss"));
  };
  if (joins_gradients) unsupported("in the backward rule of an op with several differentiable outputs");
  for (const ir::Node& n : g.nodes()) {
    bool grad_in = false, any_missing = false, all_missing = true;
    for (int i : n.inputs) {
      if (i < 0 || !from_grad[static_cast<size_t>(i)]) continue;
      grad_in = true;
      const bool missing = map[static_cast<size_t>(i)] == kMissing;
      any_missing = any_missing || missing;
      all_missing = all_missing && missing;
    }
    for (int o : n.outputs) from_grad[static_cast<size_t>(o)] = grad_in;
    if (any_missing && all_missing) {
      for (int o : n.outputs) map[static_cast<size_t>(o)] = kMissing;
      continue;
    }
    if (any_missing) {
      // add(a, b, alpha=1) of two gradients, one missing: the other term itself (eager
      // passes on the one gradient a slot received, in its own layout), when nothing
      // writes either in place (they become one value).
      if (n.op->name != "add" || n.inputs.size() != 2 || n.outputs.size() != 1 ||
          std::get<Scalar>(n.attrs.at(0)).to<double>() != 1.0)
        unsupported(str_cat("in '", n.op->name, "'"));
      const int kept = map[static_cast<size_t>(n.inputs[0])] == kMissing ? n.inputs[1] : n.inputs[0];
      const TensorMeta &km = dst.value(use(kept)).meta, &om = g.value(n.outputs[0]).meta;
      if (km.dtype != om.dtype || km.sizes != om.sizes || written[static_cast<size_t>(g.storage_root(kept))] ||
          written[static_cast<size_t>(n.outputs[0])])
        unsupported(str_cat("in '", n.op->name, "'"));
      map[static_cast<size_t>(n.outputs[0])] = use(kept);
      continue;
    }
    std::vector<int> node_ins;
    bool relaid = false;  // an input's layout differs from the recording's
    for (int i : n.inputs) {
      node_ins.push_back(use(i));
      relaid = relaid || (i >= 0 && dst.value(node_ins.back()).meta.strides != g.value(i).meta.strides);
    }
    std::vector<TensorMeta> metas;  // empty: inferred by the op's meta function, as eager's kernel would
    if (!relaid)
      for (int o : n.outputs) metas.push_back(g.value(o).meta);
    const int id = dst.add_node(*n.op, std::move(node_ins), n.attrs, std::move(metas));
    const auto& outs = dst.nodes()[static_cast<size_t>(id)].outputs;
    for (size_t j = 0; j < outs.size(); ++j) map[static_cast<size_t>(n.outputs[j])] = outs[j];
  }
  std::vector<int> outs;
  has_grad.clear();
  for (int o : g.outputs()) {
    const bool has = o < 0 || map[static_cast<size_t>(o)] != kMissing;
    has_grad.push_back(has);
    if (has) outs.push_back(use(o));
  }
  dst.set_outputs(std::move(outs));
  return dst;
}

// Fusions that change what the forward saves for the backward (fuse_conv_blocks' training
// form: the pooled output and window codes instead of the ReLU result) must see forward and
// backward together, so they run on the joint graph before the split. Nodes keep their
// order, so the forward is still a prefix: its new length counts the surviving nodes that
// were forward nodes (a rewritten node keeps its first output; a node without outputs,
// which the pass never touches, keeps its op and inputs).
void fuse_joint_graph(Capture& c, const CompileOptions& opts) {
  for (const auto& name : opts.disabled_passes)
    if (name == "fuse_conv_blocks") return;
  std::vector<bool> forward_made(c.graph.values().size(), false);
  std::vector<std::pair<const OpDef*, std::vector<int>>> forward_no_outputs;
  for (size_t k = 0; k < c.forward_nodes; ++k) {
    const ir::Node& node = c.graph.nodes()[k];
    if (node.outputs.empty()) forward_no_outputs.emplace_back(node.op, node.inputs);
    for (int o : node.outputs) forward_made[static_cast<size_t>(o)] = true;
  }
  if (!passes::fuse_conv_blocks(c.graph)) return;
  size_t f = 0;
  for (const auto& node : c.graph.nodes()) {
    const bool fwd = node.outputs.empty()
                         ? std::find(forward_no_outputs.begin(), forward_no_outputs.end(),
                                     std::make_pair(node.op, node.inputs)) != forward_no_outputs.end()
                         : static_cast<size_t>(node.outputs[0]) < forward_made.size() &&
                               forward_made[static_cast<size_t>(node.outputs[0])];
    if (!fwd) break;
    ++f;
  }
  c.forward_nodes = f;
}

}  // namespace

std::shared_ptr<TrainingProgram> build_training_program(Capture& c, const CompileOptions& opts) {
  TANDEM_INTERNAL_ASSERT(c.has_backward, "build_training_program needs a capture with its backward");
  fuse_joint_graph(c, opts);
  const ir::Graph& g = c.graph;
  const size_t nv = g.values().size(), f = c.forward_nodes, n = g.nodes().size();
  std::vector<bool> is_seed(nv, false);
  for (int v : c.grad_output_inputs) is_seed[static_cast<size_t>(v)] = true;
  // Forward values: every input but the output gradients, and what forward nodes define.
  std::vector<bool> forward_value(nv, false);
  std::vector<int> fwd_inputs;
  for (int v : g.inputs())
    if (!is_seed[static_cast<size_t>(v)]) {
      forward_value[static_cast<size_t>(v)] = true;
      fwd_inputs.push_back(v);
    }
  for (size_t k = 0; k < f; ++k)
    for (int o : g.nodes()[k].outputs) forward_value[static_cast<size_t>(o)] = true;
  // Needed: forward values the backward reads (by value id: deterministic). The partition
  // saves them, or some of the values they are made from and the backward makes them again.
  std::vector<bool> needed(nv, false);
  for (size_t k = f; k < n; ++k)
    for (int i : g.nodes()[k].inputs)
      if (i >= 0 && forward_value[static_cast<size_t>(i)]) needed[static_cast<size_t>(i)] = true;
  for (int v : c.grad_values)
    if (v >= 0 && forward_value[static_cast<size_t>(v)]) needed[static_cast<size_t>(v)] = true;
  const Partition part = choose_saved(g, f, needed, opts.recompute);

  auto p = std::make_shared<TrainingProgram>();
  std::vector<int> fwd_outputs = g.outputs();
  const std::vector<int>& saved_ids = part.saved;
  p->num_outputs = fwd_outputs.size();
  fwd_outputs.insert(fwd_outputs.end(), saved_ids.begin(), saved_ids.end());
  p->saved_bytes = part.saved_bytes;
  p->naive_saved_bytes = part.naive_saved_bytes;
  for (size_t k : part.recompute) p->recomputed_ops.push_back(g.nodes()[k].op->name);
  p->num_saved = saved_ids.size();
  std::vector<int> bwd_inputs = saved_ids;
  bwd_inputs.insert(bwd_inputs.end(), c.grad_output_inputs.begin(), c.grad_output_inputs.end());
  std::vector<int> bwd_outputs;
  for (size_t j = 0; j < c.grad_values.size(); ++j) {
    p->targets.push_back(c.grad_targets[j]);
    p->target_has_grad.push_back(c.grad_values[j] >= 0);
    if (c.grad_values[j] >= 0) bwd_outputs.push_back(c.grad_values[j]);
  }
  p->output_differentiable = c.output_differentiable;
  std::vector<size_t> forward_positions(f), backward_positions = part.recompute;
  for (size_t k = 0; k < f; ++k) forward_positions[k] = k;
  for (size_t k = f; k < n; ++k) backward_positions.push_back(k);
  p->forward = optimise(extract(g, fwd_inputs, forward_positions, fwd_outputs, p->forward_origin), opts);
  p->backward = optimise(extract(g, bwd_inputs, backward_positions, bwd_outputs, p->backward_origin), opts);
  std::vector<int> unused_origin;
  p->backward_unoptimised = extract(g, bwd_inputs, backward_positions, bwd_outputs, unused_origin);
  p->options = std::make_shared<const CompileOptions>(opts);
  p->backward_joins_gradients = c.backward_joins_gradients;
  // Buffers allocated per value (not one arena for the whole run): with the saved values
  // freed as they are consumed, the backward's peak is eager's.
  p->backward->set_use_arena(false);
  // Passes add values (fused nodes, folded constants): they have no origin.
  p->forward_origin.resize(p->forward->graph().values().size(), -1);
  p->backward_origin.resize(p->backward->graph().values().size(), -1);
  return p;
}

const TrainingProgram::PartialBackward& TrainingProgram::backward_without(const std::vector<bool>& present) {
  std::lock_guard<std::mutex> lock(partial_mu_);
  for (const auto& [mask, pb] : partial_)
    if (mask == present) return *pb;
  auto pb = std::make_unique<PartialBackward>();
  ir::Graph g = prune_missing_gradients(backward_unoptimised, num_saved, present, backward_joins_gradients, pb->has_grad);
  pb->program = optimise(std::move(g), *options);
  pb->program->set_use_arena(false);  // as `backward`: buffers freed after their last use
  partial_.emplace_back(present, std::move(pb));
  return *partial_.back().second;
}

std::vector<Tensor> run_training_program(const std::shared_ptr<TrainingProgram>& p, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> outs = p->forward->run(inputs);
  std::vector<Tensor> user(outs.begin(), outs.begin() + static_cast<std::ptrdiff_t>(p->num_outputs));
  bool any = false;
  std::vector<bool> needs(inputs.size(), false);
  if (is_grad_enabled())
    for (size_t j = 0; j < p->targets.size(); ++j) {
      const size_t i = static_cast<size_t>(p->targets[j]);
      needs[i] = p->target_has_grad[j] && inputs[i].requires_grad();
      any = any || needs[i];
    }
  if (!any) return user;
  auto node = autograd::make_node<autograd::CppNode>("CompiledFunctionBackward", &compiled_backward);
  node->ctx.needs_input_grad_ = needs;
  node->ctx.set_materialize_grads(false);  // a missing output gradient stays missing (compiled_backward)
  node->ctx.saved_data["program"] = p;
  node->ctx.save_for_backward(std::vector<Tensor>(outs.begin() + static_cast<std::ptrdiff_t>(p->num_outputs), outs.end()));
  std::vector<Tensor> non_diff;
  for (size_t k = 0; k < user.size(); ++k)
    if (!p->output_differentiable[k]) non_diff.push_back(user[k]);
  node->ctx.mark_non_differentiable(non_diff);
  return autograd::detail::wrap_outputs(node, inputs, std::move(user));
}

namespace {
std::vector<Tensor> freed_graph_backward(autograd::AutogradContext* ctx, std::vector<Tensor>) {
  // The words SavedVariable::unpack uses when eager mode meets a freed graph.
  throw RuntimeError(str_cat("[", std::any_cast<const std::string&>(ctx->saved_data.at("node")),
                             "] trying to backward through the graph a second time (or to read saved tensors after "
                             "they were freed); pass retain_graph=true to the first backward if you need to backward "
                             "twice"));
}
}  // namespace

Tensor with_freed_history(const Tensor& out, const std::string& node_name) {
  auto node = autograd::make_node<autograd::CppNode>(node_name, &freed_graph_backward);
  node->ctx.saved_data["node"] = node_name;
  node->set_num_outputs(1);
  node->output_sizes.push_back(out.sizes().vec());
  node->output_dtypes.push_back(out.dtype());
  Tensor t = out;
  autograd::set_history(t, node, 0);
  return t;
}

std::string TrainingProgram::to_text() const {
  std::ostringstream os;
  os << "forward program (outputs: " << num_outputs << " results, then " << num_saved << " saved values, "
     << saved_bytes << " bytes):\n"
     << forward->graph().to_text();
  // The values the backward reads, as the forward returns them after the user's outputs.
  const ir::Graph& fg = forward->graph();
  for (size_t k = num_outputs; k < fg.outputs().size(); ++k) {
    const int v = fg.outputs()[k];
    const ir::Value& val = fg.value(v);
    const int root = fg.storage_root(v);
    os << "# saved %" << v << " " << dtype_name(val.meta.dtype) << IntArrayRef(val.meta.sizes) << " ("
       << (fg.value(root).kind != ir::ValueKind::Node ? "an input or a view of one, kept by reference"
           : root != v ? "a view of %" + std::to_string(root) + ", no bytes of its own"
                       : std::to_string(span_bytes(val.meta)) + " bytes")
       << ")\n";
  }
  os << "# forward memory: " << forward->memory_summary() << "\n";
  os << "backward program (inputs: the " << num_saved << " saved values, then the output gradients; ";
  if (recomputed_ops.empty()) {
    os << "nothing recomputed";
  } else {
    os << "recomputes " << recomputed_ops.size() << " forward op(s):";
    for (const auto& op : recomputed_ops) os << " " << op;
    os << ", saving " << naive_saved_bytes - saved_bytes << " of " << naive_saved_bytes << " bytes";
  }
  os << "):\n"
     << backward->graph().to_text();
  os << "# backward memory: " << backward->memory_summary() << "\n";
  return os.str();
}

}  // namespace tandem::jit
