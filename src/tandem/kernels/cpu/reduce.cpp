#include "tandem/kernels/cpu/reduce.h"

#include <algorithm>
#include <climits>

namespace tandem::kernels {

namespace {
struct Dim {
  int64_t size, in, out;
};
// Sort innermost-first by input stride (stride 0, i.e. broadcast, goes outermost) and
// merge neighbours that walk memory as one dim.
int coalesce(Dim* dims, int n, bool use_out, int64_t* shape, int64_t* in, int64_t* out) {
  auto key = [](int64_t s) { return s == 0 ? INT64_MAX : s; };
  std::stable_sort(dims, dims + n, [&](const Dim& a, const Dim& b) {
    if (key(a.in) != key(b.in)) return key(a.in) < key(b.in);
    return use_out && a.out < b.out;
  });
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (m > 0 && dims[i].in == in[m - 1] * shape[m - 1] && (!use_out || dims[i].out == out[m - 1] * shape[m - 1])) {
      shape[m - 1] *= dims[i].size;
      continue;
    }
    shape[m] = dims[i].size;
    in[m] = dims[i].in;
    if (use_out) out[m] = dims[i].out;
    ++m;
  }
  return m;
}
}  // namespace

ReduceIter ReduceIter::make(const Tensor& in, const Tensor& out, uint64_t mask) {
  ReduceIter it;
  const int nd = static_cast<int>(in.dim());
  TANDEM_CHECK(nd <= kMaxDims, NotImplementedError, "reduce", "tensors with ", nd, " dims, expected at most ",
               kMaxDims);
  const bool keepdim = out.dim() == in.dim();
  Dim keep[kMaxDims], red[kMaxDims];
  int nk = 0, nr = 0, od = 0;
  for (int d = 0; d < nd; ++d) {
    const int64_t size = in.sizes()[static_cast<size_t>(d)], st = in.strides()[static_cast<size_t>(d)];
    const bool reduced = (mask >> d) & 1u;
    int64_t ost = 0;
    if (!reduced || keepdim) {
      ost = out.dim() > 0 ? out.strides()[static_cast<size_t>(od)] : 0;
      ++od;
    }
    if (reduced) it.red_numel *= size;
    else it.keep_numel *= size;
    if (size == 1) continue;
    if (reduced) red[nr++] = Dim{size, st, 0};
    else keep[nk++] = Dim{size, st, ost};
  }
  if (it.keep_numel == 0 || it.red_numel == 0) {
    // Nothing is read; keep every kept dim so each output gets its identity.
    nk = 0;
    od = 0;
    for (int d = 0; d < nd; ++d) {
      const bool reduced = (mask >> d) & 1u;
      if (!reduced || keepdim) {
        if (!reduced) {
          it.keep_shape[nk] = in.sizes()[static_cast<size_t>(d)];
          it.keep_in[nk] = 0;
          it.keep_out[nk] = out.strides()[static_cast<size_t>(od)];
          ++nk;
        }
        ++od;
      }
    }
    // offset_of walks innermost-first.
    std::reverse(it.keep_shape, it.keep_shape + nk);
    std::reverse(it.keep_out, it.keep_out + nk);
    it.nkeep = nk;
    it.nred = 0;
    return it;
  }
  it.nkeep = coalesce(keep, nk, true, it.keep_shape, it.keep_in, it.keep_out);
  it.nred = coalesce(red, nr, false, it.red_shape, it.red_in, nullptr);
  return it;
}

}  // namespace tandem::kernels
