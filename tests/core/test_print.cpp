// Tests for Tensor::to_string / operator<< (src/tandem/core/print.cpp).
//
// The PrintTorchOracle cases compare exact strings with PyTorch 1.13's repr of the same
// tensor, produced by Debian's python3-torch (e.g.
//   /usr/bin/python3 -c "import torch; print(repr(torch.arange(30., dtype=torch.float64)))")
// with "torch." removed from dtype names. Values are built in float64 and converted to
// the tensor's dtype on both sides (torch.tensor(values, dtype=torch.float64).to(dtype),
// and (torch.arange(n, dtype=torch.float64) * step + start).to(dtype) for arange_like).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A contiguous tensor of dtype_of<T> holding `values` (double, converted like .to(dtype)).
template <typename T>
Tensor from_values(std::vector<int64_t> sizes, std::vector<double> values) {
  Tensor t = empty_tensor(sizes, dtype_of_v<T>);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  T* p = t.data_ptr<T>();
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<T, bool>) p[i] = values[i] != 0.0;
    else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) p[i] = T(static_cast<float>(values[i]));
    else p[i] = static_cast<T>(values[i]);
  }
  return t;
}

// start + i * step for i in [0, numel), computed in double with two roundings as torch does.
template <typename T>
Tensor arange_like(std::vector<int64_t> sizes, double start, double step) {
  std::vector<double> values(static_cast<size_t>(multiply_integers(sizes)));
  for (size_t i = 0; i < values.size(); ++i) {
    volatile double prod = static_cast<double>(i) * step;  // volatile: no fused multiply-add
    values[i] = prod + start;
  }
  return from_values<T>(std::move(sizes), std::move(values));
}

// The transpose of a 2-d tensor as a strided alias (like t.t()).
Tensor transpose2d(const Tensor& t) {
  return make_alias(t, {t.size(1), t.size(0)}, {t.stride(1), t.stride(0)}, t.storage_offset());
}

// Elements [start, start + len) of a 1-d tensor as an alias with a storage offset.
Tensor offset_view(const Tensor& t, int64_t start, int64_t len) {
  return make_alias(t, {len}, {t.stride(0)}, t.storage_offset() + start * t.stride(0));
}

Tensor with_requires_grad(Tensor t) {
  t.impl()->set_requires_grad_flag(true);
  return t;
}

TEST(PrintTorchOracle, Int64) {
  EXPECT_EQ(from_values<int64_t>({3}, {1.0, 2.0, 3.0}).to_string(),
            R"(tensor([1, 2, 3]))");
}

TEST(PrintTorchOracle, Int64Widths) {
  EXPECT_EQ(from_values<int64_t>({4}, {1.0, -100.0, 10000.0, 0.0}).to_string(),
            R"(tensor([    1,  -100, 10000,     0]))");
}

TEST(PrintTorchOracle, Int8Neg) {
  EXPECT_EQ(from_values<int8_t>({3}, {-128.0, 0.0, 127.0}).to_string(),
            R"(tensor([-128,    0,  127], dtype=int8))");
}

TEST(PrintTorchOracle, UInt8) {
  EXPECT_EQ(from_values<uint8_t>({3}, {0.0, 7.0, 255.0}).to_string(),
            R"(tensor([  0,   7, 255], dtype=uint8))");
}

TEST(PrintTorchOracle, Int16) {
  EXPECT_EQ(from_values<int16_t>({2, 2}, {1.0, -2.0, 300.0, 4.0}).to_string(),
            R"(tensor([[  1,  -2],
        [300,   4]], dtype=int16))");
}

TEST(PrintTorchOracle, FloatIntegral) {
  EXPECT_EQ(from_values<float>({3}, {1.0, 2.0, 3.0}).to_string(),
            R"(tensor([1., 2., 3.]))");
}

TEST(PrintTorchOracle, FloatIntegralNeg) {
  EXPECT_EQ(from_values<float>({3}, {-1.0, 20.0, 300.0}).to_string(),
            R"(tensor([ -1.,  20., 300.]))");
}

TEST(PrintTorchOracle, FloatFractional) {
  EXPECT_EQ(from_values<float>({3}, {1.5, -2.25, 3.125}).to_string(),
            R"(tensor([ 1.5000, -2.2500,  3.1250]))");
}

TEST(PrintTorchOracle, FloatRounding) {
  EXPECT_EQ(from_values<float>({4}, {0.1, 0.12345, 2.71828, -1234.5678}).to_string(),
            R"(tensor([ 1.0000e-01,  1.2345e-01,  2.7183e+00, -1.2346e+03]))");
}

TEST(PrintTorchOracle, FloatRoundingFixed) {
  EXPECT_EQ(from_values<float>({4}, {0.1, 0.12345, 2.71828, -12.34567}).to_string(),
            R"(tensor([  0.1000,   0.1235,   2.7183, -12.3457]))");
}

TEST(PrintTorchOracle, FloatSmallFixed) {
  EXPECT_EQ(from_values<float>({3}, {0.00015, 0.1, 0.00025}).to_string(),
            R"(tensor([0.0002, 0.1000, 0.0003]))");
}

TEST(PrintTorchOracle, FloatSciRatio) {
  EXPECT_EQ(from_values<float>({2}, {10000000000.0, 1.0}).to_string(),
            R"(tensor([1.0000e+10, 1.0000e+00]))");
}

TEST(PrintTorchOracle, FloatSciSmall) {
  EXPECT_EQ(from_values<float>({3}, {1e-05, 1.0, 0.5}).to_string(),
            R"(tensor([1.0000e-05, 1.0000e+00, 5.0000e-01]))");
}

TEST(PrintTorchOracle, FloatSciLarge) {
  EXPECT_EQ(from_values<float>({2}, {1500000000.0, 2.5}).to_string(),
            R"(tensor([1.5000e+09, 2.5000e+00]))");
}

TEST(PrintTorchOracle, FloatSciNegExp) {
  EXPECT_EQ(from_values<double>({3}, {-1e-05, 123.0, kNaN}).to_string(),
            R"(tensor([-1.0000e-05,  1.2300e+02,         nan], dtype=float64))");
}

TEST(PrintTorchOracle, FloatNonfinite) {
  EXPECT_EQ(from_values<float>({4}, {kNaN, kInf, -kInf, 1.5}).to_string(),
            R"(tensor([   nan,    inf,   -inf, 1.5000]))");
}

TEST(PrintTorchOracle, FloatIntModeNan) {
  EXPECT_EQ(from_values<float>({2}, {1.0, kNaN}).to_string(),
            R"(tensor([1., nan]))");
}

TEST(PrintTorchOracle, FloatIntModeWideNan) {
  EXPECT_EQ(from_values<float>({3}, {100.0, kNaN, kInf}).to_string(),
            R"(tensor([100.,  nan,  inf]))");
}

TEST(PrintTorchOracle, FloatAllNan) {
  EXPECT_EQ(from_values<float>({2}, {kNaN, kNaN}).to_string(),
            R"(tensor([nan, nan]))");
}

TEST(PrintTorchOracle, FloatZeros) {
  EXPECT_EQ(from_values<float>({2}, {0.0, -0.0}).to_string(),
            R"(tensor([0., -0.]))");
}

TEST(PrintTorchOracle, FloatNegZeroFrac) {
  EXPECT_EQ(from_values<float>({2}, {-0.5, 0.0}).to_string(),
            R"(tensor([-0.5000,  0.0000]))");
}

TEST(PrintTorchOracle, Float1e8) {
  EXPECT_EQ(from_values<float>({2}, {100000000.0, 1.0}).to_string(),
            R"(tensor([1.0000e+08, 1.0000e+00]))");
}

TEST(PrintTorchOracle, Bool) {
  EXPECT_EQ(from_values<bool>({3}, {1.0, 0.0, 1.0}).to_string(),
            R"(tensor([ True, False,  True]))");
}

TEST(PrintTorchOracle, Bool2D) {
  EXPECT_EQ(from_values<bool>({2, 2}, {0.0, 1.0, 1.0, 0.0}).to_string(),
            R"(tensor([[False,  True],
        [ True, False]]))");
}

TEST(PrintTorchOracle, Float64Suffix) {
  EXPECT_EQ(from_values<double>({2, 2}, {1.0, 2.0, 3.0, 4.0}).to_string(),
            R"(tensor([[1., 2.],
        [3., 4.]], dtype=float64))");
}

TEST(PrintTorchOracle, Float64Frac) {
  EXPECT_EQ(from_values<double>({2}, {0.1, 0.2}).to_string(),
            R"(tensor([0.1000, 0.2000], dtype=float64))");
}

TEST(PrintTorchOracle, Float16) {
  EXPECT_EQ(from_values<Half>({2}, {0.1, 2.5}).to_string(),
            R"(tensor([0.1000, 2.5000], dtype=float16))");
}

TEST(PrintTorchOracle, BFloat16) {
  EXPECT_EQ(from_values<BFloat16>({2}, {0.1, 2.5}).to_string(),
            R"(tensor([0.1001, 2.5000], dtype=bfloat16))");
}

TEST(PrintTorchOracle, Int32_3D) {
  EXPECT_EQ(arange_like<int32_t>({2, 2, 3}, 0.0, 1.0).to_string(),
            R"(tensor([[[ 0,  1,  2],
         [ 3,  4,  5]],

        [[ 6,  7,  8],
         [ 9, 10, 11]]], dtype=int32))");
}

TEST(PrintTorchOracle, Float3D) {
  EXPECT_EQ(arange_like<float>({2, 3, 2}, 0.0, 0.25).to_string(),
            R"(tensor([[[0.0000, 0.2500],
         [0.5000, 0.7500],
         [1.0000, 1.2500]],

        [[1.5000, 1.7500],
         [2.0000, 2.2500],
         [2.5000, 2.7500]]]))");
}

TEST(PrintTorchOracle, Float4D) {
  EXPECT_EQ(arange_like<float>({2, 1, 2, 2}, -2.0, 1.0).to_string(),
            R"(tensor([[[[-2., -1.],
          [ 0.,  1.]]],


        [[[ 2.,  3.],
          [ 4.,  5.]]]]))");
}

TEST(PrintTorchOracle, Scalar0dFloat) {
  EXPECT_EQ(from_values<float>({}, {3.5}).to_string(),
            R"(tensor(3.5000))");
}

TEST(PrintTorchOracle, Scalar0dInt) {
  EXPECT_EQ(from_values<int64_t>({}, {7.0}).to_string(),
            R"(tensor(7))");
}

TEST(PrintTorchOracle, Scalar0dBool) {
  EXPECT_EQ(from_values<bool>({}, {1.0}).to_string(),
            R"(tensor(True))");
}

TEST(PrintTorchOracle, Scalar0dNan) {
  EXPECT_EQ(from_values<double>({}, {kNaN}).to_string(),
            R"(tensor(nan, dtype=float64))");
}

TEST(PrintTorchOracle, Scalar0dSci) {
  EXPECT_EQ(from_values<float>({}, {1e-05}).to_string(),
            R"(tensor(1.0000e-05))");
}

TEST(PrintTorchOracle, EmptyFloat) {
  EXPECT_EQ(from_values<float>({0}, {}).to_string(),
            R"(tensor([]))");
}

TEST(PrintTorchOracle, EmptyFloat2D) {
  EXPECT_EQ(from_values<float>({0, 3}, {}).to_string(),
            R"(tensor([], size=(0, 3)))");
}

TEST(PrintTorchOracle, EmptyInt64) {
  EXPECT_EQ(from_values<int64_t>({0}, {}).to_string(),
            R"(tensor([], dtype=int64))");
}

TEST(PrintTorchOracle, EmptyBool3D) {
  EXPECT_EQ(from_values<bool>({2, 0, 1}, {}).to_string(),
            R"(tensor([], size=(2, 0, 1), dtype=bool))");
}

TEST(PrintTorchOracle, WrapFloat64) {
  EXPECT_EQ(arange_like<double>({30}, 0.0, 1.0).to_string(),
            R"(tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,
        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,
        28., 29.], dtype=float64))");
}

TEST(PrintTorchOracle, WrapSuffixNewline) {
  EXPECT_EQ(arange_like<double>({28}, 0.0, 1.0).to_string(),
            R"(tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,
        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.],
       dtype=float64))");
}

TEST(PrintTorchOracle, WrapFrac) {
  EXPECT_EQ(arange_like<float>({25}, 0.0, 0.125).to_string(),
            R"(tensor([0.0000, 0.1250, 0.2500, 0.3750, 0.5000, 0.6250, 0.7500, 0.8750, 1.0000,
        1.1250, 1.2500, 1.3750, 1.5000, 1.6250, 1.7500, 1.8750, 2.0000, 2.1250,
        2.2500, 2.3750, 2.5000, 2.6250, 2.7500, 2.8750, 3.0000]))");
}

TEST(PrintTorchOracle, WrapInt2D) {
  EXPECT_EQ(arange_like<int64_t>({2, 25}, 0.0, 1.0).to_string(),
            R"(tensor([[ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14, 15, 16, 17,
         18, 19, 20, 21, 22, 23, 24],
        [25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42,
         43, 44, 45, 46, 47, 48, 49]]))");
}

TEST(PrintTorchOracle, SummaryInt2D) {
  EXPECT_EQ(arange_like<int64_t>({2, 1000}, 0.0, 1.0).to_string(),
            R"(tensor([[   0,    1,    2,  ...,  997,  998,  999],
        [1000, 1001, 1002,  ..., 1997, 1998, 1999]]))");
}

TEST(PrintTorchOracle, Summary1D) {
  EXPECT_EQ(arange_like<float>({1001}, 0.0, 0.5).to_string(),
            R"(tensor([  0.0000,   0.5000,   1.0000,  ..., 499.0000, 499.5000, 500.0000]))");
}

TEST(PrintTorchOracle, Summary3D) {
  EXPECT_EQ(arange_like<float>({10, 10, 11}, -550.0, 1.0).to_string(),
            R"(tensor([[[-550., -549., -548.,  ..., -542., -541., -540.],
         [-539., -538., -537.,  ..., -531., -530., -529.],
         [-528., -527., -526.,  ..., -520., -519., -518.],
         ...,
         [-473., -472., -471.,  ..., -465., -464., -463.],
         [-462., -461., -460.,  ..., -454., -453., -452.],
         [-451., -450., -449.,  ..., -443., -442., -441.]],

        [[-440., -439., -438.,  ..., -432., -431., -430.],
         [-429., -428., -427.,  ..., -421., -420., -419.],
         [-418., -417., -416.,  ..., -410., -409., -408.],
         ...,
         [-363., -362., -361.,  ..., -355., -354., -353.],
         [-352., -351., -350.,  ..., -344., -343., -342.],
         [-341., -340., -339.,  ..., -333., -332., -331.]],

        [[-330., -329., -328.,  ..., -322., -321., -320.],
         [-319., -318., -317.,  ..., -311., -310., -309.],
         [-308., -307., -306.,  ..., -300., -299., -298.],
         ...,
         [-253., -252., -251.,  ..., -245., -244., -243.],
         [-242., -241., -240.,  ..., -234., -233., -232.],
         [-231., -230., -229.,  ..., -223., -222., -221.]],

        ...,

        [[ 220.,  221.,  222.,  ...,  228.,  229.,  230.],
         [ 231.,  232.,  233.,  ...,  239.,  240.,  241.],
         [ 242.,  243.,  244.,  ...,  250.,  251.,  252.],
         ...,
         [ 297.,  298.,  299.,  ...,  305.,  306.,  307.],
         [ 308.,  309.,  310.,  ...,  316.,  317.,  318.],
         [ 319.,  320.,  321.,  ...,  327.,  328.,  329.]],

        [[ 330.,  331.,  332.,  ...,  338.,  339.,  340.],
         [ 341.,  342.,  343.,  ...,  349.,  350.,  351.],
         [ 352.,  353.,  354.,  ...,  360.,  361.,  362.],
         ...,
         [ 407.,  408.,  409.,  ...,  415.,  416.,  417.],
         [ 418.,  419.,  420.,  ...,  426.,  427.,  428.],
         [ 429.,  430.,  431.,  ...,  437.,  438.,  439.]],

        [[ 440.,  441.,  442.,  ...,  448.,  449.,  450.],
         [ 451.,  452.,  453.,  ...,  459.,  460.,  461.],
         [ 462.,  463.,  464.,  ...,  470.,  471.,  472.],
         ...,
         [ 517.,  518.,  519.,  ...,  525.,  526.,  527.],
         [ 528.,  529.,  530.,  ...,  536.,  537.,  538.],
         [ 539.,  540.,  541.,  ...,  547.,  548.,  549.]]]))");
}

TEST(PrintTorchOracle, Summary2DFrac) {
  EXPECT_EQ(arange_like<double>({30, 40}, 0.0, 0.001).to_string(),
            R"(tensor([[0.0000e+00, 1.0000e-03, 2.0000e-03,  ..., 3.7000e-02, 3.8000e-02,
         3.9000e-02],
        [4.0000e-02, 4.1000e-02, 4.2000e-02,  ..., 7.7000e-02, 7.8000e-02,
         7.9000e-02],
        [8.0000e-02, 8.1000e-02, 8.2000e-02,  ..., 1.1700e-01, 1.1800e-01,
         1.1900e-01],
        ...,
        [1.0800e+00, 1.0810e+00, 1.0820e+00,  ..., 1.1170e+00, 1.1180e+00,
         1.1190e+00],
        [1.1200e+00, 1.1210e+00, 1.1220e+00,  ..., 1.1570e+00, 1.1580e+00,
         1.1590e+00],
        [1.1600e+00, 1.1610e+00, 1.1620e+00,  ..., 1.1970e+00, 1.1980e+00,
         1.1990e+00]], dtype=float64))");
}

TEST(PrintTorchOracle, Summary2DFixed) {
  EXPECT_EQ(arange_like<float>({30, 40}, 1.0, 0.001).to_string(),
            R"(tensor([[1.0000, 1.0010, 1.0020,  ..., 1.0370, 1.0380, 1.0390],
        [1.0400, 1.0410, 1.0420,  ..., 1.0770, 1.0780, 1.0790],
        [1.0800, 1.0810, 1.0820,  ..., 1.1170, 1.1180, 1.1190],
        ...,
        [2.0800, 2.0810, 2.0820,  ..., 2.1170, 2.1180, 2.1190],
        [2.1200, 2.1210, 2.1220,  ..., 2.1570, 2.1580, 2.1590],
        [2.1600, 2.1610, 2.1620,  ..., 2.1970, 2.1980, 2.1990]]))");
}

TEST(PrintTorchOracle, SummarySci) {
  EXPECT_EQ(arange_like<float>({2000}, 1.0, 10.0).to_string(),
            R"(tensor([1.0000e+00, 1.1000e+01, 2.1000e+01,  ..., 1.9971e+04, 1.9981e+04,
        1.9991e+04]))");
}

TEST(PrintTorchOracle, Transposed) {
  EXPECT_EQ(transpose2d(arange_like<float>({2, 3}, 0.0, 1.5)).to_string(),
            R"(tensor([[0.0000, 4.5000],
        [1.5000, 6.0000],
        [3.0000, 7.5000]]))");
}

TEST(PrintTorchOracle, OffsetView) {
  EXPECT_EQ(offset_view(arange_like<int64_t>({10}, 0.0, 1.0), 4, 3).to_string(),
            R"(tensor([4, 5, 6]))");
}

TEST(PrintTorchOracle, RequiresGrad) {
  EXPECT_EQ(with_requires_grad(from_values<float>({1}, {1.5})).to_string(),
            R"(tensor([1.5000], requires_grad=True))");
}

TEST(PrintTorchOracle, RequiresGradF64Wrap) {
  EXPECT_EQ(with_requires_grad(arange_like<double>({28}, 0.0, 1.0)).to_string(),
            R"(tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,
        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.],
       dtype=float64, requires_grad=True))");
}


// ---- behaviour beyond the oracle table ----

TEST(Print, StreamOperatorMatchesToString) {
  Tensor t = from_values<double>({2, 2}, {1.25, 2, 3, 4});
  std::ostringstream os;
  os << t;
  EXPECT_EQ(os.str(), t.to_string());
  EXPECT_EQ(os.str(), "tensor([[1.2500, 2.0000],\n        [3.0000, 4.0000]], dtype=float64)");
}

TEST(Print, UndefinedTensor) { EXPECT_EQ(Tensor().to_string(), "tensor(undefined)"); }

TEST(Print, ReadsThroughStridesNotStorageOrder) {
  // A column of a 3x3 matrix: stride 3, offset 1 -> elements 1, 4, 7.
  Tensor base = arange_like<int64_t>({3, 3}, 0.0, 1.0);
  Tensor col = make_alias(base, {3}, {3}, 1);
  EXPECT_EQ(col.to_string(), "tensor([1, 4, 7])");
  // A broadcast (stride 0) view repeats the element.
  Tensor rep = make_alias(base, {2, 2}, {0, 0}, 8);
  EXPECT_EQ(rep.to_string(), "tensor([[8, 8],\n        [8, 8]])");
}

TEST(Print, SummaryUsesOnlyEdgeItemsForWidth) {
  // 1001 elements: a huge middle value is not shown and must not force sci mode or width.
  std::vector<double> v(1001, 1.0);
  v[500] = 1e20;
  EXPECT_EQ(from_values<float>({1001}, v).to_string(), "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
}

TEST(Print, DefaultFloatDtypeDecidesSuffix) {
  // float32 is the default float dtype; every other floating dtype shows its name.
  EXPECT_EQ(from_values<float>({1}, {2}).to_string(), "tensor([2.])");
  EXPECT_EQ(from_values<Half>({1}, {2}).to_string(), "tensor([2.], dtype=float16)");
  EXPECT_EQ(from_values<int32_t>({1}, {2}).to_string(), "tensor([2], dtype=int32)");
}

}  // namespace
}  // namespace tandem
