// Pattern fusions of compiled programs. Each replaces a chain of nodes by one fused op
// whose kernel computes the chain's values exactly (bitwise), only with less memory
// traffic: the fused op is an OpDef like any other (ops/), this pass only rewrites graphs.
#include <algorithm>

#include "tandem/passes/pass_manager.h"

namespace tandem::passes {

namespace {

// The single node reading value `v` (through any input slot), or -1 when v has other
// uses: another reader, a graph output, or a view/alias whose storage someone else reads.
int sole_reader(const ir::Graph& g, const std::vector<int>& uses, int v) {
  if (uses[static_cast<size_t>(v)] != 1) return -1;
  for (int o : g.outputs())
    if (g.storage_root(o) == g.storage_root(v)) return -1;
  int reader = -1;
  for (const auto& n : g.nodes()) {
    if (n.dead) continue;
    for (int i : n.inputs)
      if (i >= 0 && g.storage_root(i) == g.storage_root(v)) {
        if (i != v || (reader >= 0 && reader != n.id)) return -1;  // read through an alias, or twice
        reader = n.id;
      }
  }
  return reader;
}

bool ints_are(const AttrValue& a, int64_t v) {
  const auto* p = std::get_if<std::vector<int64_t>>(&a);
  if (!p) return false;
  for (int64_t x : *p)
    if (x != v) return false;
  return true;
}

std::vector<int64_t> pair_of(const AttrValue& a) {
  const auto& v = std::get<std::vector<int64_t>>(a);
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

bool is_contiguous_meta(const TensorMeta& m) { return m.strides == contiguous_strides(m.sizes); }

bool is_zero_scalar(const AttrValue& a) {
  const auto* p = std::get_if<Scalar>(&a);
  return p && p->to<double>() == 0.0;
}

// True when nodes (lo, hi) of `nodes` write the storage of any of `values`.
bool written_between(const ir::Graph& g, size_t lo, size_t hi, const std::vector<int>& values) {
  const auto& nodes = g.nodes();
  for (size_t k = lo + 1; k < hi; ++k) {
    if (nodes[k].dead) continue;
    for (int w : ir::written_values(nodes[k]))
      for (int v : values)
        if (v >= 0 && g.storage_root(w) == g.storage_root(v)) return true;
  }
  return false;
}

// The training form of a conv -> relu -> 2x2/stride-2 max_pool2d block: the ReLU result
// `rv` is read by the pool and, in the backward, by max_pool2d_backward(g, rv) nodes each
// feeding only threshold_backward(., rv, 0). Then the block becomes
// _fused_conv2d_with_indices (pooled output + window codes, no ReLU result at all) and each
// backward pair _fused_max_pool2d_relu_backward(g, codes): bitwise the same
// gradients, and what the block's backward needs from the forward shrinks from the ReLU
// result to one byte per pooled element (the pooled output stays only as long as its
// other readers, e.g. the next layer's weight gradient, need it). Returns whether it
// rewrote the block.
bool fuse_training_block(ir::Graph& g, size_t ci, size_t ri) {
  auto& nodes = g.mutable_nodes();
  const int rv = nodes[ri].outputs[0];
  for (int o : g.outputs())
    if (g.storage_root(o) == g.storage_root(rv)) return false;
  int pool = -1;
  std::vector<size_t> pool_backward, relu_backward;
  for (const auto& n : nodes) {
    if (n.dead || static_cast<size_t>(n.id) == ri) continue;
    bool reads = false;
    for (int i : n.inputs)
      if (i >= 0 && g.storage_root(i) == g.storage_root(rv)) {
        if (i != rv) return false;  // read through a view
        reads = true;
      }
    if (!reads) continue;
    const std::string& name = n.op->name;
    if (name == "max_pool2d" && pool < 0 && n.inputs[0] == rv) pool = n.id;
    else if (name == "max_pool2d_backward" && n.inputs[0] != rv && n.inputs[1] == rv) pool_backward.push_back(static_cast<size_t>(n.id));
    else if (name == "threshold_backward" && n.inputs[0] != rv && n.inputs[1] == rv && n.attrs.size() == 1 &&
             is_zero_scalar(n.attrs[0]))
      relu_backward.push_back(static_cast<size_t>(n.id));
    else return false;
  }
  if (pool < 0 || pool_backward.empty() || pool_backward.size() != relu_backward.size()) return false;
  const ir::Node& pn = nodes[static_cast<size_t>(pool)];
  if (pn.attrs.size() < 5 || !ints_are(pn.attrs[0], 2) || !ints_are(pn.attrs[2], 0) || !ints_are(pn.attrs[3], 1) ||
      pn.attrs[4] != AttrValue(false))
    return false;
  const auto& st = std::get<std::vector<int64_t>>(pn.attrs[1]);
  if (!st.empty() && !ints_are(pn.attrs[1], 2)) return false;
  const int pooled = pn.outputs[0];
  const std::vector<int> uses = g.use_counts();
  // Each max_pool2d_backward: the pool's attributes, its result read only by one of the
  // threshold_backward nodes, after the pool.
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t b : pool_backward) {
    const ir::Node& bn = nodes[b];
    if (bn.attrs != pn.attrs || b < static_cast<size_t>(pool)) return false;
    const int r = sole_reader(g, uses, bn.outputs[0]);
    if (r < 0 || std::find(relu_backward.begin(), relu_backward.end(), static_cast<size_t>(r)) == relu_backward.end() ||
        nodes[static_cast<size_t>(r)].inputs[0] != bn.outputs[0])
      return false;
    const ir::Value& gv = g.value(bn.inputs[0]);
    if (gv.meta.dtype != g.value(pooled).meta.dtype || gv.meta.sizes != g.value(pooled).meta.sizes) return false;
    pairs.emplace_back(b, static_cast<size_t>(r));
  }
  // The convolution moves to the pool's place: nothing may write its inputs in between.
  // (The backward reads only the new codes value, which nothing else writes.)
  if (written_between(g, ci, static_cast<size_t>(pool), nodes[ci].inputs)) return false;

  const ir::Value& cv = g.value(nodes[ci].outputs[0]);
  const int64_t H = cv.meta.sizes[2], W = cv.meta.sizes[3];
  ir::Node& p = nodes[static_cast<size_t>(pool)];
  const ir::Node& conv = nodes[ci];
  p.op = find_op("_fused_conv2d_with_indices");
  p.attrs = {conv.attrs[0], conv.attrs[1], conv.attrs[2], conv.attrs[3], AttrValue(true),
             AttrValue(std::vector<int64_t>{2, 2}), AttrValue(std::vector<int64_t>{2, 2}), AttrValue(false)};
  p.inputs = conv.inputs;
  ir::Value codes;
  codes.id = static_cast<int>(g.values().size());
  codes.kind = ir::ValueKind::Node;
  codes.meta.dtype = kUInt8;
  codes.meta.sizes = g.value(pooled).meta.sizes;
  codes.meta.strides = contiguous_strides(codes.meta.sizes);
  codes.producer = p.id;
  codes.output_index = 1;
  p.outputs.push_back(codes.id);
  g.mutable_values().push_back(std::move(codes));
  const int codes_id = p.outputs[1];
  const OpDef* backward = find_op("_fused_max_pool2d_relu_backward");
  for (const auto& [b, t] : pairs) {
    ir::Node& tn = nodes[t];
    tn.op = backward;
    tn.inputs = {nodes[b].inputs[0], codes_id};
    tn.attrs = {AttrValue(std::vector<int64_t>{H, W})};
    nodes[b].dead = true;
  }
  nodes[ci].dead = true;
  nodes[ri].dead = true;
  return true;
}

}  // namespace

namespace {

// True when node `reader` is the only node reading value v (once or more, as mul(y, y)
// does), directly and not through an alias, and v is no graph output.
bool read_only_by(const ir::Graph& g, int v, int reader) {
  const int root = g.storage_root(v);
  for (int o : g.outputs())
    if (g.storage_root(o) == root) return false;
  for (const auto& n : g.nodes()) {
    if (n.dead) continue;
    for (int i : n.inputs)
      if (i >= 0 && g.storage_root(i) == root && (n.id != reader || i != v)) return false;
  }
  return true;
}

// A node the pointwise fusion may take: an elementwise op with one output, no undefined
// input, that neither writes nor draws random numbers nor checks data (its error would
// surface at another node).
bool fusible_pointwise(const ir::Node& n) {
  const OpDef& op = *n.op;
  if (n.dead || !op.pointwise || op.num_outputs != 1 || n.outputs.size() != 1 || op.random || op.raises_on_data ||
      op.is_inplace || op.view || op.composite || !op.cpu_kernel || mutated_inputs(op, n.attrs) != 0)
    return false;
  for (int i : n.inputs)
    if (i < 0) return false;
  return true;
}

}  // namespace

bool fuse_pointwise(ir::Graph& g) {
  const OpDef* fused = find_op("_fused_pointwise");
  if (!fused) return false;
  auto& nodes = g.mutable_nodes();
  std::vector<bool> taken(nodes.size(), false);
  bool changed = false;
  // Groups grow from their last node (the root, whose result is the group's) backwards
  // through producers whose result only the group reads.
  for (size_t ri = nodes.size(); ri-- > 0;) {
    if (taken[ri] || !fusible_pointwise(nodes[ri])) continue;
    const ir::Value& rv = g.value(nodes[ri].outputs[0]);
    if (!is_contiguous_meta(rv.meta)) continue;
    std::vector<size_t> members{ri};
    for (size_t m = 0; m < members.size(); ++m) {
      for (int v : nodes[members[m]].inputs) {
        const ir::Value& val = g.value(v);
        if (val.kind != ir::ValueKind::Node || val.alias_of >= 0) continue;
        const size_t p = static_cast<size_t>(val.producer);
        if (taken[p] || std::find(members.begin(), members.end(), p) != members.end() || !fusible_pointwise(nodes[p]))
          continue;
        // Its result: read once, by this member, with the group's shape (elementwise over
        // the same elements), and the producer may move to the root's place.
        if (!read_only_by(g, v, nodes[members[m]].id) || val.meta.sizes != rv.meta.sizes) continue;
        if (written_between(g, p, ri, nodes[p].inputs)) continue;
        members.push_back(p);
      }
    }
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end());
    // The program: each member in order; inputs from outside the group become the fused
    // node's inputs (once each).
    std::vector<int> ext;
    std::vector<int64_t> program;
    std::vector<AttrValue> attrs(2);
    std::string names;
    for (size_t k = 0; k < members.size(); ++k) {
      const ir::Node& n = nodes[members[k]];
      names += (k ? "," : "") + n.op->name;
      program.push_back(static_cast<int64_t>(n.inputs.size()));
      for (int v : n.inputs) {
        const ir::Value& val = g.value(v);
        auto in_group = std::find(members.begin(), members.begin() + static_cast<std::ptrdiff_t>(k),
                                  val.kind == ir::ValueKind::Node ? static_cast<size_t>(val.producer) : SIZE_MAX);
        if (val.kind == ir::ValueKind::Node && val.alias_of < 0 && in_group != members.begin() + static_cast<std::ptrdiff_t>(k)) {
          program.push_back(-1 - (in_group - members.begin()));
          continue;
        }
        auto e = std::find(ext.begin(), ext.end(), v);
        if (e == ext.end()) e = ext.insert(ext.end(), v);
        program.push_back(e - ext.begin());
      }
      program.push_back(static_cast<int64_t>(n.attrs.size()));
      program.push_back(static_cast<int64_t>(g.value(n.outputs[0]).meta.dtype));
      attrs.insert(attrs.end(), n.attrs.begin(), n.attrs.end());
    }
    attrs[0] = AttrValue(names);
    attrs[1] = AttrValue(program);
    for (size_t p : members) {
      taken[p] = true;
      if (p != ri) nodes[p].dead = true;
    }
    nodes[ri].op = fused;
    nodes[ri].inputs = std::move(ext);
    nodes[ri].attrs = std::move(attrs);
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

bool fuse_conv_blocks(ir::Graph& g) {
  const OpDef* fused = find_op("_fused_conv2d");
  if (!fused) return false;
  bool changed = false;
  auto& nodes = g.mutable_nodes();
  for (size_t ci = 0; ci < nodes.size(); ++ci) {
    if (nodes[ci].dead || nodes[ci].op->name != "conv2d") continue;
    const std::vector<int> uses = g.use_counts();
    const ir::Node& conv = nodes[ci];
    const ir::Value& cv = g.value(conv.outputs[0]);
    // float32, or bfloat16 (autocast programs: the fused kernels select bfloat16 values and
    // store them as the unfused bfloat16 relu and pooling do, so the result is the same).
    if ((cv.meta.dtype != kFloat32 && cv.meta.dtype != kBFloat16) || cv.meta.sizes.size() != 4 ||
        g.value(conv.inputs[0]).meta.sizes.size() != 4)
      continue;
    const int ri = sole_reader(g, uses, conv.outputs[0]);
    if (ri < 0 || nodes[static_cast<size_t>(ri)].op->name != "relu") continue;
    const ir::Node& relu = nodes[static_cast<size_t>(ri)];
    if (uses[static_cast<size_t>(relu.outputs[0])] > 1) {  // read by the backward too
      if (conv.attrs.size() == 4 && fuse_training_block(g, ci, static_cast<size_t>(ri))) changed = true;
      continue;
    }
    // relu's result: pooled by a plain max_pool2d (no padding, dilation or ceil_mode)?
    std::vector<int64_t> kernel, stride;
    int pi = sole_reader(g, uses, relu.outputs[0]);
    if (pi >= 0) {
      const ir::Node& pool = nodes[static_cast<size_t>(pi)];
      const bool plain = pool.op->name == "max_pool2d" && pool.attrs.size() >= 5 && ints_are(pool.attrs[2], 0) &&
                         ints_are(pool.attrs[3], 1) && pool.attrs[4] == AttrValue(false);
      if (plain) {
        kernel = pair_of(pool.attrs[0]);
        const auto& s = std::get<std::vector<int64_t>>(pool.attrs[1]);
        stride = s.empty() ? kernel : pair_of(pool.attrs[1]);
      } else {
        pi = -1;
      }
    }
    // Without the pool the fused kernel is slower than the two ops (measured on the
    // reference CNN's training step: 2.98 ms against 1.27 + 0.27 ms for the first block,
    // where the ReLU result is saved for the backward and so cannot be pooled in place).
    if (pi < 0) continue;
    // The fused node takes the place (and the output value) of the chain's last node, so
    // the convolution moves there: not past a node that writes one of its inputs (an
    // in-place op on the conv's input between conv and relu; found by the randomized test).
    const size_t li = static_cast<size_t>(pi >= 0 ? pi : ri);
    if (written_between(g, ci, li, conv.inputs)) continue;
    ir::Node& last = nodes[li];
    if (conv.attrs.size() != 4) continue;
    std::vector<AttrValue> attrs{conv.attrs[0], conv.attrs[1], conv.attrs[2], conv.attrs[3],
                                 AttrValue(true),  AttrValue(kernel), AttrValue(stride), AttrValue(false)};
    std::vector<int> inputs = conv.inputs;
    nodes[ci].dead = true;
    if (pi >= 0) nodes[static_cast<size_t>(ri)].dead = true;
    last.op = fused;
    last.inputs = std::move(inputs);
    last.attrs = std::move(attrs);
    changed = true;
  }
  if (changed) g.compact();
  // A fused block whose result only another convolution reads writes it channels last:
  // the epilogue then stores whole channel blocks (not one scalar per channel plane), and
  // the next convolution reorders its input slice by slice while it is in cache.
  // The training block's pooled output qualifies too when, besides the next convolution,
  // only that convolution's backward reads it (oneDNN reorders it from either layout):
  // the convolution then takes it without a reorder where its kernel wants channels last
  // (oneDNN's bfloat16 brgconv), and the epilogue stores channel blocks.
  const OpDef* with_indices = find_op("_fused_conv2d_with_indices");
  // The convolution reading `out` as its input when nothing stands in the way of writing
  // `out` channels last: no graph output or view on its storage, and no other reader but
  // (training) that convolution's backward; else -1.
  auto channels_last_reader = [&](int out, bool training) {
    const int root = g.storage_root(out);
    for (int o : g.outputs())
      if (g.storage_root(o) == root) return -1;
    int conv = -1;
    for (const auto& r : g.nodes()) {
      if (r.dead) continue;
      for (size_t k = 0; k < r.inputs.size(); ++k) {
        const int i = r.inputs[k];
        if (i < 0 || g.storage_root(i) != root) continue;
        const bool is_conv = r.op == fused || r.op == with_indices || r.op->name == "conv2d";
        if (i == out && k == 0 && is_conv && conv < 0) conv = r.id;
        else if (i != out || !training || k != 1 || r.op->name != "convolution_backward") return -1;
      }
    }
    return conv;
  };
  for (auto& n : g.mutable_nodes()) {
    if (n.dead || (n.op != fused && n.op != with_indices) || n.attrs.size() != 8 || n.attrs[7] == AttrValue(true))
      continue;
    const int out = n.outputs[0];
    if (channels_last_reader(out, n.op == with_indices) < 0) continue;
    n.attrs[7] = AttrValue(true);
    auto& m = g.mutable_value(out).meta;
    m.strides = {m.sizes[1] * m.sizes[2] * m.sizes[3], 1, m.sizes[3] * m.sizes[1], m.sizes[1]};
    changed = true;
  }
  return changed;
}

namespace {
// Whether a live node after position k reads storage `root`, or a graph output is on it.
bool read_after(const ir::Graph& g, size_t k, int root) {
  for (int o : g.outputs())
    if (g.storage_root(o) == root) return true;
  const auto& nodes = g.nodes();
  for (size_t j = k + 1; j < nodes.size(); ++j) {
    if (nodes[j].dead) continue;
    for (int i : nodes[j].inputs)
      if (i >= 0 && g.storage_root(i) == root) return true;
  }
  return false;
}

}  // namespace

bool fuse_mm_casts(ir::Graph& g) {
  const OpDef* fused = find_op("_fused_mm_to_copy");
  if (!fused) return false;
  bool changed = false;
  auto& nodes = g.mutable_nodes();
  for (size_t mi = 0; mi < nodes.size(); ++mi) {
    if (nodes[mi].dead || nodes[mi].op->name != "mm") continue;
    const int product = nodes[mi].outputs[0];
    const DType dt = g.value(product).meta.dtype;
    if (dt != kBFloat16 && dt != kFloat16) continue;
    const int ci = sole_reader(g, g.use_counts(), product);
    if (ci < 0) continue;
    ir::Node& cast = nodes[static_cast<size_t>(ci)];
    if (cast.op->name != "_to_copy" || cast.attrs.size() != 1 || cast.attrs[0] != AttrValue(kFloat32)) continue;
    // The product moves to the cast's place: not past a write to its operands.
    if (written_between(g, mi, static_cast<size_t>(ci), nodes[mi].inputs)) continue;
    // A right operand that is the autocast copy of a tensor alive here anyway (the
    // model's input: its bfloat16 copy is otherwise kept from the forward to the last
    // weight gradient) and that nothing reads after the product: the fused node makes the
    // copy again from that tensor, in the result's back half (cast_mat2).
    std::vector<int> operands = nodes[mi].inputs;
    bool cast_mat2 = false;
    {
      const ir::Value& v = g.value(operands[1]);
      const ir::Node* p = v.kind == ir::ValueKind::Node ? &nodes[static_cast<size_t>(v.producer)] : nullptr;
      if (p && !p->dead && p->op->name == "_to_copy" && p->attrs.size() == 1 && p->attrs[0] == AttrValue(dt) &&
          p->outputs[0] == v.id && g.storage_root(v.id) == v.id && !read_after(g, mi, v.id)) {
        const int src = p->inputs[0];
        const int root = g.storage_root(src);
        const bool alive = g.value(root).kind != ir::ValueKind::Node || read_after(g, static_cast<size_t>(ci), root);
        if (alive && !written_between(g, static_cast<size_t>(p->id), static_cast<size_t>(ci), {src})) {
          operands[1] = src;
          cast_mat2 = true;
        }
      }
    }
    // Unfused, the narrow product (P bytes) lives beside the float32 copy (2P); fused,
    // the operands that would have died at the product live beside the result (2P) until
    // the product is made (its scratchpad goes into the result's back half). So fuse only
    // when those operands take fewer bytes than the product: the mlp's first-layer weight
    // gradient (a [B, 784] input against a [256, 784] product), not the cnn's fc1 at
    // batch 256 (a [256, 3136] input against [128, 3136]).
    int64_t dying = 0;
    std::vector<int> seen;
    for (int i : operands) {
      const int root = g.storage_root(i);
      if (g.value(root).kind != ir::ValueKind::Node || std::find(seen.begin(), seen.end(), root) != seen.end() ||
          read_after(g, static_cast<size_t>(ci), root))
        continue;
      seen.push_back(root);
      dying += span_bytes(g.value(root).meta);
    }
    if (dying >= span_bytes(g.value(product).meta)) continue;
    if (cast_mat2 && g.use_counts()[static_cast<size_t>(nodes[mi].inputs[1])] == 1)
      nodes[static_cast<size_t>(g.value(nodes[mi].inputs[1]).producer)].dead = true;  // the copy had no other use
    cast.op = fused;
    cast.inputs = std::move(operands);
    cast.attrs = {AttrValue(kFloat32), AttrValue(cast_mat2)};
    nodes[mi].dead = true;
    changed = true;
  }
  if (changed) g.compact();
  return changed;
}

}  // namespace tandem::passes
