// _fused_pointwise: a chain of elementwise ops (OpDef::pointwise) evaluated block by
// block, made by the fuse_pointwise pass. Each block of the output's elements goes through
// every op of the chain while it is in cache: the ops' own kernels run on the block (so
// the values are the unfused ones, bit for bit, by construction: the same code computes
// each element), intermediates live in per-thread block buffers instead of whole tensors,
// and each input is read once and the output written once.
#include <algorithm>
#include <cstring>
#include <sstream>

#include "tandem/kernels/cpu/loops.h"
#include "tandem/ops/op_utils.h"

namespace tandem {

namespace {

/// One op of the chain. Input references: r >= 0 is the fused node's input r, r < 0 the
/// result of op -r - 1 of the chain.
struct Step {
  const OpDef* op = nullptr;
  SmallVec<int64_t, 3> refs;
  size_t attr_begin = 0, attr_count = 0;
  DType dtype = DType::Float32;  ///< its result's dtype
};

/// Decodes attributes (ops: "name,name,...", program: per op [number of inputs, refs...,
/// number of attributes, result dtype], then every op's attributes in order). Raises
/// ValueError for a malformed program (a hand-built node), naming the fused op.
std::vector<Step> decode(const char* op, const AttrReader& a, size_t num_inputs) {
  std::vector<Step> steps;
  std::stringstream names(a.str(0));
  const std::vector<int64_t>& prog = a.ints(1);
  size_t pos = 0, attr = 2;
  std::string name;
  auto need = [&](bool ok, const char* what) {
    TANDEM_CHECK(ok, ValueError, op, "malformed program: ", what, " (got program ", IntArrayRef(prog), ", ops '",
                 a.str(0), "')");
  };
  while (std::getline(names, name, ',')) {
    Step s;
    s.op = find_op(name);
    need(s.op != nullptr && s.op->pointwise && s.op->num_outputs == 1 && s.op->cpu_kernel, "an op that is not elementwise");
    need(pos < prog.size(), "too short");
    const int64_t nin = prog[pos++];
    need(nin >= 0 && pos + static_cast<size_t>(nin) + 2 <= prog.size(), "too short");
    for (int64_t k = 0; k < nin; ++k) {
      const int64_t r = prog[pos++];
      need(r < static_cast<int64_t>(num_inputs) && r >= -static_cast<int64_t>(steps.size()), "a bad input reference");
      s.refs.push_back(r);
    }
    const int64_t na = prog[pos++];
    need(na >= 0 && attr + static_cast<size_t>(na) <= a.size(), "too few attributes");
    s.attr_begin = attr;
    s.attr_count = static_cast<size_t>(na);
    attr += static_cast<size_t>(na);
    const int64_t dt = prog[pos++];
    need(dt >= 0 && dt < static_cast<int64_t>(kNumDTypes), "a bad dtype");
    s.dtype = static_cast<DType>(dt);
    steps.push_back(std::move(s));
  }
  need(!steps.empty() && pos == prog.size() && attr == a.size(), "trailing entries");
  return steps;
}

void fused_meta(MetaContext& c) {
  const std::vector<Step> steps = decode(c.op, c.attrs, c.inputs.size());
  std::vector<TensorMeta> results;
  std::vector<DimVector> strides;  // contiguous strides of each result, kept alive for MetaRef
  results.reserve(steps.size());
  strides.reserve(steps.size());
  for (const Step& s : steps) {
    SmallVec<MetaRef, 3> in;
    for (int64_t r : s.refs) {
      if (r >= 0) {
        in.push_back(c.inputs[static_cast<size_t>(r)]);
        continue;
      }
      const TensorMeta& m = results[static_cast<size_t>(-r - 1)];
      MetaRef ref;
      ref.dtype = m.dtype;
      ref.sizes = m.sizes;
      ref.strides = strides[static_cast<size_t>(-r - 1)];
      in.push_back(ref);
    }
    auto out = infer_meta(*s.op, in.ref(), ArrayRef<AttrValue>(c.attrs.all().data() + s.attr_begin, s.attr_count));
    TANDEM_CHECK(out.size() == 1 && out[0].dtype == s.dtype, ValueError, c.op, "op ", s.op->name, " gives dtype ",
                 out.empty() ? "none" : dtype_name(out[0].dtype), ", the program says ", dtype_name(s.dtype));
    TensorMeta m{out[0].dtype, out[0].sizes, {}};
    strides.push_back(contiguous_strides(m.sizes));
    results.push_back(std::move(m));
  }
  // Every intermediate has the result's shape (the pass fuses no broadcasting of one).
  for (const TensorMeta& m : results)
    TANDEM_CHECK(m.sizes == results.back().sizes, ShapeError, c.op, "an intermediate of size ", IntArrayRef(m.sizes),
                 ", expected the result's ", IntArrayRef(results.back().sizes));
  c.outputs.push_back(TensorMeta{results.back().dtype, results.back().sizes, {}});
}

// Elements per block: 8192 (32 KiB of float32 per buffer) keeps a few buffers in L1/L2.
constexpr int64_t kBlock = 8192;

void fused_kernel(KernelContext& c) {
  const std::vector<Step> steps = decode(c.op, c.attrs, c.inputs.size());
  const Tensor& out = c.outputs[0];
  const int64_t numel = out.numel();
  if (numel == 0) return;
  TANDEM_INTERNAL_ASSERT(out.is_contiguous(), "_fused_pointwise writes a contiguous result");
  // How each input reaches a block: a slice (same shape, contiguous), as is (0-d), or
  // gathered from its broadcast/strided layout into a block buffer.
  enum class Kind { Slice, AsIs, Gather };
  const size_t ni = c.inputs.size();
  std::vector<Kind> kind(ni);
  std::vector<kernels::ElementwiseIter> gather(ni);
  for (size_t i = 0; i < ni; ++i) {
    const Tensor& t = c.inputs[i];
    if (t.dim() == 0) kind[i] = Kind::AsIs;
    else if (t.sizes().equals(out.sizes()) && t.is_contiguous()) kind[i] = Kind::Slice;
    else {
      kind[i] = Kind::Gather;
      Tensor ops[2] = {out, t};
      gather[i] = kernels::ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
    }
  }
  const char* out_base = static_cast<const char*>(out.data_ptr());
  const int64_t out_es = element_size(out.dtype());
  const int64_t nblocks = (numel + kBlock - 1) / kBlock;
  parallel_for(0, nblocks, std::max<int64_t>(1, kGrainSize / kBlock), [&](int64_t b0, int64_t b1) {
    // Block buffers of this thread: one per gathered input and per intermediate.
    std::vector<Tensor> in_buf(ni), step_buf(steps.size());
    for (size_t i = 0; i < ni; ++i)
      if (kind[i] == Kind::Gather) in_buf[i] = empty_tensor({kBlock}, c.inputs[i].dtype());
    for (size_t k = 0; k + 1 < steps.size(); ++k) step_buf[k] = empty_tensor({kBlock}, steps[k].dtype);
    std::vector<Tensor> block_in(ni), results(steps.size());
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t begin = blk * kBlock, len = std::min(kBlock, numel - begin);
      const IntArrayRef sz(&len, 1);
      const int64_t one = 1;
      const IntArrayRef st(&one, 1);
      for (size_t i = 0; i < ni; ++i) {
        const Tensor& t = c.inputs[i];
        switch (kind[i]) {
          case Kind::AsIs: block_in[i] = t; break;
          case Kind::Slice: block_in[i] = make_alias(t, sz, st, t.storage_offset() + begin); break;
          case Kind::Gather: {
            char* dst = static_cast<char*>(in_buf[i].data_ptr());
            const int64_t es = element_size(t.dtype());
            kernels::for_each_range(gather[i], begin, begin + len, [&](char** p, const int64_t* s, int64_t n) {
              char* d = dst + ((p[0] - out_base) / out_es - begin) * es;
              if (s[1] == es) {
                std::memcpy(d, p[1], static_cast<size_t>(n * es));
              } else {
                for (int64_t e = 0; e < n; ++e) std::memcpy(d + e * es, p[1] + e * s[1], static_cast<size_t>(es));
              }
            });
            block_in[i] = make_alias(in_buf[i], sz, st, 0);
            break;
          }
        }
      }
      for (size_t k = 0; k < steps.size(); ++k) {
        const Step& s = steps[k];
        SmallVec<Tensor, 3> in;
        for (int64_t r : s.refs) in.push_back(r >= 0 ? block_in[static_cast<size_t>(r)] : results[static_cast<size_t>(-r - 1)]);
        OpOutputs o;
        o.push_back(k + 1 == steps.size() ? make_alias(out, sz, st, out.storage_offset() + begin)
                                          : make_alias(step_buf[k], sz, st, 0));
        run_kernel(*s.op, in.ref(), ArrayRef<AttrValue>(c.attrs.all().data() + s.attr_begin, s.attr_count), o, s.dtype);
        results[k] = std::move(o[0]);
      }
    }
  });
}

}  // namespace

// _fused_pointwise(inputs...; ops, program, the ops' attributes...) -> result: a chain of
// elementwise ops (OpDef::pointwise) as one node, made by the fuse_pointwise pass from
// nodes whose intermediate results nothing else reads. `ops` names the chain's ops in
// order ("mul,add,relu"); `program` gives, per op, [number of inputs, input references
// (r >= 0: the node's input r; r < 0: the result of op -r - 1), number of attributes,
// result dtype]; each op's attributes follow in order. Every intermediate has the result's
// shape; inputs may broadcast or have any strides. The result is contiguous and bitwise
// the unfused chain's (each op's own kernel computes each element). No backward (the pass
// runs on programs, after differentiation).
TANDEM_REGISTER_OP(_fused_pointwise) {
  OpDef d;
  d.name = "_fused_pointwise";
  d.inputs = {{"inputs", /*promote=*/false}};
  d.variadic = true;
  d.attrs = {{"ops", std::string()}, {"program", std::vector<int64_t>{}}};
  d.meta = fused_meta;
  d.cpu_kernel = fused_kernel;
  // Its sub-ops are pointwise and none is random (fuse_pointwise takes no random op).
  d.cheap_to_recompute = true;
  return d;
}

}  // namespace tandem
