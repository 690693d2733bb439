#include "tandem/dispatch/autocast.h"

#include <unordered_map>
#include <utility>

#include "tandem/core/grad_mode.h"

namespace tandem {
namespace {

struct CacheEntry {
  Tensor source;         // keeps the key's TensorImpl alive (no address reuse while cached)
  Tensor cast;
  DType dtype;
  uint64_t version;      // the source's version when cast: an in-place update recasts
  bool with_grad;        // grad mode when cast: a cast made under no_grad has no history
};
using Cache = std::unordered_map<const TensorImpl*, CacheEntry>;

struct State {
  bool enabled = false;
  DType dtype = DType::BFloat16;
  bool cache_enabled = true;
  int nesting = 0;       // live AutocastGuards (enabled or not): the cache dies with the last
  Cache cache;
};
thread_local State t_state;

bool eligible(const Tensor& t) {
  if (!t.defined() || t.impl()->is_wrapped_number()) return false;
  const DType d = t.dtype();
  return d == DType::Float32 || d == DType::BFloat16 || d == DType::Float16;
}

Tensor cached_cast(const Tensor& t, DType to) {
  State& s = t_state;
  const bool cacheable = s.cache_enabled && to == s.dtype && t.dtype() == DType::Float32 && t.requires_grad() &&
                         t.is_leaf();
  if (!cacheable) return t.to(to);
  const bool grad = is_grad_enabled();
  const uint64_t version = t._version();
  auto it = s.cache.find(t.impl());
  if (it != s.cache.end() && it->second.dtype == to && it->second.version == version && it->second.with_grad == grad)
    return it->second.cast;
  Tensor c = t.to(to);
  s.cache[t.impl()] = CacheEntry{t, c, to, version, grad};
  return c;
}

}  // namespace

AutocastGuard::AutocastGuard(DType dtype, bool enabled, bool cache_enabled)
    : prev_enabled_(t_state.enabled), prev_dtype_(t_state.dtype), prev_cache_(t_state.cache_enabled) {
  TANDEM_CHECK(is_reduced_float(dtype), ValueError, "autocast", "got dtype ", dtype_name(dtype),
               ", expected bfloat16 or float16 (the lower-precision dtype ops on the autocast lists run in)");
  t_state.enabled = enabled;
  t_state.dtype = dtype;
  t_state.cache_enabled = cache_enabled;
  ++t_state.nesting;
}

AutocastGuard::~AutocastGuard() {
  if (--t_state.nesting == 0) t_state.cache.clear();
  t_state.enabled = prev_enabled_;
  t_state.dtype = prev_dtype_;
  t_state.cache_enabled = prev_cache_;
}

bool is_autocast_enabled() { return t_state.enabled; }
DType autocast_dtype() { return t_state.dtype; }
void clear_autocast_cache() { t_state.cache.clear(); }

namespace autocast {

int64_t cache_size() { return static_cast<int64_t>(t_state.cache.size()); }

uint64_t state_key() { return t_state.enabled ? 1 + static_cast<uint64_t>(t_state.dtype) : 0; }

const char* state_name(uint64_t key) {
  if (key == 0) return "off";
  return static_cast<DType>(key - 1) == DType::Float16 ? "float16" : "bfloat16";
}

SuspendGuard::SuspendGuard() : prev_(t_state.enabled) { t_state.enabled = false; }
SuspendGuard::~SuspendGuard() { t_state.enabled = prev_; }

CacheScope::CacheScope() : saved_(new Cache(std::move(t_state.cache))) { t_state.cache.clear(); }
CacheScope::~CacheScope() {
  Cache* saved = static_cast<Cache*>(saved_);
  t_state.cache = std::move(*saved);
  delete saved;
}

ArrayRef<Tensor> cast_inputs(const OpDef& op, ArrayRef<Tensor> inputs, SmallVec<Tensor, 4>& storage) {
  const State& s = t_state;
  if (!s.enabled || op.autocast == Autocast::None) return inputs;
  const uint32_t written = op.mutates_inputs;  // written inputs keep their dtype (any attr value)
  auto castable = [&](size_t i) { return (i >= 32 || !(written >> i & 1u)) && eligible(inputs[i]); };
  DType target = s.dtype;
  switch (op.autocast) {
    case Autocast::LowerPrecision: target = s.dtype; break;
    case Autocast::Float32: target = DType::Float32; break;
    case Autocast::Promote:
      // PyTorch's prioritize: the autocast dtype unless some input is float32 (or of the
      // other reduced dtype), then float32.
      for (size_t i = 0; i < inputs.size(); ++i)
        if (castable(i) && inputs[i].dtype() != s.dtype) target = DType::Float32;
      break;
    case Autocast::None: return inputs;
  }
  bool any = false;
  for (size_t i = 0; i < inputs.size() && !any; ++i) any = castable(i) && inputs[i].dtype() != target;
  if (!any) return inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (castable(i) && inputs[i].dtype() != target) storage.push_back(cached_cast(inputs[i], target));
    else storage.push_back(inputs[i]);
  }
  return storage.ref();
}

}  // namespace autocast
}  // namespace tandem
