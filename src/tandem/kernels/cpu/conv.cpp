// Convolution forward kernels: oneDNN for float32, im2col/col2im + gemm() otherwise.
#include "tandem/kernels/cpu/conv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tandem/core/parallel.h"
#include "tandem/kernels/cpu/gemm.h"
#include "tandem/kernels/cpu/loops.h"
#include "tandem/kernels/cpu/onednn.h"

namespace tandem::kernels {

namespace {

Tensor contiguous_copy(const Tensor& t) {
  if (t.is_contiguous()) return t;
  Tensor c = empty_tensor(t.sizes(), t.dtype());
  copy_kernel(c, t);
  return c;
}

Tensor converted(const Tensor& t, DType d) {
  if (!t.defined()) return t;
  Tensor c = empty_tensor(t.sizes(), d);
  copy_kernel(c, t);
  return c;
}

/// oneDNN takes any plain strides, but not overlapping (stride-0) dims.
bool onednn_strides_ok(const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) <= 0) return false;
  return true;
}

onednn::Strides4 strides4(const Tensor& t) {
  onednn::Strides4 s;
  for (int d = 0; d < 4; ++d) s.s[d] = t.stride(d);
  return s;
}

template <typename T>
void add_bias(T* out, const T* bias, int64_t N, int64_t OC, int64_t P) {
  for (int64_t n = 0; n < N; ++n)
    for (int64_t oc = 0; oc < OC; ++oc) {
      T* o = out + (n * OC + oc) * P;
      const T b = bias[oc];
      for (int64_t p = 0; p < P; ++p) o[p] = static_cast<T>(o[p] + b);
    }
}

/// col[(c*KH + kh)*KW + kw, oh*OW + ow] = x[c, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw] (0 outside).
template <typename T>
void im2col(const Conv2dGeometry& g, int64_t channels, const T* x, T* col) {
  const int64_t P = g.OH * g.OW;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        T* dst = col + ((c * g.KH + kh) * g.KW + kw) * P;
        const T* plane = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_t + kh * g.dil_h;
          T* row = dst + oh * g.OW;
          if (ih < 0 || ih >= g.H) {
            std::fill(row, row + g.OW, T(0));
            continue;
          }
          const T* src = plane + ih * g.W;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t iw = ow * g.stride_w - g.pad_l + kw * g.dil_w;
            row[ow] = (iw >= 0 && iw < g.W) ? src[iw] : T(0);
          }
        }
      }
}

/// Scatter-add of col[(oc*KH + kh)*KW + kw, ih*W + iw] into y[oc, ih*sh - pt + kh*dh, ...].
template <typename T>
void col2im_add(const Conv2dGeometry& g, int64_t channels, const T* col, T* y) {
  const int64_t P = g.H * g.W;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* src = col + ((c * g.KH + kh) * g.KW + kw) * P;
        T* plane = y + c * g.OH * g.OW;
        for (int64_t ih = 0; ih < g.H; ++ih) {
          const int64_t oh = ih * g.stride_h - g.pad_t + kh * g.dil_h;
          if (oh < 0 || oh >= g.OH) continue;
          T* row = plane + oh * g.OW;
          const T* s = src + ih * g.W;
          for (int64_t iw = 0; iw < g.W; ++iw) {
            const int64_t ow = iw * g.stride_w - g.pad_l + kw * g.dil_w;
            if (ow >= 0 && ow < g.OW) row[ow] = static_cast<T>(row[ow] + s[iw]);
          }
        }
      }
}

/// Adjoint of im2col: adds col[(c*KH + kh)*KW + kw, oh*OW + ow] into
/// x[c, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw] where that lies inside the input.
template <typename T>
void col2im_conv_add(const Conv2dGeometry& g, int64_t channels, const T* col, T* x) {
  const int64_t P = g.OH * g.OW;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* src = col + ((c * g.KH + kh) * g.KW + kw) * P;
        T* plane = x + c * g.H * g.W;
        for (int64_t oh = 0; oh < g.OH; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_t + kh * g.dil_h;
          if (ih < 0 || ih >= g.H) continue;
          T* row = plane + ih * g.W;
          const T* s = src + oh * g.OW;
          for (int64_t ow = 0; ow < g.OW; ++ow) {
            const int64_t iw = ow * g.stride_w - g.pad_l + kw * g.dil_w;
            if (iw >= 0 && iw < g.W) row[iw] = static_cast<T>(row[iw] + s[ow]);
          }
        }
      }
}

/// Runs f(n, scratch) for every image: in parallel over images when there are enough of
/// them (each gemm then runs on one thread), else serially with a parallel gemm.
template <typename T, typename F>
void for_each_image(int64_t N, size_t scratch_elems, F f) {
  if (N >= get_num_threads() && get_num_threads() > 1 && !in_parallel_region()) {
    parallel_for(0, N, 1, [&](int64_t b, int64_t e) {
      std::vector<T> scratch(scratch_elems);
      for (int64_t n = b; n < e; ++n) f(n, scratch.data());
    });
  } else {
    std::vector<T> scratch(scratch_elems);
    for (int64_t n = 0; n < N; ++n) f(n, scratch.data());
  }
}

template <typename T>
void conv2d_generic(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                    const Tensor& bias) {
  const int64_t G = g.groups, Cg = g.C / G, OCg = g.OC / G, KK = Cg * g.KH * g.KW, P = g.OH * g.OW;
  const T* x = static_cast<const T*>(input.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  // A 1x1 kernel with unit stride and no padding reads the input as the column matrix.
  const bool direct = g.KH == 1 && g.KW == 1 && g.stride_h == 1 && g.stride_w == 1 && g.pad_t == 0 &&
                      g.pad_l == 0 && g.pad_b == 0 && g.pad_r == 0;
  for_each_image<T>(g.N, direct ? 0 : static_cast<size_t>(KK * P), [&](int64_t n, T* col) {
    for (int64_t gi = 0; gi < G; ++gi) {
      const T* xg = x + (n * g.C + gi * Cg) * g.H * g.W;
      if (!direct) im2col(g, Cg, xg, col);
      const T* bsrc = direct ? xg : col;
      gemm("conv2d", out.dtype(), 1, OCg, P, KK, GemmMatrix{const_cast<T*>(w + gi * OCg * KK), 0, KK, 1},
           GemmMatrix{const_cast<T*>(bsrc), 0, P, 1}, GemmMatrix{y + (n * g.OC + gi * OCg) * P, 0, P, 1});
    }
    if (bias.defined()) add_bias(y + n * g.OC * P, static_cast<const T*>(bias.data_ptr()), 1, g.OC, P);
  });
}

template <typename T>
void conv_transpose2d_generic(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                              const Tensor& bias) {
  const int64_t G = g.groups, Cg = g.C / G, OCg = g.OC / G, KK = g.KH * g.KW, HW = g.H * g.W, P = g.OH * g.OW;
  const T* x = static_cast<const T*>(input.data_ptr());
  const T* w = static_cast<const T*>(weight.data_ptr());
  T* y = static_cast<T*>(out.data_ptr());
  for_each_image<T>(g.N, static_cast<size_t>(OCg * KK * HW), [&](int64_t n, T* col) {
    T* yn = y + n * g.OC * P;
    std::fill(yn, yn + g.OC * P, T(0));
    for (int64_t gi = 0; gi < G; ++gi) {
      // col [OCg*KH*KW, H*W] = W_g^T @ x_g, where W_g = weight[gi*Cg : (gi+1)*Cg] viewed [Cg, OCg*KH*KW].
      const T* wg = w + gi * Cg * OCg * KK;
      gemm("conv_transpose2d", out.dtype(), 1, OCg * KK, HW, Cg, GemmMatrix{const_cast<T*>(wg), 0, 1, OCg * KK},
           GemmMatrix{const_cast<T*>(x + (n * g.C + gi * Cg) * HW), 0, HW, 1}, GemmMatrix{col, 0, HW, 1});
      col2im_add(g, OCg, col, yn + gi * OCg * P);
    }
    if (bias.defined()) add_bias(yn, static_cast<const T*>(bias.data_ptr()), 1, g.OC, P);
  });
}

/// conv2d gradients by im2col/col2im + gemm (float32 fallback, float64). All tensors
/// contiguous; undefined outputs are skipped.
template <typename T>
void conv2d_backward_generic(const Conv2dGeometry& g, const Tensor& gin, const Tensor& gw, const Tensor& gb,
                             const Tensor& gout, const Tensor& input, const Tensor& weight) {
  const int64_t G = g.groups, Cg = g.C / G, OCg = g.OC / G, KK = Cg * g.KH * g.KW, P = g.OH * g.OW;
  const DType dt = gout.dtype();
  const T* go = static_cast<const T*>(gout.data_ptr());
  if (gin.defined()) {
    const T* w = static_cast<const T*>(weight.data_ptr());
    T* gx = static_cast<T*>(gin.data_ptr());
    for_each_image<T>(g.N, static_cast<size_t>(KK * P), [&](int64_t n, T* col) {
      T* gxn = gx + n * g.C * g.H * g.W;
      std::fill(gxn, gxn + g.C * g.H * g.W, T(0));
      for (int64_t gi = 0; gi < G; ++gi) {
        // col [KK, P] = W_g^T [KK, OCg] @ gout_g [OCg, P], then scattered back onto the input.
        gemm("convolution_backward", dt, 1, KK, P, OCg, GemmMatrix{const_cast<T*>(w + gi * OCg * KK), 0, 1, KK},
             GemmMatrix{const_cast<T*>(go + (n * g.OC + gi * OCg) * P), 0, P, 1}, GemmMatrix{col, 0, P, 1});
        col2im_conv_add(g, Cg, col, gxn + gi * Cg * g.H * g.W);
      }
    });
  }
  if (gw.defined()) {
    // Serial over images (each gemm is parallel): gW_g [OCg, KK] += gout_g [OCg, P] @ col^T.
    const T* x = static_cast<const T*>(input.data_ptr());
    T* w = static_cast<T*>(gw.data_ptr());
    std::fill(w, w + g.OC * KK, T(0));
    std::vector<T> col(static_cast<size_t>(KK * P));
    for (int64_t n = 0; n < g.N; ++n)
      for (int64_t gi = 0; gi < G; ++gi) {
        im2col(g, Cg, x + (n * g.C + gi * Cg) * g.H * g.W, col.data());
        gemm("convolution_backward", dt, 1, OCg, KK, P, GemmMatrix{const_cast<T*>(go + (n * g.OC + gi * OCg) * P), 0, P, 1},
             GemmMatrix{col.data(), 0, 1, P}, GemmMatrix{w + gi * OCg * KK, 0, KK, 1}, 1, 1);
      }
  }
  if (gb.defined()) {
    T* b = static_cast<T*>(gb.data_ptr());
    for (int64_t oc = 0; oc < g.OC; ++oc) {
      T acc = 0;
      for (int64_t n = 0; n < g.N; ++n) {
        const T* p = go + (n * g.OC + oc) * P;
        for (int64_t i = 0; i < P; ++i) acc += p[i];
      }
      b[oc] = acc;
    }
  }
}

void conv2d_backward_dispatch(const Conv2dGeometry& g, const Tensor& gin, const Tensor& gw, const Tensor& gb,
                              const Tensor& gout, const Tensor& input, const Tensor& weight) {
  const DType dt = gout.dtype();
  auto zero = [](const Tensor& t) {
    if (t.defined() && t.numel() > 0) std::memset(t.data_ptr(), 0, static_cast<size_t>(t.nbytes()));
  };
  if (gout.numel() == 0 || g.C == 0) {  // nothing flows back: every gradient is zero
    zero(gin), zero(gw), zero(gb);
    return;
  }
  if (dt == DType::Float32) {
    const Tensor go = onednn_strides_ok(gout) ? gout : contiguous_copy(gout);
    try {
      if (gin.defined() && gw.defined()) {
        const Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
        onednn::conv2d_backward_f32(g, static_cast<const float*>(go.data_ptr()), strides4(go),
                                    static_cast<const float*>(x.data_ptr()), strides4(x),
                                    static_cast<const float*>(weight.data_ptr()), strides4(weight),
                                    static_cast<float*>(gin.data_ptr()), static_cast<float*>(gw.data_ptr()),
                                    gb.defined() ? static_cast<float*>(gb.data_ptr()) : nullptr);
        return;
      }
      if (gin.defined())
        onednn::conv2d_backward_data_f32(g, static_cast<const float*>(go.data_ptr()), strides4(go),
                                         static_cast<const float*>(weight.data_ptr()), strides4(weight),
                                         static_cast<float*>(gin.data_ptr()));
      if (gw.defined()) {
        const Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
        onednn::conv2d_backward_weights_f32(g, static_cast<const float*>(x.data_ptr()), strides4(x),
                                            static_cast<const float*>(go.data_ptr()), strides4(go),
                                            static_cast<float*>(gw.data_ptr()),
                                            gb.defined() ? static_cast<float*>(gb.data_ptr()) : nullptr);
      } else if (gb.defined()) {
        conv2d_backward_generic<float>(g, Tensor(), Tensor(), gb, contiguous_copy(gout), Tensor(), Tensor());
      }
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: the portable loops below.
    }
  }
  if (dt == DType::BFloat16 && !(gb.defined() && !gw.defined())) {
    // oneDNN's bfloat16 backward primitives: float32 accumulation, one rounding per result.
    const Tensor go = onednn_strides_ok(gout) ? gout : contiguous_copy(gout);
    try {
      if (gin.defined() && gw.defined()) {
        const Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
        const Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
        onednn::conv2d_backward_bf16(g, go.data_ptr(), strides4(go), x.data_ptr(), strides4(x), w.data_ptr(),
                                     strides4(w), gin.data_ptr(), gw.data_ptr(), gb.defined() ? gb.data_ptr() : nullptr);
        return;
      }
      if (gin.defined()) {
        const Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
        onednn::conv2d_backward_data_bf16(g, go.data_ptr(), strides4(go), w.data_ptr(), strides4(w), gin.data_ptr());
      }
      if (gw.defined()) {
        const Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
        onednn::conv2d_backward_weights_bf16(g, x.data_ptr(), strides4(x), go.data_ptr(), strides4(go), gw.data_ptr(),
                                             gb.defined() ? gb.data_ptr() : nullptr);
      }
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: widen to float32 below (it rewrites every gradient).
    }
  }
  if (is_reduced_float(dt)) {  // float16 (and declined bfloat16): float32 compute (oneDNN), one rounding
    auto f32 = [](const Tensor& t) { return t.defined() ? empty_tensor(t.sizes(), DType::Float32) : Tensor(); };
    const Tensor fi = f32(gin), fw = f32(gw), fb = f32(gb);
    conv2d_backward_dispatch(g, fi, fw, fb, converted(gout, DType::Float32), converted(input, DType::Float32),
                             converted(weight, DType::Float32));
    if (gin.defined()) copy_kernel(gin, fi);
    if (gw.defined()) copy_kernel(gw, fw);
    if (gb.defined()) copy_kernel(gb, fb);
    return;
  }
  const Tensor go = contiguous_copy(gout);
  const Tensor x = gw.defined() ? contiguous_copy(input) : Tensor();
  const Tensor w = gin.defined() ? contiguous_copy(weight) : Tensor();
  switch (dt) {
    case DType::Float32: return conv2d_backward_generic<float>(g, gin, gw, gb, go, x, w);
    case DType::Float64: return conv2d_backward_generic<double>(g, gin, gw, gb, go, x, w);
    default: break;
  }
  throw TypeError(str_cat("[convolution_backward] unsupported dtype ", dtype_name(dt)));
}

void conv_dispatch(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                   const Tensor& bias, bool transposed) {
  if (out.numel() == 0) return;  // includes PyTorch's zero-channel case (output has 0 channels)
  const DType dt = out.dtype();
  // oneDNN 2.6 has no dilated deconvolution with negative end padding (output_padding >
  // padding); that case, and any primitive oneDNN declines, runs the portable loop.
  const bool negative_pad = g.pad_b < 0 || g.pad_r < 0;
  if (dt == DType::Float32 && !(transposed && negative_pad && (g.dil_h > 1 || g.dil_w > 1))) {
    Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
    Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
    Tensor b = bias.defined() ? contiguous_copy(bias) : bias;
    const float* bp = b.defined() ? static_cast<const float*>(b.data_ptr()) : nullptr;
    auto* xp = static_cast<const float*>(x.data_ptr());
    auto* wp = static_cast<const float*>(w.data_ptr());
    auto* yp = static_cast<float*>(out.data_ptr());
    try {
      if (transposed) onednn::conv_transpose2d_f32(g, xp, strides4(x), wp, strides4(w), bp, yp);
      else onednn::conv2d_f32(g, xp, strides4(x), wp, strides4(w), bp, yp);
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: fall through to the portable loop.
    }
  }
  if (dt == DType::BFloat16 && !(transposed && negative_pad && (g.dil_h > 1 || g.dil_w > 1))) {
    // oneDNN's bfloat16 convolution: float32 accumulation, one rounding, no widening copies.
    Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
    Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
    Tensor b = bias.defined() ? contiguous_copy(bias) : bias;
    try {
      onednn::conv2d_bf16(g, x.data_ptr(), strides4(x), w.data_ptr(), strides4(w), b.defined() ? b.data_ptr() : nullptr,
                          out.data_ptr(), transposed);
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: widen to float32 below.
    }
  }
  if (is_reduced_float(dt)) {  // float16 (and declined bfloat16): float32 compute (oneDNN), one rounding
    Tensor y = empty_tensor(out.sizes(), DType::Float32);
    conv_dispatch(g, y, converted(input, DType::Float32), converted(weight, DType::Float32),
                  converted(bias, DType::Float32), transposed);
    copy_kernel(out, y);
    return;
  }
  Tensor x = contiguous_copy(input), w = contiguous_copy(weight);
  Tensor b = bias.defined() ? contiguous_copy(bias) : bias;
  auto run = [&](auto tag) {
    using T = decltype(tag);
    if (transposed) conv_transpose2d_generic<T>(g, out, x, w, b);
    else conv2d_generic<T>(g, out, x, w, b);
  };
  switch (dt) {
    case DType::Float32: return run(float{});
    case DType::Float64: return run(double{});
    case DType::UInt8: return run(uint8_t{});
    case DType::Int8: return run(int8_t{});
    case DType::Int16: return run(int16_t{});
    case DType::Int32: return run(int32_t{});
    case DType::Int64: return run(int64_t{});
    default: break;
  }
  throw TypeError(str_cat("[", transposed ? "conv_transpose2d" : "conv2d", "] unsupported dtype ", dtype_name(dt)));
}

}  // namespace

void conv2d_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                    const Tensor& bias) {
  conv_dispatch(g, out, input, weight, bias, false);
}

void conv2d_backward(const Conv2dGeometry& g, const Tensor& grad_input, const Tensor& grad_weight,
                     const Tensor& grad_bias, const Tensor& grad_output, const Tensor& input, const Tensor& weight) {
  conv2d_backward_dispatch(g, grad_input, grad_weight, grad_bias, grad_output, input, weight);
}

int64_t conv2d_backward_batch_chunk(const Conv2dGeometry& g, DType dt, bool with_input_grad) {
  return dt == DType::Float32 && g.C > 0 && g.OC > 0 ? onednn::backward_chunk_images_f32(g, with_input_grad) : 0;
}

void conv2d_block_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                          const Tensor& bias, bool relu, const Pool2dGeometry* pool, const Tensor& indices) {
  if (out.numel() == 0) return;
  // Without pooling the block is a conv + ReLU: a 1x1, stride-1 "pool" is the relayout.
  Pool2dGeometry pg;
  if (pool) {
    pg = *pool;
  } else {
    pg.N = g.N, pg.C = g.OC, pg.H = pg.OH = g.OH, pg.W = pg.OW = g.OW;
  }
  if (out.dtype() == DType::Float32) {
    Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
    Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
    Tensor b = bias.defined() ? contiguous_copy(bias) : bias;
    float* yp = static_cast<float*>(out.data_ptr());
    const int64_t os[4] = {out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
    uint8_t* ip = indices.defined() ? static_cast<uint8_t*>(indices.data_ptr()) : nullptr;
    const int64_t ins = pg.C * pg.OH * pg.OW;  // indices per image
    try {
      onednn::conv2d_f32_to_layout(g, static_cast<const float*>(x.data_ptr()), strides4(x),
                                   static_cast<const float*>(w.data_ptr()), strides4(w),
                                   b.defined() ? static_cast<const float*>(b.data_ptr()) : nullptr,
                                   [&](int64_t n0, int64_t n, const void* data, int64_t cblock, const int64_t* st) {
                                     Pool2dGeometry slice = pg;
                                     slice.N = n;
                                     relu_max_pool_layout_f32(slice, static_cast<const float*>(data), cblock, st, relu,
                                                              yp + n0 * os[0], os, ip ? ip + n0 * ins : nullptr);
                                   });
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: the unfused kernels below.
    }
  }
  if (out.dtype() == DType::BFloat16) {
    // The bfloat16 convolution of conv2d_forward (same primitives and slices), ReLU and
    // pooling read from the primitive's layout: bitwise the unfused bfloat16 ops.
    Tensor x = onednn_strides_ok(input) ? input : contiguous_copy(input);
    Tensor w = onednn_strides_ok(weight) ? weight : contiguous_copy(weight);
    Tensor b = bias.defined() ? contiguous_copy(bias) : bias;
    auto* yp = static_cast<BFloat16*>(out.data_ptr());
    const int64_t os[4] = {out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
    uint8_t* ip = indices.defined() ? static_cast<uint8_t*>(indices.data_ptr()) : nullptr;
    const int64_t ins = pg.C * pg.OH * pg.OW;
    try {
      onednn::conv2d_bf16_to_layout(g, x.data_ptr(), strides4(x), w.data_ptr(), strides4(w),
                                    b.defined() ? b.data_ptr() : nullptr,
                                    [&](int64_t n0, int64_t n, const void* data, int64_t cblock, const int64_t* st) {
                                      Pool2dGeometry slice = pg;
                                      slice.N = n;
                                      relu_max_pool_layout_bf16(slice, static_cast<const BFloat16*>(data), cblock, st,
                                                                relu, yp + n0 * os[0], os, ip ? ip + n0 * ins : nullptr);
                                    });
      return;
    } catch (const RuntimeError&) {
      // oneDNN declined this geometry: the unfused kernels below.
    }
  }
  Tensor y = empty_tensor({g.N, g.OC, g.OH, g.OW}, out.dtype());
  conv_dispatch(g, y, input, weight, bias, false);
  if (relu || pool) {
    const int64_t st[4] = {g.OC * g.OH * g.OW, g.OH * g.OW, g.OW, 1};
    const int64_t os[4] = {out.stride(0), out.stride(1), out.stride(2), out.stride(3)};
    uint8_t* ip = indices.defined() ? static_cast<uint8_t*>(indices.data_ptr()) : nullptr;
    if (out.dtype() == DType::Float32)
      relu_max_pool_layout_f32(pg, static_cast<const float*>(y.data_ptr()), 1, st, relu,
                               static_cast<float*>(out.data_ptr()), os, ip);
    else if (out.dtype() == DType::BFloat16)
      relu_max_pool_layout_bf16(pg, static_cast<const BFloat16*>(y.data_ptr()), 1, st, relu,
                                static_cast<BFloat16*>(out.data_ptr()), os, ip);
    else
      throw TypeError(str_cat("[_fused_conv2d] got dtype ", dtype_name(out.dtype()), ", expected float32 or bfloat16"));
  } else {
    copy_kernel(out, y);
  }
}

void conv_transpose2d_forward(const Conv2dGeometry& g, const Tensor& out, const Tensor& input, const Tensor& weight,
                              const Tensor& bias) {
  conv_dispatch(g, out, input, weight, bias, true);
}

}  // namespace tandem::kernels
