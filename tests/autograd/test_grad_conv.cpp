// The dedicated backward ops of the conv / pool / relu family: convolution_backward (oneDNN
// backward-data / backward-weights for float32, im2col + gemm for float64),
// max_pool2d_backward and threshold_backward. gradcheck and gradgradcheck in float64 for
// every geometry the forward ops take (groups, stride, dilation, padding, asymmetric
// 'same' padding, unbatched input, transposed layouts), the float32 (oneDNN) path against
// the float64 loops, the masks, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tandem/core/memory_watch.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/kernels/cpu/onednn.h"
#include "support/grad_helpers.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::Fn;
using tandem_test::wrap;
using tandem_test::leaf;
using autograd::gradcheck;
using autograd::gradgradcheck;

namespace {

void check(Fn f, const std::vector<Tensor>& in, bool second = false) {
  EXPECT_TRUE(gradcheck(wrap(f), in));
  if (second) {
    EXPECT_TRUE(gradgradcheck(wrap(f), in));
  }
}

std::vector<AttrValue> conv_bwd_attrs(std::vector<int64_t> stride, std::vector<int64_t> pad4,
                                      std::vector<int64_t> dil, int64_t groups, std::vector<int64_t> mask) {
  return {AttrValue(stride), AttrValue(pad4), AttrValue(dil), AttrValue(groups), AttrValue(mask)};
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return max(abs(a.to(kFloat64) - b.to(kFloat64))).item<double>();
}

double max_abs(const Tensor& a) { return max(abs(a.to(kFloat64))).item<double>(); }

}  // namespace

// ---------------------------------------------------------------- conv2d through convolution_backward
TEST(GradConvBackward, Conv2dGeometries) {
  Tensor x = leaf({2, 4, 7, 6}, 1), w = leaf({6, 2, 3, 2}, 2), b = leaf({6}, 3);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, {0}, {1}, 2); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2, 3}, {1, 2}, {1}, 2); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1, 2}, {2, 0}, {2, 3}, 2); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], Tensor(), {3}, {1}, {2}, 1); }, {x, leaf({3, 4, 2, 2}, 4)});
  // Depthwise (groups == channels) and a 1x1 kernel.
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, {1}, {1}, 4); }, {x, leaf({4, 1, 3, 3}, 5), leaf({4}, 6)});
  check([](auto& v) { return conv2d(v[0], v[1], v[2]); }, {x, leaf({3, 4, 1, 1}, 7), leaf({3}, 8)});
}

TEST(GradConvBackward, Conv2dSamePaddingAsymmetric) {
  // Even kernels with padding "same" pad one more at the bottom/right than at the top/left.
  Tensor x = leaf({2, 3, 6, 5}, 10), w = leaf({4, 3, 2, 4}, 11), b = leaf({4}, 12);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Same); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Same); },
        {leaf({1, 2, 4, 3}, 13), leaf({2, 2, 2, 2}, 14), leaf({2}, 15)}, true);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Same, {2, 1}); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Valid, {1, 1}); }, {x, w, b});
}

TEST(GradConvBackward, Conv2dUnbatchedAndNonContiguous) {
  Tensor xu = leaf({3, 6, 5}, 20), w = leaf({2, 3, 2, 3}, 21), b = leaf({2}, 22);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2}, {1}); }, {xu, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Same, {1, 2}); }, {xu, w, b}, true);
  // Transposed input and weight views (oneDNN and the loops see strided memory).
  Tensor x = leaf({2, 3, 5, 6}, 23);
  check([](auto& v) { return conv2d(v[0].transpose(2, 3), v[1].transpose(2, 3), v[2], {1}, {1}); }, {x, w, b});
  check([](auto& v) { return conv1d(v[0], v[1], v[2], {2}, {1}, {2}, 2); },
        {leaf({2, 4, 9}, 24), leaf({6, 2, 3}, 25), leaf({6}, 26)}, true);
}

TEST(GradConvBackward, Conv2dDoubleBackward) {
  Tensor x = leaf({1, 4, 4, 4}, 30), w = leaf({4, 2, 2, 2}, 31), b = leaf({4}, 32);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2, 1}, {1, 0}, {1, 2}, 2); }, {x, w, b}, true);
  check([](auto& v) { return conv2d(v[0], v[1], Tensor(), {1}, {2}, {2}); }, {x, leaf({2, 4, 2, 2}, 33)}, true);
}

TEST(GradConvBackward, OpIsDifferentiableAgain) {
  // convolution_backward as a function of (grad_output, input, weight), all three outputs.
  Tensor go = leaf({2, 4, 3, 5}, 40), x = leaf({2, 2, 5, 6}, 41), w = leaf({4, 1, 3, 2}, 42);
  const auto attrs = conv_bwd_attrs({2, 1}, {1, 0, 1, 0}, {1, 1}, 2, {1, 1, 1});
  const OpDef& op = get_op("convolution_backward");
  for (int k = 0; k < 3; ++k) {
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& v) { return std::vector<Tensor>{dispatch(op, {v[0], v[1], v[2]}, attrs)[k]}; },
        {go, x, w}))
        << "output " << k;
  }
}

TEST(GradConvBackward, OutputMask) {
  Tensor go = leaf({2, 4, 5, 4}, 50), x = leaf({2, 2, 5, 4}, 51), w = leaf({4, 2, 3, 3}, 52);
  const OpDef& op = get_op("convolution_backward");
  OpOutputs all = dispatch(op, {go, x, w}, conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1, 1}));
  OpOutputs only_w = dispatch(op, {go, x, w}, conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 1, 0}));
  EXPECT_EQ(only_w[0].numel(), 0);
  EXPECT_EQ(only_w[2].numel(), 0);
  EXPECT_EQ(max_abs_diff(only_w[1], all[1]), 0.0);
  OpOutputs only_b = dispatch(op, {go, x, w}, conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 0, 1}));
  EXPECT_LT(max_abs_diff(only_b[2], sum(go, {0, 2, 3})), 1e-12);
  EXPECT_EQ(only_b[1].numel(), 0);
}

// The float32 path (oneDNN's primitives) against the float64 loops, over geometries the
// primitives handle differently (groups, stride, dilation, asymmetric padding, 1x1,
// strided memory). oneDNN accumulates in float32: compare relative to the magnitude.
TEST(GradConvBackward, Float32MatchesFloat64) {
  struct Case {
    std::vector<int64_t> x, w, stride, pad4, dil;
    int64_t groups;
  };
  const std::vector<Case> cases = {
      {{8, 3, 12, 11}, {16, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},
      {{4, 8, 9, 10}, {12, 4, 3, 2}, {2, 1}, {1, 0, 1, 0}, {1, 2}, 2},
      {{3, 6, 10, 7}, {6, 1, 3, 3}, {1, 2}, {0, 1, 1, 2}, {2, 1}, 6},
      {{5, 16, 7, 7}, {32, 16, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1},
      {{2, 4, 8, 8}, {4, 4, 2, 2}, {1, 1}, {0, 0, 1, 1}, {1, 1}, 1},  // 'same' for an even kernel
      {{128, 32, 14, 14}, {64, 32, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1},  // the CNN's second layer
  };
  const OpDef& op = get_op("convolution_backward");
  uint64_t seed = 60;
  for (const Case& cs : cases) {
    manual_seed(seed++);
    Tensor x = randn(cs.x), w = randn(cs.w);
    const int64_t eh = cs.dil[0] * (cs.w[2] - 1) + 1, ew = cs.dil[1] * (cs.w[3] - 1) + 1;
    const int64_t oh = (cs.x[2] + cs.pad4[0] + cs.pad4[2] - eh) / cs.stride[0] + 1;
    const int64_t ow = (cs.x[3] + cs.pad4[1] + cs.pad4[3] - ew) / cs.stride[1] + 1;
    Tensor go = randn({cs.x[0], cs.w[0], oh, ow});
    const auto attrs = conv_bwd_attrs(cs.stride, cs.pad4, cs.dil, cs.groups, {1, 1, 1});
    kernels::onednn::clear_cache();
    OpOutputs f = dispatch(op, {go, x, w}, attrs);
    // float32 ran oneDNN's backward-data and backward-weights primitives (not the loops),
    // in two chunks of images when the output gradient exceeds 4 MiB (the CNN's layer).
    const bool chunked = go.nbytes() > (int64_t{4} << 20);
    EXPECT_EQ(kernels::onednn::cache_stats().entries, chunked ? 4 : 2) << "case x" << IntArrayRef(cs.x);
    OpOutputs d = dispatch(op, {go.to(kFloat64), x.to(kFloat64), w.to(kFloat64)}, attrs);
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(f[k].dtype(), kFloat32);
      EXPECT_LE(max_abs_diff(f[k], d[k]), 1e-5 * (1.0 + max_abs(d[k]))) << "case x" << IntArrayRef(cs.x) << " output " << k;
    }
    // Strided (transposed) memory for every operand gives the same numbers.
    Tensor got = go.transpose(2, 3).contiguous().transpose(2, 3);
    Tensor xt = x.transpose(2, 3).contiguous().transpose(2, 3);
    Tensor wt = w.transpose(0, 1).contiguous().transpose(0, 1);
    OpOutputs s = dispatch(op, {got, xt, wt}, attrs);
    for (int k = 0; k < 3; ++k) EXPECT_LE(max_abs_diff(s[k], f[k]), 1e-5 * (1.0 + max_abs(d[k])));
  }
}

// A float32 batch whose output gradient exceeds 4 MiB runs in chunks of images (oneDNN
// copies the gradient into its blocked layout per call; whole, that copy doubled the
// memory of a training step's first-layer backward). The weight and bias gradients sum
// the chunks' partial sums; the numbers match float64 and the kernel's own allocations
// stay near one chunk's copy.
TEST(GradConvBackward, LargeFloat32BatchesRunInChunksOfImages) {
  const OpDef& op = get_op("convolution_backward");
  const auto attrs_w = conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {0, 1, 1});  // a first layer: no grad_input
  const auto attrs_all = conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1, 1});
  manual_seed(70);
  Tensor x = randn({160, 1, 28, 28}), w = randn({32, 1, 3, 3}), go = randn({160, 32, 28, 28});
  ASSERT_GT(go.nbytes(), int64_t{12} << 20);  // 16.1 MB: four chunks of 41 images (100 KB each)
  OpOutputs d = dispatch(op, {go.to(kFloat64), x.to(kFloat64), w.to(kFloat64)}, attrs_all);
  dispatch(op, {go, x, w}, attrs_w);  // primitives created, caches warm
  const int64_t before = memory::stats().bytes_in_use;
  memory::watch_reset();
  OpOutputs f = dispatch(op, {go, x, w}, attrs_w);
  const int64_t kernel_bytes = memory::watch_peak() - before;
  EXPECT_LT(kernel_bytes, go.nbytes() / 2) << "the whole gradient was copied";
  EXPECT_EQ(f[0].numel(), 0);
  for (int k = 1; k < 3; ++k)
    EXPECT_LE(max_abs_diff(f[k], d[k]), 1e-5 * (1.0 + max_abs(d[k]))) << "output " << k;
  // With the input gradient too (a later layer), and the same weight gradient bytes.
  OpOutputs a = dispatch(op, {go, x, w}, attrs_all);
  for (int k = 0; k < 3; ++k)
    EXPECT_LE(max_abs_diff(a[k], d[k]), 1e-5 * (1.0 + max_abs(d[k]))) << "output " << k;
  EXPECT_EQ(max_abs_diff(a[1], f[1]), 0.0);
  EXPECT_EQ(max_abs_diff(a[2], f[2]), 0.0);
  // Deterministic: the same call gives the same bytes.
  OpOutputs again = dispatch(op, {go, x, w}, attrs_w);
  EXPECT_EQ(max_abs_diff(again[1], f[1]), 0.0);
}

TEST(GradConvBackward, BFloat16) {
  manual_seed(70);
  Tensor x = randn({2, 3, 6, 6}), w = randn({4, 3, 3, 3}), go = randn({2, 4, 6, 6});
  const auto attrs = conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1, 1});
  const OpDef& op = get_op("convolution_backward");
  OpOutputs h = dispatch(op, {go.to(kBFloat16), x.to(kBFloat16), w.to(kBFloat16)}, attrs);
  OpOutputs d = dispatch(op, {go.to(kBFloat16).to(kFloat64), x.to(kBFloat16).to(kFloat64), w.to(kBFloat16).to(kFloat64)},
                         attrs);
  for (int k = 0; k < 3; ++k) {
    EXPECT_EQ(h[k].dtype(), kBFloat16);
    EXPECT_LE(max_abs_diff(h[k], d[k]), 1e-2 * (1.0 + max_abs(d[k]))) << "output " << k;
  }
}

TEST(GradConvBackward, Errors) {
  const OpDef& op = get_op("convolution_backward");
  Tensor go = zeros({2, 4, 5, 5}), x = zeros({2, 2, 5, 5}), w = zeros({4, 2, 3, 3});
  const auto ok = conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1, 1});
  EXPECT_NO_THROW(dispatch(op, {go, x, w}, ok));
  EXPECT_THROW(dispatch(op, {zeros({2, 4, 4, 5}), x, w}, ok), ShapeError);  // wrong grad_output size
  EXPECT_THROW(dispatch(op, {go, zeros({2, 5, 5}), w}, ok), ShapeError);   // 3-D input
  EXPECT_THROW(dispatch(op, {go, x, zeros({4, 3, 3, 3})}, ok), ShapeError);  // channel mismatch
  EXPECT_THROW(dispatch(op, {go, x.to(kFloat64), w}, ok), TypeError);
  EXPECT_THROW(dispatch(op, {go.to(kInt64), x.to(kInt64), w.to(kInt64)}, ok), TypeError);
  EXPECT_THROW(dispatch(op, {go, x, w}, conv_bwd_attrs({1, 1}, {1, 1}, {1, 1}, 1, {1, 1, 1})), ValueError);
  EXPECT_THROW(dispatch(op, {go, x, w}, conv_bwd_attrs({0, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1, 1})), ValueError);
  EXPECT_THROW(dispatch(op, {go, x, w}, conv_bwd_attrs({1, 1}, {1, 1, 1, 1}, {1, 1}, 1, {1, 1})), ValueError);
  try {
    dispatch(op, {zeros({2, 4, 4, 5}), x, w}, ok);
    FAIL() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("[convolution_backward]", 0), 0u) << e.what();
  }
}

// ---------------------------------------------------------------- conv_transpose2d
TEST(GradConvBackward, ConvTranspose2d) {
  Tensor x = leaf({1, 4, 3, 3}, 80), w = leaf({4, 2, 2, 2}, 81), b = leaf({4}, 82);
  check([](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {2, 1}, {1, 0}, {1, 0}, 2, {1, 2}); }, {x, w, b}, true);
  check([](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {3}, {2}, {2}, 2, {2}); }, {x, w, b});
  Tensor xu = leaf({4, 3, 5}, 83);
  check([](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {1}, {1}, {0}, 2); }, {xu, w, b});
}

// ---------------------------------------------------------------- max_pool2d_backward
TEST(GradMaxPoolBackward, GradcheckAndDoubleBackward) {
  Tensor x = leaf({2, 3, 7, 6}, 90);
  check([](auto& v) { return max_pool2d(v[0], {2}); }, {x}, true);
  check([](auto& v) { return max_pool2d(v[0], {3}, {2}, {1}, {1}, true); }, {x}, true);
  check([](auto& v) { return max_pool2d(v[0], {3, 2}, {1}, {1, 0}, {2, 1}); }, {x}, true);  // overlapping
  Tensor xu = leaf({3, 5, 8}, 91);
  check([](auto& v) { return max_pool2d(v[0].transpose(1, 2), {2}, {1}); }, {xu}, true);
}

// The gradient equals scattering grad_output at max_pool2d_with_indices' indices, for
// every dtype, with ties, NaN and -inf windows (PyTorch's argmax rule).
TEST(GradMaxPoolBackward, MatchesIndices) {
  const OpDef& op = get_op("max_pool2d_backward");
  struct Case {
    std::vector<int64_t> k, s, p, d;
    bool ceil;
  };
  const std::vector<Case> cases = {{{2}, {}, {0}, {1}, false},      {{2}, {}, {0}, {1}, true},
                                   {{3}, {2}, {1}, {1}, true},      {{3, 2}, {1}, {1, 0}, {2, 1}, false},
                                   {{2, 3}, {2, 1}, {1, 1}, {1, 1}, false}};
  manual_seed(100);
  Tensor base = randn({2, 3, 7, 9});
  // Ties, NaN and an all -inf window in plane 0.
  base = where(lt(abs(base), Scalar(0.3)), Scalar(0.25), base);
  Tensor x = base.clone();
  auto put = [&](int64_t h, int64_t w, double v) { x.select(0, 0).select(0, 0).select(0, h).select(0, w).fill_(v); };
  put(0, 0, std::nan(""));
  put(0, 1, std::nan(""));
  for (int64_t h = 4; h < 6; ++h)
    for (int64_t w = 4; w < 6; ++w) put(h, w, -std::numeric_limits<double>::infinity());
  for (DType dt : {kFloat32, kFloat64, kBFloat16}) {
    const Tensor xd = x.to(dt);
    for (const Case& cs : cases) {
      std::vector<AttrValue> attrs{AttrValue(cs.k), AttrValue(cs.s), AttrValue(cs.p), AttrValue(cs.d),
                                   AttrValue(cs.ceil)};
      auto [y, idx] = max_pool2d_with_indices(xd, cs.k, cs.s, cs.p, cs.d, cs.ceil);
      // The forward without indices (a vectorised path for 2x2 / stride 2) gives the same
      // values, NaN where the indexed loop has NaN.
      Tensor yv = max_pool2d(xd, cs.k, cs.s, cs.p, cs.d, cs.ceil);
      Tensor same = logical_or(eq(yv, y), logical_and(isnan(yv), isnan(y)));
      EXPECT_TRUE(same.all().item<bool>()) << dtype_name(dt) << " k" << IntArrayRef(cs.k);
      Tensor go = randn(y.sizes()).to(dt);
      Tensor want = zeros({6, 63}, dt).scatter_add(1, idx.reshape({6, -1}), go.reshape({6, -1})).reshape(xd.sizes());
      Tensor got = dispatch1(op, {go, xd}, attrs);
      EXPECT_EQ(got.dtype(), dt);
      EXPECT_LE(max_abs_diff(got, want), dt == kBFloat16 ? 2e-2 : 1e-6) << dtype_name(dt) << " k" << IntArrayRef(cs.k);
    }
  }
}

TEST(GradMaxPoolBackward, Errors) {
  const OpDef& op = get_op("max_pool2d_backward");
  std::vector<AttrValue> attrs{AttrValue(std::vector<int64_t>{2}), AttrValue(std::vector<int64_t>{}),
                               AttrValue(std::vector<int64_t>{0}), AttrValue(std::vector<int64_t>{1}), AttrValue(false)};
  Tensor x = zeros({2, 3, 6, 6});
  EXPECT_NO_THROW(dispatch1(op, {zeros({2, 3, 3, 3}), x}, attrs));
  EXPECT_THROW(dispatch1(op, {zeros({2, 3, 3, 2}), x}, attrs), ShapeError);
  EXPECT_THROW(dispatch1(op, {zeros({2, 3, 3, 3}, kFloat64), x}, attrs), TypeError);
  EXPECT_THROW(dispatch1(op, {zeros({2, 3, 3, 3}, kInt64), x.to(kInt64)}, attrs), TypeError);
}

// ---------------------------------------------------------------- threshold_backward
TEST(GradThresholdBackward, ValuesAndGradients) {
  Tensor g = from_vector<float>({1, 2, 3, 4, 5}, {5}, kFloat32);
  Tensor y = from_vector<float>({-1, 0, 0.5f, std::nanf(""), 2}, {5}, kFloat32);
  Tensor r = threshold_backward(g, y, 0);
  const std::vector<float> want{0, 0, 3, 4, 5};  // NaN is not <= 0: the gradient passes (PyTorch)
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(r.select(0, i).item<float>(), want[static_cast<size_t>(i)]) << i;
  EXPECT_EQ(threshold_backward(g, y, 1).select(0, 2).item<float>(), 0.0f);
  Tensor x = leaf({3, 4}, 110);
  check([](auto& v) { return relu(v[0]) * v[0]; }, {x}, true);
  check([](auto& v) { return threshold_backward(v[0], v[1].detach(), 0.2); }, {leaf({3, 4}, 111), x}, true);
  EXPECT_THROW(threshold_backward(g.to(kBool), y.to(kBool), 0), TypeError);
  EXPECT_THROW(threshold_backward(g, zeros({4}), 0), ShapeError);
}
