#include "tandem/core/mem_overlap.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tandem {
namespace {

// A tensor's addressed positions as base + sum(i_d * stride_d), 0 <= i_d < size_d, with
// only the dims of size > 1, strides made non-negative (a negative stride walks the same
// positions backwards from a lower base) and sorted ascending (innermost first).
struct Layout {
  int64_t base = 0;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (size, stride)
  int64_t numel = 1;
  int64_t reach = 0;  // largest position minus base
};

Layout layout_of(int64_t base, IntArrayRef sizes, IntArrayRef strides, int64_t scale) {
  Layout l;
  l.base = base * scale;
  for (size_t d = 0; d < sizes.size(); ++d) {
    l.numel *= sizes[d];
    if (sizes[d] <= 1) continue;
    int64_t s = strides[d] * scale;
    if (s < 0) {
      l.base += (sizes[d] - 1) * s;
      s = -s;
    }
    l.dims.emplace_back(sizes[d], s);
    l.reach += (sizes[d] - 1) * s;
  }
  std::sort(l.dims.begin(), l.dims.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  return l;
}

// True when every dim's stride steps past everything the inner dims reach: then no two
// positions coincide (the common case: contiguous, transposed, sliced).
bool sorted_strides_separate(const Layout& l) {
  int64_t reach = 0;
  for (const auto& [size, stride] : l.dims) {
    if (stride <= reach) return false;
    reach += (size - 1) * stride;
  }
  return true;
}

// Calls f(position) for every position of `l` in odometer order (innermost dim fastest);
// stops early when f returns true. Returns whether it stopped.
template <typename F>
bool for_each_position(const Layout& l, F&& f) {
  if (l.numel == 0) return false;
  const size_t nd = l.dims.size();
  if (nd == 0) return f(l.base);
  std::vector<int64_t> idx(nd, 0);
  const int64_t inner_size = l.dims[0].first, inner_stride = l.dims[0].second;
  int64_t outer = l.base;
  while (true) {
    for (int64_t i = 0; i < inner_size; ++i)
      if (f(outer + i * inner_stride)) return true;
    size_t d = 1;
    for (; d < nd; ++d) {
      outer += l.dims[d].second;
      if (++idx[d] < l.dims[d].first) break;
      outer -= l.dims[d].first * l.dims[d].second;
      idx[d] = 0;
    }
    if (d == nd) return false;
  }
}

// A set of positions in [lo, lo + range): a bitmap when that is no larger than a sorted
// list of `count` positions, else the sorted list.
class PositionSet {
 public:
  PositionSet(int64_t lo, int64_t range, int64_t count) : lo_(lo) {
    use_bits_ = range / 64 <= count;
    if (use_bits_) bits_.assign(static_cast<size_t>(range / 64 + 1), 0);
    else list_.reserve(static_cast<size_t>(count));
  }
  /// Inserts p; returns whether it was already present (exact only in bitmap mode; list
  /// mode answers after finish()).
  bool insert(int64_t p) {
    if (!use_bits_) {
      list_.push_back(p);
      return false;
    }
    const uint64_t r = static_cast<uint64_t>(p - lo_);
    uint64_t& w = bits_[r >> 6];
    const uint64_t m = uint64_t{1} << (r & 63);
    const bool had = (w & m) != 0;
    w |= m;
    return had;
  }
  /// Sorts the list; returns whether it holds a duplicate.
  bool finish() {
    if (use_bits_) return false;
    std::sort(list_.begin(), list_.end());
    return std::adjacent_find(list_.begin(), list_.end()) != list_.end();
  }
  bool contains(int64_t p) const {
    if (use_bits_) {
      const uint64_t r = static_cast<uint64_t>(p - lo_);
      return (bits_[r >> 6] >> (r & 63) & 1u) != 0;
    }
    return std::binary_search(list_.begin(), list_.end(), p);
  }

 private:
  int64_t lo_;
  bool use_bits_ = true;
  std::vector<uint64_t> bits_;
  std::vector<int64_t> list_;
};

// Whether `l`'s element positions, each covering `width` units, cover their whole range
// exactly once (a permutation of a contiguous block).
bool is_dense(const Layout& l, int64_t width) {
  if (l.numel <= 1) return true;
  int64_t expected = width;
  for (const auto& [size, stride] : l.dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

}  // namespace

bool has_internal_overlap(IntArrayRef sizes, IntArrayRef strides) {
  Layout l = layout_of(0, sizes, strides, 1);
  if (l.numel <= 1) return false;
  for (const auto& [size, stride] : l.dims)
    if (stride == 0) return true;
  if (sorted_strides_separate(l)) return false;
  const int64_t range = l.reach + 1;
  if (range < l.numel) return true;  // more positions than addresses
  PositionSet seen(l.base, range, l.numel);
  if (for_each_position(l, [&](int64_t p) { return seen.insert(p); })) return true;
  return seen.finish();
}

bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides) {
  if (strides.empty()) return true;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] > 1 && strides[d] < 0) return false;
  return is_dense(layout_of(0, sizes, strides, 1), 1);
}

bool has_internal_overlap(const Tensor& t) {
  if (t.is_contiguous()) return false;
  return has_internal_overlap(t.sizes(), t.strides());
}

MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0 || a.storage().get() != b.storage().get()) return MemOverlapStatus::No;
  if (a.is_same(b)) return MemOverlapStatus::Full;
  const int64_t ea = a.element_size(), eb = b.element_size();
  // Work in elements when both have the same element size, else in bytes.
  const int64_t unit = ea == eb ? ea : 1;
  const int64_t wa = ea / unit, wb = eb / unit;  // units one element covers
  Layout la = layout_of(a.storage_offset(), a.sizes(), a.strides(), ea / unit);
  Layout lb = layout_of(b.storage_offset(), b.sizes(), b.strides(), eb / unit);
  const int64_t lo = std::max(la.base, lb.base);
  const int64_t hi = std::min(la.base + la.reach + wa, lb.base + lb.reach + wb);  // exclusive
  if (lo >= hi) return MemOverlapStatus::No;

  // Full: same element size and offset, and b (broadcast to a's shape) steps as a does.
  if (ea == eb && a.storage_offset() == b.storage_offset() && a.dim() >= b.dim()) {
    bool same = true;
    const int64_t lead = a.dim() - b.dim();
    for (int64_t d = 0; d < a.dim() && same; ++d) {
      const int64_t j = d - lead;
      if (j >= 0 && b.size(j) != 1 && b.size(j) != a.size(d)) same = false;  // not broadcastable
      if (a.size(d) <= 1) continue;
      const int64_t bs = j >= 0 && b.size(j) == a.size(d) ? b.stride(j) : 0;
      same = same && bs == a.stride(d);
    }
    if (same) return MemOverlapStatus::Full;
  }
  // Dense layouts cover their whole range, so intersecting ranges share memory.
  if (is_dense(la, wa) && is_dense(lb, wb)) return MemOverlapStatus::Partial;

  // Enumerate: mark a's units inside [lo, hi), then look for one of b's.
  PositionSet seen(lo, hi - lo, la.numel * wa);
  for_each_position(la, [&](int64_t p) {
    for (int64_t k = 0; k < wa; ++k)
      if (p + k >= lo && p + k < hi) seen.insert(p + k);
    return false;
  });
  seen.finish();
  const bool shared = for_each_position(lb, [&](int64_t p) {
    for (int64_t k = 0; k < wb; ++k)
      if (p + k >= lo && p + k < hi && seen.contains(p + k)) return true;
    return false;
  });
  return shared ? MemOverlapStatus::Partial : MemOverlapStatus::No;
}

}  // namespace tandem
