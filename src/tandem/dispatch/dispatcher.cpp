#include "tandem/dispatch/dispatcher.h"

#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "tandem/core/grad_mode.h"
#include "tandem/core/mem_overlap.h"
#include "tandem/dispatch/autocast.h"
#include "tandem/kernels/cpu/loops.h"

namespace tandem {

// ---------------------------------------------------------------- registry
namespace {
struct Registry {
  std::mutex mu;
  std::deque<OpDef> ops;  // deque: stable addresses
  std::unordered_map<std::string, OpDef*> by_name;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked on purpose: used during static destruction
  return *r;
}
}  // namespace

const OpDef& register_op(OpDef def) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  TANDEM_CHECK(!r.by_name.count(def.name), ValueError, "register_op", "op '", def.name, "' is already registered");
  TANDEM_INTERNAL_ASSERT(def.composite || def.meta || def.view, "op ", def.name, " needs meta, view or composite");
  for (size_t i = 0; i < def.inputs.size() && i < 32; ++i)
    TANDEM_INTERNAL_ASSERT(!(def.mutates_inputs >> i & 1u) || !def.inputs[i].promote, "op ", def.name,
                           " writes input ", i, " in place, so that input must not be promoted (a cast copy would be written)");
  def.id = static_cast<int>(r.ops.size());
  bool want_inplace = def.inplace_variant;
  r.ops.push_back(std::move(def));
  OpDef* f = &r.ops.back();
  r.by_name[f->name] = f;
  if (want_inplace) {
    OpDef v = *f;
    v.name = f->name + "_";
    v.id = static_cast<int>(r.ops.size());
    v.inplace_variant = false;
    v.is_inplace = true;
    v.autocast = Autocast::None;  // PyTorch's autocast lists name no in-place ops: self keeps its dtype
    v.functional = f;
    v.cacheable_meta = f->cacheable_meta;
    r.ops.push_back(std::move(v));
    OpDef* ip = &r.ops.back();
    r.by_name[ip->name] = ip;
    f->inplace = ip;
  }
  return *f;
}

const OpDef* find_op(const std::string& name) {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.by_name.find(name);
  return it == r.by_name.end() ? nullptr : it->second;
}

const OpDef& get_op(const std::string& name) {
  const OpDef* d = find_op(name);
  TANDEM_CHECK(d != nullptr, ValueError, "get_op", "no op named '", name, "' is registered");
  return *d;
}

std::vector<const OpDef*> all_ops() {
  auto& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<const OpDef*> out;
  for (auto& d : r.ops) out.push_back(&d);
  return out;
}

// ---------------------------------------------------------------- promotion
int64_t span_bytes(const TensorMeta& m) {
  int64_t e = 1;
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    if (m.sizes[d] == 0) return 0;
    e += (m.sizes[d] - 1) * (m.strides.empty() ? 0 : m.strides[d]);
  }
  if (m.strides.empty()) e = multiply_integers(m.sizes);
  return e * static_cast<int64_t>(element_size(m.dtype));
}

MetaRef MetaRef::of(const Tensor& t) {
  MetaRef m;
  if (!t.defined()) {
    m.defined = false;
    return m;
  }
  m.dtype = t.dtype();
  m.sizes = t.sizes();
  m.strides = t.strides();
  m.device = t.device();
  m.is_wrapped_number = t.impl()->is_wrapped_number();
  m.storage_offset = t.storage_offset();
  // Element sizes are powers of two: a shift, not a division, per input of every call.
  m.storage_numel = static_cast<int64_t>(t.storage()->nbytes() >> __builtin_ctzll(t.element_size()));
  m.storage_known = true;
  return m;
}

namespace {
// PyTorch's combine_categories: the higher-priority group wins unless the lower one is
// of a higher category (bool < integer < floating), in which case they promote.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_floating_point(*higher)) return higher;
  if (*higher == DType::Bool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return higher;
}
void update(std::optional<DType>& acc, DType t) { acc = acc ? promote_types(*acc, t) : t; }
}  // namespace

DType result_type(ArrayRef<MetaRef> metas) {
  std::optional<DType> dim_r, zero_r, wrapped_r;
  for (const MetaRef& m : metas) {
    if (!m.defined) continue;
    if (m.is_wrapped_number) {
      DType t = m.dtype;
      if (is_floating_point(t)) t = default_float_dtype();
      update(wrapped_r, t);
    } else if (m.dim() == 0) {
      update(zero_r, m.dtype);
    } else {
      update(dim_r, m.dtype);
    }
  }
  auto r = combine(dim_r, combine(zero_r, wrapped_r));
  return r.value_or(default_float_dtype());
}

Tensor wrap_scalar(const Scalar& s) {
  DType d = s.is_bool() ? DType::Bool : s.is_integral() ? DType::Int64 : DType::Float64;
  DispatchDepthGuard internal;  // writing a new tensor is not a user data read
  Tensor t = empty_tensor({}, d);
  kernels::fill_kernel(t, s);
  t.impl()->set_wrapped_number(true);
  return t;
}

// ---------------------------------------------------------------- observers, slots
namespace {
thread_local SmallVec<DispatchObserver*, 2> t_observers;
thread_local int t_depth = 0;
AutogradRecorder g_recorder = nullptr;
InplaceChecker g_inplace_checker = nullptr;
ViewTracker g_view_tracker = nullptr;
}  // namespace

ObserverGuard::ObserverGuard(DispatchObserver* obs) : obs_(obs) { t_observers.push_back(obs); }
ObserverGuard::~ObserverGuard() {
  // Guards nest, so ours is normally last; search anyway to stay correct.
  for (size_t i = t_observers.size(); i-- > 0;) {
    if (t_observers[i] == obs_) {
      for (size_t j = i; j + 1 < t_observers.size(); ++j) t_observers[j] = t_observers[j + 1];
      t_observers.pop_back();
      break;
    }
  }
}
void set_autograd_recorder(AutogradRecorder r) { g_recorder = r; }
void set_inplace_checker(InplaceChecker c) { g_inplace_checker = c; }
void set_view_tracker(ViewTracker t) { g_view_tracker = t; }

// ---------------------------------------------------------------- meta cache
namespace {
struct MetaCacheEntry {
  SmallVec<int64_t, 24> key;
  SmallVec<TensorMeta, 2> outputs;
};
struct MetaCache {
  bool enabled = true;
  std::unordered_map<uint64_t, MetaCacheEntry> map;
  MetaCacheStats stats;
};
thread_local MetaCache t_meta_cache;
bool g_meta_cache_enabled = true;
constexpr size_t kMetaCacheMax = 8192;

// The key of one call, built in a local buffer: a plain array write per value (a SmallVec
// push_back per value rereads its size through memory, since int64 stores may alias it).
struct MetaKey {
  static constexpr size_t kInline = 48;
  int64_t inline_buf[kInline];
  std::vector<int64_t> heap;  // keys longer than kInline (many inputs or dims)
  const int64_t* data = inline_buf;
  size_t size = 0;
  uint64_t hash = 0;
};

// The key words of one attribute: its exact value, not a hash (two size lists whose
// hashes collide, e.g. [4, 2] and [2, 128] under hash_attr, must not share a meta: the
// second call would allocate the first one's output). Strings go in as their bytes.
size_t attr_key_words(const AttrValue& a) {
  if (const auto* v = std::get_if<std::vector<int64_t>>(&a)) return 2 + v->size();
  if (const auto* str = std::get_if<std::string>(&a)) return 2 + (str->size() + 7) / 8;
  if (std::holds_alternative<Scalar>(a)) return 3;
  return 2;
}
int64_t* put_attr_key(int64_t* p, const AttrValue& a) {
  *p++ = static_cast<int64_t>(a.index());
  if (const auto* v = std::get_if<std::vector<int64_t>>(&a)) {
    *p++ = static_cast<int64_t>(v->size());
    for (int64_t e : *v) *p++ = e;
  } else if (const auto* str = std::get_if<std::string>(&a)) {
    *p++ = static_cast<int64_t>(str->size());
    const size_t words = (str->size() + 7) / 8;
    if (words > 0) {
      p[words - 1] = 0;  // the last word's unused bytes
      std::memcpy(p, str->data(), str->size());
      p += words;
    }
  } else if (const auto* b = std::get_if<bool>(&a)) {
    *p++ = *b;
  } else if (const auto* i = std::get_if<int64_t>(&a)) {
    *p++ = *i;
  } else if (const auto* d = std::get_if<double>(&a)) {
    std::memcpy(p++, d, 8);
  } else if (const auto* dt = std::get_if<DType>(&a)) {
    *p++ = static_cast<int64_t>(*dt);
  } else if (const auto* sc = std::get_if<Scalar>(&a)) {
    *p++ = static_cast<int64_t>(sc->kind());
    if (sc->is_bool() || sc->is_integral()) {  // exact beyond 2^53
      *p++ = sc->to_int();
    } else {
      const double d = sc->to_double();
      std::memcpy(p++, &d, 8);
    }
  } else {  // monostate: the index says it all
    *p++ = 0;
  }
  return p;
}

void build_key(MetaKey& key, const OpDef& op, ArrayRef<MetaRef> in, ArrayRef<AttrValue> attrs, DType common) {
  size_t n = 2;
  for (const AttrValue& a : attrs) n += attr_key_words(a);
  for (const MetaRef& m : in) n += m.defined ? 2 + m.sizes.size() : 1;
  int64_t* p = key.inline_buf;
  if (n > MetaKey::kInline) {
    key.heap.resize(n);
    p = key.heap.data();
  }
  int64_t* const begin = p;
  *p++ = op.id;
  *p++ = static_cast<int64_t>(common);
  for (const MetaRef& m : in) {
    if (!m.defined) {
      *p++ = -1;
      continue;
    }
    *p++ = (static_cast<int64_t>(m.dtype) << 8) | (m.is_wrapped_number ? 2 : 0) |
           (compute_is_contiguous(m.sizes, m.strides) ? 1 : 0);
    *p++ = m.dim();
    for (int64_t s : m.sizes) *p++ = s;
  }
  for (const AttrValue& a : attrs) p = put_attr_key(p, a);
  key.data = begin;
  key.size = static_cast<size_t>(p - begin);
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < key.size; ++i) h = (h ^ static_cast<uint64_t>(begin[i])) * 1099511628211ULL;
  key.hash = h;
}
bool same_key(const SmallVec<int64_t, 24>& stored, const MetaKey& key) {
  return stored.size() == key.size && std::memcmp(stored.data(), key.data, key.size * sizeof(int64_t)) == 0;
}
}  // namespace

MetaCacheStats meta_cache_stats() {
  auto s = t_meta_cache.stats;
  s.entries = static_cast<int64_t>(t_meta_cache.map.size());
  return s;
}
void clear_meta_cache() {
  t_meta_cache.map.clear();
  t_meta_cache.stats = {};
}
void set_meta_cache_enabled(bool enabled) { g_meta_cache_enabled = enabled; }

// ---------------------------------------------------------------- dispatch
namespace {

// The op name errors carry: an in-place variant reports the functional op the user's
// eager call names (`[div]`, not `[div_]`), so that compiled mode, which may run the
// functional op followed by copy_, raises the same message.
const char* error_name(const OpDef& op) { return op.functional ? op.functional->name.c_str() : op.name.c_str(); }

DType compute_dtype(const OpDef& op, ArrayRef<MetaRef> metas) {
  if (op.promotion == Promotion::None) return metas.empty() ? default_float_dtype() : metas[0].dtype;
  SmallVec<MetaRef, 4> prom;
  for (size_t i = 0; i < metas.size(); ++i) {
    size_t spec = std::min(i, op.inputs.size() - 1);
    if (op.inputs[spec].promote) prom.push_back(metas[i]);
  }
  DType t = result_type(prom.ref());
  if (op.promotion == Promotion::IntToFloat && !is_floating_point(t)) t = default_float_dtype();
  return t;
}

// Casts the op's promotable inputs to `common` into `storage`. Returns what the kernel
// sees: `inputs` itself when nothing needs a cast (the common case copies nothing).
ArrayRef<Tensor> promote_inputs(const OpDef& op, ArrayRef<Tensor> inputs, DType common, SmallVec<Tensor, 4>& storage) {
  if (op.promotion == Promotion::None) return inputs;
  auto needs_cast = [&](size_t i) {
    const InputSpec& spec = op.inputs[std::min(i, op.inputs.size() - 1)];
    return spec.promote && inputs[i].defined() && inputs[i].dtype() != common;
  };
  bool any = false;
  for (size_t i = 0; i < inputs.size() && !any; ++i) any = needs_cast(i);
  if (!any) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (needs_cast(i)) {
      Tensor c = empty_tensor(inputs[i].sizes(), common);
      kernels::copy_kernel(c, inputs[i]);
      storage.push_back(std::move(c));
    } else {
      storage.push_back(inputs[i]);
    }
  }
  return storage.ref();
}

void run_meta(const OpDef& op, ArrayRef<MetaRef> metas, ArrayRef<AttrValue> attrs, DType common,
              SmallVec<TensorMeta, 2>& out) {
  MetaContext ctx{error_name(op), metas, AttrReader(error_name(op), attrs), common, {}};
  op.meta(ctx);
  out = std::move(ctx.outputs);
}

// Returns the output metas: the cache's own entry on a hit (no copy), else `scratch`
// filled by the meta function. The reference is valid until the next dispatch.
const SmallVec<TensorMeta, 2>& cached_meta(const OpDef& op, ArrayRef<MetaRef> metas, ArrayRef<AttrValue> attrs,
                                           DType common, SmallVec<TensorMeta, 2>& scratch) {
  if (!g_meta_cache_enabled || !op.cacheable_meta) {
    run_meta(op, metas, attrs, common, scratch);
    return scratch;
  }
  auto& cache = t_meta_cache;
  MetaKey key;
  build_key(key, op, metas, attrs, common);
  const uint64_t h = key.hash;
  auto it = cache.map.find(h);
  if (it != cache.map.end() && same_key(it->second.key, key)) {
    ++cache.stats.hits;
    return it->second.outputs;
  }
  ++cache.stats.misses;
  run_meta(op, metas, attrs, common, scratch);
  if (cache.map.size() >= kMetaCacheMax) cache.map.clear();
  MetaCacheEntry entry;
  for (size_t i = 0; i < key.size; ++i) entry.key.push_back(key.data[i]);
  entry.outputs = scratch;
  cache.map[h] = std::move(entry);
  return scratch;
}

Tensor allocate(const TensorMeta& m) {
  if (m.strides.empty()) return empty_tensor(m.sizes, m.dtype);
  return empty_strided_tensor(m.sizes, m.strides, m.dtype);
}

// Inputs an op wrote in place (OpDef::mutates_inputs) get a new version, as self does for
// an in-place op, so autograd notices a saved tensor that changed.
void bump_mutated_inputs(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs) {
  if (op.mutates_inputs == 0 || is_inference_mode()) [[likely]]
    return;
  const uint32_t m = mutated_inputs(op, attrs);
  for (size_t i = 0; i < inputs.size() && i < 32; ++i)
    if ((m >> i & 1u) && inputs[i].defined()) inputs[i].bump_version();
}

// Rejects writes whose result would depend on the order of the kernel's writes: a
// written tensor (an in-place variant's self, OpDef::mutates_inputs) that overlaps itself,
// another written tensor, or an input other than as its InputSpec::overlap allows. Runs
// before the kernel, so nothing has been written when it raises. `name` is the op name
// errors use (the functional op's for an in-place variant).
void check_write_overlap(const OpDef& op, const char* name, ArrayRef<Tensor> inputs, uint32_t written) {
  const char* variant = op.name.c_str();
  auto geometry = [](const Tensor& t) {
    return str_cat("sizes ", t.sizes(), ", strides ", t.strides(), ", storage offset ", t.storage_offset(), ", ",
                   dtype_name(t.dtype()));
  };
  auto spec_of = [&](size_t j) -> const InputSpec& { return op.inputs[std::min(j, op.inputs.size() - 1)]; };
  for (size_t i = 0; i < inputs.size() && i < 32; ++i) {
    if (!(written >> i & 1u) || !inputs[i].defined()) continue;
    const Tensor& w = inputs[i];
    TANDEM_CHECK(!has_internal_overlap(w), ValueError, name,
                 "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                 "location (", variant, " writes '", spec_of(i).name, "': ", geometry(w), "). Please clone() the tensor "
                 "before performing the operation.");
    for (size_t j = 0; j < inputs.size(); ++j) {
      const Tensor& r = inputs[j];
      if (j == i || !r.defined() || r.storage().get() != w.storage().get()) [[likely]]
        continue;
      const InputOverlap allowed = (j < 32 && (written >> j & 1u)) ? InputOverlap::None : spec_of(j).overlap;
      if (allowed == InputOverlap::Any) continue;
      const MemOverlapStatus st = get_overlap_status(w, r);
      if (st == MemOverlapStatus::No || (st == MemOverlapStatus::Full && allowed == InputOverlap::Same)) continue;
      throw ValueError(str_cat(
          "[", name, "] unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
          "single memory location (", variant, " writes '", spec_of(i).name, "': ", geometry(w), "; reads '",
          spec_of(j).name, "': ", geometry(r),
          st == MemOverlapStatus::Full ? "; the same elements, which this op cannot read while it writes them" : "",
          "). Please clone() the tensor before performing the operation."));
    }
  }
}

struct DepthGuard {
  DepthGuard() { ++t_depth; }
  ~DepthGuard() { --t_depth; }
};

void check_arity(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs) {
  if (op.variadic) {
    TANDEM_CHECK(inputs.size() + 1 >= op.inputs.size(), ValueError, error_name(op), "got ", inputs.size(),
                 " tensor inputs, expected at least ", op.inputs.size() - 1);
  } else {
    TANDEM_CHECK(inputs.size() == op.inputs.size(), ValueError, error_name(op), "got ", inputs.size(),
                 " tensor inputs, expected ", op.inputs.size());
  }
  TANDEM_CHECK(attrs.size() <= op.attrs.size(), ValueError, error_name(op), "got ", attrs.size(),
               " attributes, expected at most ", op.attrs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = op.inputs[std::min(i, op.inputs.size() - 1)];
    TANDEM_CHECK(spec.optional || inputs[i].defined(), ValueError, error_name(op), "input '", spec.name,
                 "' is an undefined tensor, expected a defined tensor");
  }
}

bool needs_grad(const OpDef& op, ArrayRef<Tensor> inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& spec = op.inputs[std::min(i, op.inputs.size() - 1)];
    if (spec.differentiable && inputs[i].defined() && inputs[i].requires_grad()) return true;
  }
  return false;
}

OpOutputs dispatch_impl(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs) {
  const char* name = error_name(op);
  if (op.composite) {
    DepthGuard g;
    auto outs = op.composite(inputs, AttrReader(name, attrs));
    OpOutputs r;
    for (auto& t : outs) r.push_back(std::move(t));
    return r;
  }
  // Promote: cast promotable inputs to the compute dtype.
  SmallVec<MetaRef, 4> metas;
  for (const Tensor& t : inputs) metas.push_back(MetaRef::of(t));
  const DType common = compute_dtype(op, metas.ref());
  SmallVec<Tensor, 4> cast_inputs;
  ArrayRef<Tensor> run_inputs = promote_inputs(op, inputs, common, cast_inputs);
  if (run_inputs.data() != inputs.data())
    for (size_t i = 0; i < run_inputs.size(); ++i) metas[i] = MetaRef::of(run_inputs[i]);

  OpOutputs outputs;
  if (op.view) {
    ViewGeometry g = op.view(metas[0], AttrReader(name, attrs));
    int64_t off = g.absolute_offset ? g.storage_offset : run_inputs[0].storage_offset() + g.storage_offset;
    outputs.push_back(make_alias(run_inputs[0], std::move(g.sizes), std::move(g.strides), off));
    if (g_view_tracker && is_grad_enabled() && (op.output_differentiable.empty() || op.output_differentiable[0]))
      g_view_tracker(outputs[0], run_inputs[0]);
    return outputs;
  }

  SmallVec<TensorMeta, 2> meta_scratch;
  const SmallVec<TensorMeta, 2>* out_metas_p = &meta_scratch;
  if (!op.dynamic_shape) {
    out_metas_p = &cached_meta(op, metas.ref(), attrs, common, meta_scratch);
  } else {
    // Dynamic-shape ops validate in meta too (their data-dependent sizes are -1 there);
    // the kernel allocates and pushes the outputs.
    run_meta(op, metas.ref(), attrs, common, meta_scratch);
    meta_scratch.clear();
  }
  // Read only before the kernel runs: a nested dispatch may change the cache.
  const SmallVec<TensorMeta, 2>& out_metas = *out_metas_p;

  // The one place in-place writes are checked: self of an in-place variant and the inputs
  // an op mutates (OpDef::mutates_inputs) must not overlap what the kernel reads.
  const uint32_t written = (op.is_inplace ? 1u : 0u) | mutated_inputs(op, attrs);
  if (written != 0) [[unlikely]]
    check_write_overlap(op, name, inputs, written);

  if (op.is_inplace) {
    const Tensor& self = inputs[0];
    const TensorMeta& m = out_metas[0];
    TANDEM_CHECK(IntArrayRef(m.sizes).equals(self.sizes()), ShapeError, name, "output with shape ",
                 self.sizes(), " doesn't match the broadcast shape ", m.sizes, " (in-place ", op.name, ")");
    TANDEM_CHECK(can_cast(m.dtype, self.dtype()), TypeError, name, "result type ", dtype_name(m.dtype),
                 " can't be cast to the desired output type ", dtype_name(self.dtype()), " (in-place ", op.name, ")");
    // The checker may dispatch (clone), which may change the meta cache holding m.
    const bool same_dtype = m.dtype == self.dtype();
    std::optional<TensorMeta> wider;
    if (!same_dtype) wider = m;
    if (g_inplace_checker) g_inplace_checker(op, inputs);
    if (same_dtype) {
      outputs.push_back(self);
      KernelContext kc{name, run_inputs, AttrReader(name, attrs), outputs};
      op.cpu_kernel(kc);
    } else {
      outputs.push_back(allocate(*wider));
      KernelContext kc{name, run_inputs, AttrReader(name, attrs), outputs};
      op.cpu_kernel(kc);
      kernels::copy_kernel(self, outputs[0]);
      outputs[0] = self;
    }
    if (!is_inference_mode()) self.bump_version();
    return outputs;
  }

  for (const TensorMeta& m : out_metas) outputs.push_back(allocate(m));
  KernelContext kc{name, run_inputs, AttrReader(name, attrs), outputs};
  op.cpu_kernel(kc);
  bump_mutated_inputs(op, inputs, attrs);
  return outputs;
}

}  // namespace

OpOutputs dispatch(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs) {
  check_arity(op, inputs, attrs);
  // Fill trailing defaults so every consumer sees the full attribute list.
  Attrs full;
  if (attrs.size() < op.attrs.size()) {
    for (const AttrValue& a : attrs) full.push_back(a);
    for (size_t i = attrs.size(); i < op.attrs.size(); ++i) full.push_back(op.attrs[i].default_value);
    attrs = full.ref();
  }
  // Autocast (dispatch/autocast.h): the op's cast policy, applied here for every op, eager
  // and captured alike. The casts are `_to_copy` calls dispatched (and so recorded) before
  // this op; the op then sees the cast inputs. A listed composite op's body runs with
  // autocast suspended, as PyTorch excludes the autocast key while a listed op runs.
  SmallVec<Tensor, 4> autocast_inputs;
  std::optional<autocast::SuspendGuard> autocast_off;
  if (op.autocast != Autocast::None && is_autocast_enabled()) [[unlikely]] {
    inputs = autocast::cast_inputs(op, inputs, autocast_inputs);
    if (op.composite) autocast_off.emplace();
  }
  const int depth = t_depth;
  if (!t_observers.empty()) [[unlikely]]
    for (DispatchObserver* o : t_observers) o->on_enter(op, inputs, attrs, depth);
  OpOutputs outs;
  {
    DispatchDepthGuard in_dispatch;  // data reads in here are the kernels', not the user's
    outs = dispatch_impl(op, inputs, attrs);
    if (g_recorder && !op.composite && is_grad_enabled() && needs_grad(op, inputs)) g_recorder(op, inputs, attrs, outs);
  }
  if (!t_observers.empty()) [[unlikely]]
    for (DispatchObserver* o : t_observers) o->on_exit(op, inputs, attrs, outs.ref(), depth);
  return outs;
}

Tensor dispatch1(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs) {
  OpOutputs o = dispatch(op, inputs, attrs);
  TANDEM_INTERNAL_ASSERT(o.size() >= 1, "op ", op.name, " returned no output");
  return std::move(o[0]);
}

Tensor apply_view(const OpDef& op, const Tensor& input, ArrayRef<AttrValue> attrs, int64_t absolute_base) {
  ViewGeometry g = op.view(MetaRef::of(input), AttrReader(error_name(op), attrs));
  int64_t off = g.absolute_offset ? absolute_base + g.storage_offset : input.storage_offset() + g.storage_offset;
  return make_alias(input, std::move(g.sizes), std::move(g.strides), off);
}

void run_kernel(const OpDef& op, ArrayRef<Tensor> inputs, ArrayRef<AttrValue> attrs, OpOutputs& outputs,
                DType result_dtype) {
  SmallVec<Tensor, 4> cast_inputs;
  ArrayRef<Tensor> run_inputs = inputs;
  if (op.promotion != Promotion::None) {
    SmallVec<MetaRef, 4> metas;
    for (const Tensor& t : inputs) metas.push_back(MetaRef::of(t));
    run_inputs = promote_inputs(op, inputs, compute_dtype(op, metas.ref()), cast_inputs);
  }
  if (op.is_inplace && result_dtype != inputs[0].dtype()) {
    Tensor self = outputs[0];
    outputs[0] = empty_tensor(self.sizes(), result_dtype);
    KernelContext kc{error_name(op), run_inputs, AttrReader(error_name(op), attrs), outputs};
    op.cpu_kernel(kc);
    kernels::copy_kernel(self, outputs[0]);
    outputs[0] = self;
  } else {
    KernelContext kc{error_name(op), run_inputs, AttrReader(error_name(op), attrs), outputs};
    op.cpu_kernel(kc);
  }
  if (op.is_inplace && !is_inference_mode()) outputs[0].bump_version();
  bump_mutated_inputs(op, inputs, attrs);
}

SmallVec<TensorMeta, 2> infer_meta(const OpDef& op, ArrayRef<MetaRef> inputs, ArrayRef<AttrValue> attrs) {
  Attrs full;
  for (const AttrValue& a : attrs) full.push_back(a);
  for (size_t i = attrs.size(); i < op.attrs.size(); ++i) full.push_back(op.attrs[i].default_value);
  SmallVec<TensorMeta, 2> out;
  DType common = compute_dtype(op, inputs);
  if (op.view) {
    ViewGeometry g = op.view(inputs[0], AttrReader(error_name(op), full.ref()));
    out.push_back(TensorMeta{inputs[0].dtype, std::move(g.sizes), std::move(g.strides)});
    return out;
  }
  TANDEM_CHECK(op.meta != nullptr, NotImplementedError, op.name, "has no meta function (composite or dynamic op)");
  SmallVec<MetaRef, 4> cast;
  for (size_t i = 0; i < inputs.size(); ++i) {
    MetaRef m = inputs[i];
    const InputSpec& spec = op.inputs[std::min(i, op.inputs.size() - 1)];
    if (op.promotion != Promotion::None && spec.promote && m.defined) {
      m.dtype = common;
      m.is_wrapped_number = false;
    }
    cast.push_back(m);
  }
  run_meta(op, cast.ref(), full.ref(), common, out);
  return out;
}

}  // namespace tandem
