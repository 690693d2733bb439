#include "tandem/kernels/cpu/loops.h"

#include <algorithm>

namespace tandem::kernels {

ElementwiseIter ElementwiseIter::make(ArrayRef<Tensor> operands) {
  return make(operands, operands[0].sizes());
}

ElementwiseIter ElementwiseIter::make(ArrayRef<Tensor> operands, IntArrayRef shape) {
  ElementwiseIter it;
  TANDEM_INTERNAL_ASSERT(operands.size() <= static_cast<size_t>(kMaxOperands));
  it.nops = static_cast<int>(operands.size());
  const int nd = static_cast<int>(shape.size());
  TANDEM_CHECK(nd <= kMaxDims, NotImplementedError, "elementwise", "tensors with ", nd,
               " dims, expected at most ", kMaxDims);
  it.numel = multiply_integers(shape);
  // Reverse to innermost-first; align each operand to the right (broadcast).
  int64_t shp[kMaxDims];
  int64_t st[kMaxOperands][kMaxDims];
  for (int d = 0; d < nd; ++d) shp[d] = shape[nd - 1 - d];
  for (int k = 0; k < it.nops; ++k) {
    const Tensor& t = operands[k];
    const int64_t es = t.element_size();
    const int tnd = static_cast<int>(t.dim());
    it.base[k] = static_cast<char*>(t.data_ptr());
    for (int d = 0; d < nd; ++d) {
      if (d < tnd) {
        int64_t sz = t.sizes()[tnd - 1 - d];
        st[k][d] = (sz == 1 && shp[d] != 1) ? 0 : t.strides()[tnd - 1 - d] * es;
      } else {
        st[k][d] = 0;
      }
    }
  }
  // Drop size-1 dims and merge dims contiguous for every operand. A dim merges into the
  // last kept output dim (it.strides[k][out - 1]; st[k][out - 1] would be an input dim,
  // which differs once a size-1 dim was dropped or dims were merged).
  int out = 0;
  for (int d = 0; d < nd; ++d) {
    if (shp[d] == 1) continue;
    if (out > 0) {
      bool mergeable = true;
      for (int k = 0; k < it.nops; ++k)
        if (st[k][d] != it.strides[k][out - 1] * it.shape[out - 1]) { mergeable = false; break; }
      if (mergeable) {
        it.shape[out - 1] *= shp[d];
        continue;
      }
    }
    it.shape[out] = shp[d];
    for (int k = 0; k < it.nops; ++k) it.strides[k][out] = st[k][d];
    ++out;
  }
  it.ndim = out;
  if (it.numel == 0) it.ndim = 0;
  return it;
}

namespace {
// One element conversion, C++ rules, except floating -> uint8, which goes through int64
// as in PyTorch (so -1.5 -> 255 and -300.5 -> 212, not undefined behaviour).
template <typename D, typename S>
inline D convert_elem(S v) {
  using M = opmath_t<S>;
  if constexpr (std::is_same_v<D, uint8_t> && std::is_floating_point_v<M>)
    return static_cast<uint8_t>(static_cast<int64_t>(static_cast<M>(v)));
  else
    return static_cast<D>(static_cast<M>(v));
}

template <typename D, typename S>
void copy_typed(const ElementwiseIter& it) {
  for_each(it, [](char** p, const int64_t* st, int64_t n) {
    if (st[0] == sizeof(D) && st[1] == sizeof(S)) {
      D* d = reinterpret_cast<D*>(p[0]);
      const S* s = reinterpret_cast<const S*>(p[1]);
      if constexpr (std::is_same_v<D, S>) {
        std::memcpy(d, s, static_cast<size_t>(n) * sizeof(D));
      } else {
        for (int64_t i = 0; i < n; ++i) d[i] = convert_elem<D>(s[i]);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) {
        S v;
        std::memcpy(&v, p[1] + i * st[1], sizeof(S));
        D o = convert_elem<D>(v);
        std::memcpy(p[0] + i * st[0], &o, sizeof(D));
      }
    }
  });
}
}  // namespace

void copy_kernel(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  Tensor ops[2] = {dst, src};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 2));
  TANDEM_DISPATCH_ALL_TYPES(dst.dtype(), "copy_", [&] {
    using D = scalar_t;
    TANDEM_DISPATCH_ALL_TYPES(src.dtype(), "copy_", [&] { copy_typed<D, scalar_t>(it); });
  });
}

void widen_in_place(const Tensor& dst, DType from) {
  TANDEM_CHECK(dst.dtype() == kFloat32 && (from == kBFloat16 || from == kFloat16), TypeError, "widen_in_place",
               "got ", dtype_name(from), " values into ", dtype_name(dst.dtype()),
               ", expected bfloat16 or float16 into float32");
  TANDEM_CHECK(dst.is_contiguous(), ValueError, "widen_in_place", "got a non-contiguous tensor of strides ",
               dst.strides(), ", expected a contiguous one");
  const int64_t off = dst.storage_offset();
  auto narrow = [&](int64_t lo, int64_t hi) {
    return Tensor(IntrusivePtr<TensorImpl>::make(dst.storage(), from, IntArrayRef({hi - lo}), off * 2 + lo));
  };
  auto wide = [&](int64_t lo, int64_t hi) {
    return Tensor(IntrusivePtr<TensorImpl>::make(dst.storage(), kFloat32, IntArrayRef({hi - lo}), off + lo));
  };
  // Elements [ceil(hi / 2), hi) read bytes [2 lo, 2 hi) and write bytes [4 lo, 4 hi), at or
  // above 2 hi: disjoint, and above every element not converted yet. So each round is a
  // plain copy_kernel (parallel; the conversion is the copy's by construction), the rounds
  // halving; the last few thousand elements go through a small buffer.
  int64_t hi = dst.numel();
  while (hi > 4096) {
    const int64_t lo = (hi + 1) / 2;
    copy_kernel(wide(lo, hi), narrow(lo, hi));
    hi = lo;
  }
  if (hi > 0) {
    Tensor head = empty_tensor({hi}, kFloat32);
    copy_kernel(head, narrow(0, hi));
    std::memcpy(dst.data_ptr(), head.data_ptr(), static_cast<size_t>(hi) * sizeof(float));
  }
}

void fill_kernel(const Tensor& dst, const Scalar& value) {
  if (dst.numel() == 0) return;
  Tensor ops[1] = {dst};
  auto it = ElementwiseIter::make(ArrayRef<Tensor>(ops, 1));
  TANDEM_DISPATCH_ALL_TYPES(dst.dtype(), "fill_", [&] {
    scalar_t v;
    if constexpr (std::is_same_v<scalar_t, bool>) v = value.to_bool();
    else if constexpr (std::is_integral_v<scalar_t>) v = static_cast<scalar_t>(value.to_int());
    else v = static_cast<scalar_t>(value.to_double());
    // All bytes of the value equal (zero above all): memset. Otherwise groups of 8 stores
    // of a local copy, which GCC's -O2 turns into vector stores (its cheap cost model does
    // not vectorise a plain loop of unknown length, and a captured value would be reloaded
    // after every store since a store through d may alias it).
    unsigned char bytes[sizeof(scalar_t)];
    std::memcpy(bytes, &v, sizeof(scalar_t));
    const bool splat = std::all_of(bytes, bytes + sizeof(scalar_t), [&](unsigned char b) { return b == bytes[0]; });
    for_each(it, [&](char** p, const int64_t* st, int64_t n) {
      if (st[0] == sizeof(scalar_t)) {
        if (splat) {
          std::memset(p[0], bytes[0], static_cast<size_t>(n) * sizeof(scalar_t));
          return;
        }
        scalar_t* d = reinterpret_cast<scalar_t*>(p[0]);
        const scalar_t val = v;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
          d[i] = val, d[i + 1] = val, d[i + 2] = val, d[i + 3] = val;
          d[i + 4] = val, d[i + 5] = val, d[i + 6] = val, d[i + 7] = val;
        }
        for (; i < n; ++i) d[i] = val;
      } else {
        for (int64_t i = 0; i < n; ++i) std::memcpy(p[0] + i * st[0], &v, sizeof(scalar_t));
      }
    });
  });
}

}  // namespace tandem::kernels
