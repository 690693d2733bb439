// Embedding, dropout, one_hot, index-map gathers (padding, nearest upsampling) and
// bilinear upsampling kernels.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "tandem/core/generator.h"
#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/nn.h"

namespace tandem::kernels {

// ---------------------------------------------------------------- embedding
namespace {
template <typename I>
std::vector<int64_t> read_indices(const Tensor& indices) {
  const I* p = indices.data_ptr<I>();
  std::vector<int64_t> v(static_cast<size_t>(indices.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
  return v;
}
std::vector<int64_t> index_vector(const Tensor& indices) {
  Tensor c = indices.is_contiguous() ? indices : contiguous_as(indices, indices.dtype());
  return c.dtype() == DType::Int32 ? read_indices<int32_t>(c) : read_indices<int64_t>(c);
}
}  // namespace

void embedding_kernel(const Tensor& out, const Tensor& weight, const Tensor& indices) {
  const std::vector<int64_t> idx = index_vector(indices);
  const int64_t V = weight.size(0), D = weight.size(1);
  for (int64_t v : idx)
    TANDEM_CHECK(v >= 0 && v < V, IndexError, "embedding", "index ", v, " is out of range for a weight of ", V,
                 " rows (index out of range in self)");
  const size_t row = static_cast<size_t>(D) * static_cast<size_t>(weight.element_size());
  const char* src = static_cast<const char*>(weight.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  if (row == 0) return;
  parallel_for(0, static_cast<int64_t>(idx.size()), std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, D)),
               [&](int64_t b, int64_t e) {
                 for (int64_t i = b; i < e; ++i) std::memcpy(dst + i * row, src + idx[i] * row, row);
               });
}

void embedding_backward_kernel(const Tensor& grad_weight, const Tensor& grad, const Tensor& indices,
                               int64_t padding_idx, bool scale_grad_by_freq) {
  const std::vector<int64_t> idx = index_vector(indices);
  const int64_t V = grad_weight.size(0), D = grad_weight.size(1);
  for (int64_t v : idx)
    TANDEM_CHECK(v >= 0 && v < V, IndexError, "embedding_dense_backward", "index ", v,
                 " is out of range for num_weights ", V);
  Tensor acc = empty_tensor({V, D}, DType::Float64);
  fill_kernel(acc, 0);
  double* a = acc.data_ptr<double>();
  Tensor g = contiguous_as(grad, DType::Float64);
  const double* gp = g.data_ptr<double>();
  std::vector<int64_t> counts;
  if (scale_grad_by_freq) {
    counts.assign(static_cast<size_t>(V), 0);
    for (int64_t v : idx) ++counts[v];
  }
  for (size_t i = 0; i < idx.size(); ++i) {
    const int64_t v = idx[i];
    if (v == padding_idx) continue;
    const double s = scale_grad_by_freq ? 1.0 / static_cast<double>(counts[v]) : 1.0;
    double* dst = a + v * D;
    const double* src = gp + static_cast<int64_t>(i) * D;
    for (int64_t j = 0; j < D; ++j) dst[j] += src[j] * s;
  }
  copy_kernel(grad_weight, acc);
}

// ---------------------------------------------------------------- dropout
void dropout_kernel(const Tensor& out, const Tensor& mask, const Tensor& x, double p) {
  const int64_t n = x.numel();
  std::vector<float> u(static_cast<size_t>(n));
  default_generator().fill_uniform(u.data(), n);
  const float keep_below = static_cast<float>(1.0 - p);
  bool* m = mask.data_ptr<bool>();
  for (int64_t i = 0; i < n; ++i) m[i] = u[static_cast<size_t>(i)] < keep_below;
  TANDEM_DISPATCH_FLOATING_TYPES(x.dtype(), "native_dropout", [&] {
    using M = opmath_t<scalar_t>;
    const scalar_t* xp = x.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    const M scale = p < 1 ? static_cast<M>(1.0 / (1.0 - p)) : M(0);
    for (int64_t i = 0; i < n; ++i) op[i] = m[i] ? static_cast<scalar_t>(static_cast<M>(xp[i]) * scale) : scalar_t(0);
  });
}

// ---------------------------------------------------------------- one_hot
void one_hot_kernel(const Tensor& out, const Tensor& indices, int64_t num_classes) {
  const int64_t* ip = indices.data_ptr<int64_t>();
  const int64_t n = indices.numel();
  for (int64_t i = 0; i < n; ++i) {
    TANDEM_CHECK(ip[i] >= 0, ValueError, "one_hot", "Class values must be non-negative, got ", ip[i]);
    TANDEM_CHECK(ip[i] < num_classes, ValueError, "one_hot", "Class values must be smaller than num_classes (",
                 num_classes, "), got ", ip[i]);
  }
  fill_kernel(out, 0);
  int64_t* op = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) op[i * num_classes + ip[i]] = 1;
}

// ---------------------------------------------------------------- index-map gathers
void gather_by_dim_maps(const Tensor& out, const Tensor& in, const std::vector<std::vector<int64_t>>& maps,
                        const Tensor& fill) {
  const int64_t numel = out.numel();
  if (numel == 0) return;
  const size_t es = static_cast<size_t>(out.element_size());
  const char* src = static_cast<const char*>(in.data_ptr());
  char* dst = static_cast<char*>(out.data_ptr());
  const char* fv = fill.defined() ? static_cast<const char*>(fill.data_ptr()) : nullptr;
  const int64_t nd = out.dim();
  if (nd == 0) {
    std::memcpy(dst, src, es);
    return;
  }
  const int64_t last = out.size(nd - 1);
  const int64_t rows = numel / last;
  const std::vector<int64_t>& lmap = maps[static_cast<size_t>(nd - 1)];
  const int64_t lst = in.stride(nd - 1);
  parallel_for(0, rows, std::max<int64_t>(1, kGrainSize / last), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t rem = r, base = 0;
      bool valid = true;
      for (int64_t d = nd - 2; d >= 0; --d) {
        const int64_t sz = out.size(d);
        const int64_t s = maps[static_cast<size_t>(d)][rem % sz];
        rem /= sz;
        if (s < 0) valid = false;
        else base += s * in.stride(d);
      }
      char* orow = dst + static_cast<size_t>(r * last) * es;
      for (int64_t j = 0; j < last; ++j) {
        const int64_t s = lmap[j];
        if (!valid || s < 0) std::memcpy(orow + static_cast<size_t>(j) * es, fv, es);
        else std::memcpy(orow + static_cast<size_t>(j) * es, src + static_cast<size_t>(base + s * lst) * es, es);
      }
    }
  });
}

void scatter_add_by_dim_maps(const Tensor& grad_in, const Tensor& grad_out,
                             const std::vector<std::vector<int64_t>>& maps) {
  Tensor acc = empty_tensor(grad_in.sizes(), DType::Float64);
  fill_kernel(acc, 0);
  const int64_t numel = grad_out.numel();
  const int64_t nd = grad_out.dim();
  if (numel > 0) {
    double* a = acc.data_ptr<double>();
    Tensor g = contiguous_as(grad_out, DType::Float64);
    const double* gp = g.data_ptr<double>();
    if (nd == 0) {
      a[0] += gp[0];
    } else {
      const DimVector ist = contiguous_strides(grad_in.sizes());
      const int64_t last = grad_out.size(nd - 1);
      const std::vector<int64_t>& lmap = maps[static_cast<size_t>(nd - 1)];
      for (int64_t r = 0; r < numel / last; ++r) {
        int64_t rem = r, base = 0;
        bool valid = true;
        for (int64_t d = nd - 2; d >= 0; --d) {
          const int64_t sz = grad_out.size(d);
          const int64_t s = maps[static_cast<size_t>(d)][rem % sz];
          rem /= sz;
          if (s < 0) valid = false;
          else base += s * ist[d];
        }
        if (!valid) continue;
        const double* grow = gp + r * last;
        for (int64_t j = 0; j < last; ++j)
          if (lmap[j] >= 0) a[base + lmap[j]] += grow[j];
      }
    }
  }
  copy_kernel(grad_in, acc);
}

std::vector<int64_t> nearest_index_map(int64_t in_size, int64_t out_size, double scale) {
  std::vector<int64_t> m(static_cast<size_t>(out_size));
  const float s = scale > 0 ? static_cast<float>(1.0 / scale)
                            : static_cast<float>(in_size) / static_cast<float>(out_size);
  for (int64_t o = 0; o < out_size; ++o) {
    if (out_size == in_size) m[o] = o;
    else if (out_size == 2 * in_size) m[o] = o >> 1;
    else m[o] = std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in_size - 1);
  }
  return m;
}

// ---------------------------------------------------------------- bilinear
namespace {

struct LinearTap {
  int64_t i0, i1;
  double l0, l1;
};

// Source taps of linear interpolation along one dim (PyTorch's area_pixel rules, in the
// op's compute type M).
template <typename M>
std::vector<LinearTap> linear_taps(int64_t in, int64_t out, bool align_corners, double scale) {
  M s;
  if (align_corners) s = out > 1 ? static_cast<M>(in - 1) / static_cast<M>(out - 1) : M(0);
  else s = scale > 0 ? static_cast<M>(1.0 / scale) : static_cast<M>(in) / static_cast<M>(out);
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    M real = align_corners ? s * static_cast<M>(o) : s * (static_cast<M>(o) + M(0.5)) - M(0.5);
    if (!align_corners && real < 0) real = 0;
    const int64_t i0 = std::min(static_cast<int64_t>(real), in - 1);
    const int64_t off = i0 < in - 1 ? 1 : 0;
    const M l1 = std::min(std::max(real - static_cast<M>(i0), M(0)), M(1));
    taps[o] = {i0, i0 + off, static_cast<double>(M(1) - l1), static_cast<double>(l1)};
  }
  return taps;
}

template <typename T>
void bilinear_typed(const Tensor& out, const Tensor& in, bool align, double sh, double sw) {
  using M = opmath_t<T>;
  const int64_t NC = in.size(0) * in.size(1), H = in.size(2), W = in.size(3);
  const int64_t OH = out.size(2), OW = out.size(3);
  const auto th = linear_taps<M>(H, OH, align, sh), tw = linear_taps<M>(W, OW, align, sw);
  const T* x = in.data_ptr<T>();
  T* y = out.data_ptr<T>();
  parallel_for(0, NC * OH, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, OW)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t nc = r / OH, oh = r % OH;
      const LinearTap& h = th[oh];
      const T* p0 = x + (nc * H + h.i0) * W;
      const T* p1 = x + (nc * H + h.i1) * W;
      const M h0 = static_cast<M>(h.l0), h1 = static_cast<M>(h.l1);
      for (int64_t ow = 0; ow < OW; ++ow) {
        const LinearTap& w = tw[ow];
        const M w0 = static_cast<M>(w.l0), w1 = static_cast<M>(w.l1);
        const M v = h0 * (w0 * static_cast<M>(p0[w.i0]) + w1 * static_cast<M>(p0[w.i1])) +
                    h1 * (w0 * static_cast<M>(p1[w.i0]) + w1 * static_cast<M>(p1[w.i1]));
        y[r * OW + ow] = static_cast<T>(v);
      }
    }
  });
}

template <typename T>
void bilinear_backward_typed(const Tensor& gin, const Tensor& gout, bool align, double sh, double sw) {
  using M = opmath_t<T>;
  const int64_t NC = gin.size(0) * gin.size(1), H = gin.size(2), W = gin.size(3);
  const int64_t OH = gout.size(2), OW = gout.size(3);
  const auto th = linear_taps<M>(H, OH, align, sh), tw = linear_taps<M>(W, OW, align, sw);
  Tensor acc = empty_tensor(gin.sizes(), DType::Float64);
  fill_kernel(acc, 0);
  double* a = acc.data_ptr<double>();
  Tensor g = contiguous_as(gout, DType::Float64);
  const double* gp = g.data_ptr<double>();
  parallel_for(0, NC, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, OH * OW)), [&](int64_t b, int64_t e) {
    for (int64_t nc = b; nc < e; ++nc)
      for (int64_t oh = 0; oh < OH; ++oh) {
        const LinearTap& h = th[oh];
        double* r0 = a + (nc * H + h.i0) * W;
        double* r1 = a + (nc * H + h.i1) * W;
        for (int64_t ow = 0; ow < OW; ++ow) {
          const LinearTap& w = tw[ow];
          const double v = gp[(nc * OH + oh) * OW + ow];
          r0[w.i0] += h.l0 * w.l0 * v;
          r0[w.i1] += h.l0 * w.l1 * v;
          r1[w.i0] += h.l1 * w.l0 * v;
          r1[w.i1] += h.l1 * w.l1 * v;
        }
      }
  });
  copy_kernel(gin, acc);
}

}  // namespace

void upsample_bilinear2d_kernel(const Tensor& out, const Tensor& in, bool align_corners, double scale_h,
                                double scale_w) {
  if (out.numel() == 0) return;
  TANDEM_DISPATCH_FLOATING_TYPES(in.dtype(), "upsample_bilinear2d",
                                 [&] { bilinear_typed<scalar_t>(out, in, align_corners, scale_h, scale_w); });
}

void upsample_bilinear2d_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, bool align_corners,
                                         double scale_h, double scale_w) {
  if (grad_in.numel() == 0) return;
  if (grad_out.numel() == 0) {
    fill_kernel(grad_in, 0);
    return;
  }
  TANDEM_DISPATCH_FLOATING_TYPES(grad_in.dtype(), "upsample_bilinear2d_backward", [&] {
    bilinear_backward_typed<scalar_t>(grad_in, grad_out, align_corners, scale_h, scale_w);
  });
}

}  // namespace tandem::kernels
