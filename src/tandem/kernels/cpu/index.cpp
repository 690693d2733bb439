#include "tandem/kernels/cpu/index.h"

#include <algorithm>
#include <climits>
#include <vector>

namespace tandem::kernels {

Tensor as_1d_if_scalar(const Tensor& t) {
  if (t.dim() != 0) return t;
  return make_alias(t, {1}, {1}, t.storage_offset());
}

Tensor restride(const Tensor& t, IntArrayRef sizes, IntArrayRef strides) {
  return make_alias(t, sizes.vec(), strides.vec(), t.storage_offset());
}

Tensor expand_alias(const Tensor& t, IntArrayRef shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), td = t.dim();
  TANDEM_INTERNAL_ASSERT(nd >= td, "expand_alias to fewer dims");
  DimVector st(static_cast<size_t>(nd), 0);
  for (int64_t i = 0; i < td; ++i) {
    const int64_t d = nd - td + i;
    TANDEM_INTERNAL_ASSERT(t.sizes()[i] == shape[d] || t.sizes()[i] == 1, "expand_alias: sizes do not broadcast");
    st[d] = t.sizes()[i] == shape[d] ? t.strides()[i] : 0;
  }
  return make_alias(t, shape.vec(), std::move(st), t.storage_offset());
}

Tensor contiguous_copy(const Tensor& t) {
  Tensor out = empty_tensor(t.sizes(), t.dtype());
  copy_kernel(out, t);
  return out;
}

void compute_index_offsets(const Tensor& offsets, ArrayRef<Tensor> indices, IntArrayRef sizes, IntArrayRef strides,
                           IntArrayRef dims, const char* op) {
  if (offsets.numel() == 0) return;
  TANDEM_INTERNAL_ASSERT(offsets.dtype() == kInt64 && offsets.is_contiguous(), "offsets must be contiguous int64");
  for (size_t k = 0; k < indices.size(); ++k) {
    Tensor ops[2] = {offsets, indices[k]};
    auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
    const int64_t size = sizes[k], stride = strides[k];
    const bool first = k == 0;
    for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, p[1] + i * st[1], 8);
        if (v < -size || v >= size) [[unlikely]]
          throw IndexError(str_cat("[", op, "] index ", v, " is out of bounds for dimension ", dims[k], " with size ", size));
        if (v < 0) v += size;
        int64_t* o = reinterpret_cast<int64_t*>(p[0] + i * st[0]);
        *o = first ? v * stride : *o + v * stride;
      }
    });
  }
}

void check_index_range(const Tensor& index, int64_t size, bool allow_negative, const char* op, int64_t dim) {
  if (index.numel() == 0) return;
  TANDEM_INTERNAL_ASSERT(index.dtype() == kInt64 || index.dtype() == kInt32, "index dtype ", dtype_name(index.dtype()));
  Tensor ops[1] = {index};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 1));
  const bool is64 = index.dtype() == kInt64;
  const int64_t lo = allow_negative ? -size : 0;
  // Serial on purpose: throwing from a parallel region is not allowed, and a scan of
  // the index is cheap next to the data movement it guards.
  for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
    const int64_t es = is64 ? 8 : 4;
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = load_index(p[0], i, st[0] / es, is64);
      if (v < lo || v >= size) [[unlikely]]
        throw IndexError(str_cat("[", op, "] index ", v, " is out of bounds for dimension ", dim, " with size ", size));
    }
  });
}

void check_scalar_fits(const Scalar& s, DType t, const char* op) {
  if (t == kBool || t == kFloat64 || s.is_bool()) return;
  bool ok = true;
  if (is_floating_point(t)) {
    if (s.is_floating_point()) {
      double d = s.to_double();
      double mx = t == kFloat16 ? 65504.0 : t == kBFloat16 ? 3.3895313892515355e38 : 3.4028234663852886e38;
      ok = !std::isfinite(d) || std::fabs(d) <= mx;
    } else if (t == kFloat16) {
      ok = std::fabs(static_cast<double>(s.to_int())) <= 65504.0;
    }
  } else {
    int64_t lo = 0, hi = 0;
    switch (t) {
      case kUInt8: lo = 0; hi = 255; break;
      case kInt8: lo = -128; hi = 127; break;
      case kInt16: lo = -32768; hi = 32767; break;
      case kInt32: lo = INT32_MIN; hi = INT32_MAX; break;
      default: lo = INT64_MIN; hi = INT64_MAX; break;
    }
    if (s.is_floating_point()) {
      double d = s.to_double();
      // Unsigned targets accept negatives whose magnitude fits (they wrap), like c10.
      double dlo = t == kUInt8 ? -255.0 : static_cast<double>(lo);
      ok = std::isfinite(d) && d >= dlo && d < static_cast<double>(hi) + 1.0;
    } else {
      int64_t v = s.to_int();
      int64_t vlo = t == kUInt8 ? -255 : lo;
      ok = v >= vlo && v <= hi;
    }
  }
  if (!ok) throw ValueError(str_cat("[", op, "] value ", s, " cannot be converted to type ", dtype_name(t), " without overflow"));
}

namespace {
template <typename T>
inline bool is_nonzero(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return static_cast<float>(v) != 0.0f;
  else return v != T(0);
}
}  // namespace

int64_t count_nonzero(const Tensor& self) {
  if (self.numel() == 0) return 0;
  Tensor ops[1] = {self};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 1));
  int64_t count = 0;
  TANDEM_DISPATCH_ALL_TYPES(self.dtype(), "nonzero", [&] {
    for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        scalar_t v;
        std::memcpy(&v, p[0] + i * st[0], sizeof(scalar_t));
        count += is_nonzero(v) ? 1 : 0;
      }
    });
  });
  return count;
}

Tensor nonzero(const Tensor& self) {
  const int64_t nd = self.dim();
  const int64_t n = count_nonzero(self);
  Tensor out = empty_tensor({n, nd}, kInt64);
  if (n == 0 || nd == 0) return out;
  int64_t* o = out.data_ptr<int64_t>();
  // Walk the logical row-major order keeping the multi-index (ElementwiseIter coalesces
  // dims, so it cannot give us coordinates).
  TANDEM_DISPATCH_ALL_TYPES(self.dtype(), "nonzero", [&] {
    const scalar_t* base = static_cast<const scalar_t*>(self.data_ptr());
    DimVector idx(static_cast<size_t>(nd), 0);
    IntArrayRef sizes = self.sizes(), strides = self.strides();
    const int64_t total = self.numel();
    const int64_t inner = sizes[nd - 1], inner_st = strides[nd - 1];
    int64_t off = 0;
    for (int64_t done = 0; done < total; done += inner) {
      for (int64_t j = 0; j < inner; ++j) {
        if (is_nonzero(base[off + j * inner_st])) {
          for (int64_t d = 0; d < nd - 1; ++d) o[d] = idx[d];
          o[nd - 1] = j;
          o += nd;
        }
      }
      // Advance the outer multi-index.
      for (int64_t d = nd - 2; d >= 0; --d) {
        off += strides[d];
        if (++idx[d] < sizes[d]) break;
        off -= strides[d] * sizes[d];
        idx[d] = 0;
      }
    }
  });
  return out;
}

void gather_by_offsets(const Tensor& out, const Tensor& self_view, const Tensor& offs) {
  if (out.numel() == 0) return;
  Tensor ops[3] = {out, self_view, offs};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 3));
  TANDEM_DISPATCH_BY_SIZE(out.element_size(), "index", [&] {
    for_each(it, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off;
        std::memcpy(&off, p[2] + i * st[2], 8);
        std::memcpy(p[0] + i * st[0], p[1] + i * st[1] + off * static_cast<int64_t>(sizeof(elem_t)), sizeof(elem_t));
      }
    });
  });
}

void scatter_by_offsets(const Tensor& self_view, const Tensor& values, const Tensor& offs, bool accumulate) {
  if (self_view.numel() == 0) return;
  Tensor ops[3] = {self_view, values, offs};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 3));
  if (!accumulate) {
    TANDEM_DISPATCH_BY_SIZE(self_view.element_size(), "index_put_", [&] {
      for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          int64_t off;
          std::memcpy(&off, p[2] + i * st[2], 8);
          std::memcpy(p[0] + i * st[0] + off * static_cast<int64_t>(sizeof(elem_t)), p[1] + i * st[1], sizeof(elem_t));
        }
      });
    });
    return;
  }
  TANDEM_DISPATCH_ALL_TYPES(self_view.dtype(), "index_put_", [&] {
    for_each_range(it, 0, it.numel, [&](char** p, const int64_t* st, int64_t n) {
      for (int64_t i = 0; i < n; ++i) {
        int64_t off;
        std::memcpy(&off, p[2] + i * st[2], 8);
        char* dst = p[0] + i * st[0] + off * static_cast<int64_t>(sizeof(scalar_t));
        scalar_t a, b;
        std::memcpy(&a, dst, sizeof(scalar_t));
        std::memcpy(&b, p[1] + i * st[1], sizeof(scalar_t));
        scalar_t r;
        if constexpr (std::is_same_v<scalar_t, bool>) r = a || b;
        else r = static_cast<scalar_t>(static_cast<opmath_t<scalar_t>>(a) + static_cast<opmath_t<scalar_t>>(b));
        std::memcpy(dst, &r, sizeof(scalar_t));
      }
    });
  });
}

}  // namespace tandem::kernels
