// Bad input raises the right tandem::Error subclass, and the message starts with
// "[op]" and names what was given (DESIGN.md "Errors").
#include <cstdint>

#include "core/core_test_util.h"

using namespace tandem;

namespace {

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Errors, HierarchyIsCatchableAsError) {
  EXPECT_THROW(arange(16).view({3, 5}), Error);
  EXPECT_THROW(arange(16).view({3, 5}), std::runtime_error);
  EXPECT_THROW(arange(4).select(0, 9), Error);
}

TEST(Errors, InvalidViewShape) {
  // The exact message, as PyTorch's ("shape '[3, 5]' is invalid for input of size 16").
  EXPECT_EQ(message_of([] { arange(16).view({3, 5}); }), "[view] shape [3, 5] is invalid for input of size 16");
  EXPECT_TANDEM_ERROR(arange(16).view({3, 5}), ShapeError, "view", "[3, 5]", "16");
  EXPECT_TANDEM_ERROR(arange(16).view({-1, 5}), ShapeError, "view", "[-1, 5]", "16");
  EXPECT_TANDEM_ERROR(arange(16).view({-1, -1}), ValueError, "view", "only one dimension can be inferred");
  EXPECT_TANDEM_ERROR(arange(16).view({-3, 4}), ValueError, "view", "-3");
  EXPECT_TANDEM_ERROR(arange(12).view({3, 4}).t().view({12}), ShapeError, "view", "[4, 3]", "stride", "reshape");
  EXPECT_TANDEM_ERROR(arange(16).reshape({3, 5}), ShapeError, "reshape", "[3, 5]", "16");
  EXPECT_TANDEM_ERROR(zeros({0, 3}).view({-1, 0}), ShapeError, "view", "[-1, 0]");
}

TEST(Errors, OutOfRangeDimIsIndexError) {
  Tensor x = zeros({2, 3});
  EXPECT_TANDEM_ERROR(x.transpose(0, 2), IndexError, "transpose", "2", "[-2, 1]");
  EXPECT_TANDEM_ERROR(x.transpose(-3, 0), IndexError, "transpose", "-3");
  EXPECT_TANDEM_ERROR(x.select(2, 0), IndexError, "select", "2");
  EXPECT_TANDEM_ERROR(x.squeeze(2), IndexError, "squeeze", "2");
  EXPECT_TANDEM_ERROR(x.unsqueeze(3), IndexError, "unsqueeze", "3", "[-3, 2]");
  EXPECT_TANDEM_ERROR(x.unsqueeze(-4), IndexError, "unsqueeze", "-4");
  EXPECT_TANDEM_ERROR(x.flatten(0, 2), IndexError, "flatten", "2");
  EXPECT_TANDEM_ERROR(x.unbind(2), IndexError, "unbind", "2");
  EXPECT_TANDEM_ERROR(x.slice(5, 0, 1), IndexError, "slice", "5");
  EXPECT_TANDEM_ERROR(x.diagonal(0, 0, 2), IndexError, "diagonal", "2");
  EXPECT_TANDEM_ERROR(x.permute({0, 2}), IndexError, "permute", "2");
  EXPECT_TANDEM_ERROR(x.size(2), IndexError, "size", "2");
  EXPECT_TANDEM_ERROR(x.stride(-3), IndexError, "stride", "-3");
  EXPECT_TANDEM_ERROR(movedim(x, 0, 2), IndexError, "movedim", "2");
  EXPECT_TANDEM_ERROR(x.unflatten(2, {1, 1}), IndexError, "unflatten", "2");
  EXPECT_TANDEM_ERROR(x.chunk(2, 2), IndexError, "chunk", "2");
  EXPECT_TANDEM_ERROR(x.split(1, 2), IndexError, "split", "2");
  EXPECT_TANDEM_ERROR(x.split_with_sizes({1, 1}, -3), IndexError, "split_with_sizes", "-3");
  EXPECT_TANDEM_ERROR(x.narrow(2, 0, 1), IndexError, "narrow", "2");
  Tensor s = zeros({});
  EXPECT_TANDEM_ERROR(s.size(0), IndexError, "size", "no dimensions");
  EXPECT_TANDEM_ERROR(s.transpose(0, 1), IndexError, "transpose", "1");
  EXPECT_TANDEM_ERROR(zeros({3}).diagonal(), IndexError, "diagonal", "1");
}

TEST(Errors, OutOfRangeSelectIndex) {
  Tensor x = zeros({2, 3});
  EXPECT_TANDEM_ERROR(x.select(1, 3), IndexError, "select", "index 3", "[2, 3]");
  EXPECT_TANDEM_ERROR(x.select(1, -4), IndexError, "select", "index -4");
  EXPECT_TANDEM_ERROR(x[2], IndexError, "select", "index 2");
  EXPECT_TANDEM_ERROR(zeros({}).select(0, 0), IndexError, "select", "0-dim");
  EXPECT_TANDEM_ERROR(zeros({0}).select(0, 0), IndexError, "select", "index 0");
  EXPECT_NO_THROW(x.select(1, -3));
}

TEST(Errors, NegativeSizesAreValueError) {
  EXPECT_TANDEM_ERROR(empty({2, -1}), ValueError, "empty", "-1", "[2, -1]");
  EXPECT_TANDEM_ERROR(zeros({-2}), ValueError, "zeros", "-2");
  EXPECT_TANDEM_ERROR(ones({3, -5}), ValueError, "ones", "-5");
  EXPECT_TANDEM_ERROR(full({-1}, 2.5), ValueError, "full", "-1");
  EXPECT_TANDEM_ERROR(eye(-1), ValueError, "eye", "-1");
  EXPECT_TANDEM_ERROR(linspace(0, 1, -2), ValueError, "linspace", "-2");
  EXPECT_TANDEM_ERROR(from_vector(std::vector<float>{}, {-1}), ValueError, "from_vector", "-1");
  EXPECT_TANDEM_ERROR(empty_strided_tensor({2, -3}, {1, 1}, kFloat32), ValueError, "empty_strided", "-3");
}

// Sizes whose element count, byte count or a contiguous stride overflows int64 raise
// before anything is allocated (a wrapped count would allocate a small buffer). A zero-
// sized dimension makes the element count 0 but not the other dimensions' strides.
TEST(Errors, SizesThatOverflowInt64RaiseBeforeAllocating) {
  const int64_t big = int64_t{1} << 40;
  EXPECT_TANDEM_ERROR(empty({big, big}), RuntimeError, "empty", "overflowed", "[1099511627776, 1099511627776]");
  EXPECT_TANDEM_ERROR(empty({0, int64_t{1} << 62, 7936}), RuntimeError, "empty", "overflowed");
  EXPECT_TANDEM_ERROR(empty({int64_t{1} << 61, 2}, TensorOptions().dtype(kFloat32)), RuntimeError, "empty",
                      "float32");  // 2^64 bytes
  EXPECT_TANDEM_ERROR(zeros({big, big}), RuntimeError, "zeros", "overflowed");
  EXPECT_EQ(empty({0, big}).numel(), 0);  // strides fit: fine
  EXPECT_EQ(empty({0, big}).stride(0), big);
}

TEST(Errors, ItemOnManyElementsIsValueError) {
  EXPECT_TANDEM_ERROR(arange(6).item<int64_t>(), ValueError, "item", "6 elements");
  EXPECT_TANDEM_ERROR(zeros({0}).item<float>(), ValueError, "item", "0 elements");
  EXPECT_TANDEM_ERROR(arange(6).item(), ValueError, "item", "6");
  EXPECT_EQ(arange(6).view({1, 6}).select(1, 4).item<int64_t>(), 4);
  EXPECT_EQ(full({1, 1}, 3).item<int64_t>(), 3);
}

TEST(Errors, ItemOverflowIsTypeError) {
  EXPECT_TANDEM_ERROR(scalar_tensor(300).item<int8_t>(), TypeError, "item", "300", "int8");
  EXPECT_TANDEM_ERROR(scalar_tensor(-1).item<uint8_t>(), TypeError, "item", "-1", "uint8");
  EXPECT_TANDEM_ERROR(scalar_tensor(int64_t{1} << 40).item<int32_t>(), TypeError, "item", "int32");
  EXPECT_TANDEM_ERROR(scalar_tensor(70000).item<int16_t>(), TypeError, "item", "70000", "int16");
  EXPECT_TANDEM_ERROR(scalar_tensor(1e300, kFloat64).item<float>(), TypeError, "item", "float32");
  EXPECT_TANDEM_ERROR(scalar_tensor(3e9, kFloat64).item<int32_t>(), TypeError, "item", "int32");
  EXPECT_TANDEM_ERROR(scalar_tensor(NAN).item<int64_t>(), TypeError, "item", "int64");
  EXPECT_TANDEM_ERROR(scalar_tensor(-0.5e3).item<uint8_t>(), TypeError, "item", "uint8");
  // In range: converts (float -> int truncates toward zero like C++ and torch).
  EXPECT_EQ(scalar_tensor(127).item<int8_t>(), 127);
  EXPECT_EQ(scalar_tensor(255).item<uint8_t>(), 255);
  EXPECT_EQ(scalar_tensor(-2.7).item<int32_t>(), -2);
  EXPECT_EQ(scalar_tensor(2.7).item<int64_t>(), 2);
  EXPECT_TRUE(std::isinf(scalar_tensor(INFINITY).item<float>())) << "inf is not an overflow";
  EXPECT_TRUE(std::isnan(scalar_tensor(NAN, kFloat64).item<float>()));
  EXPECT_EQ(scalar_tensor(2).item<bool>(), true);
  EXPECT_EQ(scalar_tensor(true).item<int>(), 1);
}

TEST(Errors, FillValueOverflowIsTypeError) {
  // As PyTorch's checked conversion: "value cannot be converted to type uint8_t without overflow".
  EXPECT_TANDEM_ERROR(full({2}, 300, kUInt8), TypeError, "full", "300", "uint8", "overflow");
  EXPECT_TANDEM_ERROR(zeros({2}, kInt8).fill_(1000), TypeError, "fill_", "1000", "int8");
  EXPECT_TANDEM_ERROR(zeros({2}, kFloat16).fill_(1e5), TypeError, "fill_", "float16");
  EXPECT_TANDEM_ERROR(zeros({2}, kInt32).fill_(NAN), TypeError, "fill_", "nan", "int32");
  EXPECT_TANDEM_ERROR(full_like(arange(3), INFINITY), TypeError, "full", "inf", "int64");
  EXPECT_NO_THROW(zeros({2}, kUInt8).fill_(-1)) << "a negative integer wraps into uint8, as in PyTorch";
  EXPECT_EQ(full({1}, -1, kUInt8).item<int64_t>(), 255);
  EXPECT_NO_THROW(zeros({2}, kFloat16).fill_(INFINITY));
  EXPECT_NO_THROW(zeros({2}, kBool).fill_(7.5));
}

TEST(Errors, DataPtrWrongTypeIsTypeError) {
  Tensor f = zeros({2});
  EXPECT_TANDEM_ERROR(f.data_ptr<int64_t>(), TypeError, "data_ptr", "float32", "int64");
  EXPECT_TANDEM_ERROR(f.data_ptr<double>(), TypeError, "data_ptr", "float32", "float64");
  EXPECT_TANDEM_ERROR(arange(3).data_ptr<int32_t>(), TypeError, "data_ptr", "int64", "int32");
  EXPECT_TANDEM_ERROR(zeros({2}, kFloat16).data_ptr<BFloat16>(), TypeError, "data_ptr", "float16", "bfloat16");
  EXPECT_TANDEM_ERROR(zeros({2}, kBool).data_ptr<uint8_t>(), TypeError, "data_ptr", "bool", "uint8");
  EXPECT_NO_THROW(f.data_ptr<float>());
  EXPECT_NO_THROW(f.data_ptr<const float>());
}

TEST(Errors, CopyShapeMismatchIsShapeError) {
  Tensor dst = zeros({2, 2});
  EXPECT_TANDEM_ERROR(dst.copy_(arange(3)), ShapeError, "copy_", "[3]", "[2, 2]");
  EXPECT_TANDEM_ERROR(zeros({1, 3}).copy_(zeros({2, 3})), ShapeError, "copy_", "[2, 3]", "[1, 3]");
  EXPECT_TANDEM_ERROR(zeros({3}).copy_(zeros({2, 3})), ShapeError, "copy_", "[2, 3]", "[3]");
  // Broadcasting a smaller source is fine.
  EXPECT_NO_THROW(zeros({2, 3}).copy_(arange(3)));
  EXPECT_NO_THROW(zeros({2, 3}).copy_(scalar_tensor(5)));
}

TEST(Errors, ExpandNonSingletonIsShapeError) {
  Tensor x = zeros({2, 3});
  EXPECT_TANDEM_ERROR(x.expand({4, 3}), ShapeError, "expand", "(4)", "(2)", "[4, 3]");
  EXPECT_TANDEM_ERROR(x.expand({3}), ShapeError, "expand", "(1)", "(2)");
  EXPECT_TANDEM_ERROR(zeros({3}).expand({-1, 3}), ShapeError, "expand", "-1");
  EXPECT_TANDEM_ERROR(zeros({1}).expand({-2}), ValueError, "expand", "-2");
  EXPECT_NO_THROW(zeros({1, 3}).expand({4, 3}));
}

TEST(Errors, AsStridedOutsideTheStorageIsValueError) {
  Tensor x = zeros({2, 3});  // storage of 6 elements
  EXPECT_TANDEM_ERROR(x.as_strided({2, 3}, {3, 1}, 1), ValueError, "as_strided", "7", "6");
  EXPECT_TANDEM_ERROR(x.as_strided({3, 3}, {3, 1}), ValueError, "as_strided", "[3, 3]", "6");
  EXPECT_TANDEM_ERROR(x.as_strided({2}, {1}, 5), ValueError, "as_strided", "6");
  EXPECT_TANDEM_ERROR(x.as_strided({2}, {1}, -1), ValueError, "as_strided", "-1");
  EXPECT_TANDEM_ERROR(x.as_strided({2}, {-1}), ValueError, "as_strided", "-1");
  EXPECT_TANDEM_ERROR(x.as_strided({-2}, {1}), ValueError, "as_strided", "-2");
  EXPECT_TANDEM_ERROR(x.as_strided({2, 2}, {1}), ShapeError, "as_strided", "2 sizes", "1 strides");
  // A view with an offset keeps it by default; bounds count from the storage start.
  Tensor row = x.select(0, 1);  // offset 3
  EXPECT_TANDEM_ERROR(row.as_strided({4}, {1}), ValueError, "as_strided", "7");
  EXPECT_NO_THROW(row.as_strided({3}, {1}));
  EXPECT_NO_THROW(x.as_strided({0, 9}, {100, 100}, 6)) << "an empty view reads nothing";
  EXPECT_NO_THROW(x.as_strided({1}, {1}, 5));
}

TEST(Errors, PermuteNeedsAPermutation) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_TANDEM_ERROR(x.permute({0, 0, 1}), ValueError, "permute", "appears multiple times");
  EXPECT_TANDEM_ERROR(x.permute({0, 1}), ValueError, "permute", "[0, 1]", "3");
  EXPECT_TANDEM_ERROR(x.permute({0, 1, 2, 3}), ValueError, "permute", "[0, 1, 2, 3]");
  EXPECT_TANDEM_ERROR(x.permute({0, 2, -1}), ValueError, "permute", "appears multiple times");
  EXPECT_TANDEM_ERROR(x.permute({0, 1, 3}), IndexError, "permute", "3");
}

TEST(Errors, SliceStepMustBePositive) {
  Tensor x = arange(10);
  EXPECT_TANDEM_ERROR(x.slice(0, 0, 10, 0), ValueError, "slice", "step", "0");
  EXPECT_TANDEM_ERROR(x.slice(0, 0, 10, -1), ValueError, "slice", "step", "-1");
  EXPECT_TANDEM_ERROR(zeros({}).slice(0, 0, 1), IndexError, "slice", "0-dim");
}

TEST(Errors, NarrowOutOfRange) {
  Tensor x = arange(5);
  EXPECT_TANDEM_ERROR(x.narrow(0, 3, 3), IndexError, "narrow", "3", "5");
  EXPECT_TANDEM_ERROR(x.narrow(0, 6, 0), IndexError, "narrow", "6");
  EXPECT_TANDEM_ERROR(x.narrow(0, -6, 1), IndexError, "narrow", "-6");
  EXPECT_TANDEM_ERROR(x.narrow(0, 1, -1), IndexError, "narrow", "-1");
  EXPECT_TANDEM_ERROR(zeros({}).narrow(0, 0, 1), IndexError, "narrow", "0-dim");
  EXPECT_EQ(x.narrow(0, -2, 2)[0].item<int64_t>(), 3);
  EXPECT_EQ(x.narrow(0, 5, 0).numel(), 0);
}

TEST(Errors, UnflattenWrongSizes) {
  Tensor x = zeros({2, 6});
  EXPECT_TANDEM_ERROR(x.unflatten(1, {4, 2}), ShapeError, "unflatten", "[4, 2]", "6");
  EXPECT_TANDEM_ERROR(x.unflatten(1, {-1, 4}), ShapeError, "unflatten", "[-1, 4]", "6");
  EXPECT_TANDEM_ERROR(x.unflatten(1, {-1, -1}), ValueError, "unflatten", "only one dimension");
  EXPECT_TANDEM_ERROR(x.unflatten(1, std::vector<int64_t>{}), ValueError, "unflatten", "non-empty");
  EXPECT_EQ(x.unflatten(1, {-1, 2}).sizes().vec(), (DimVector{2, 3, 2}));
}

TEST(Errors, OtherShapeOps) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_TANDEM_ERROR(x.t(), ValueError, "t", "3D");
  EXPECT_TANDEM_ERROR(x.flatten(2, 1), ValueError, "flatten", "start_dim");
  EXPECT_TANDEM_ERROR(x.split_with_sizes({1, 1}, 1), ShapeError, "split_with_sizes", "[1, 1]", "3");
  EXPECT_TANDEM_ERROR(x.split_with_sizes({4, -1}, 1), ValueError, "split_with_sizes", "[4, -1]");
  EXPECT_TANDEM_ERROR(x.split(0, 1), ValueError, "split", "0");
  EXPECT_TANDEM_ERROR(x.split(-1, 1), ValueError, "split", "-1");
  EXPECT_TANDEM_ERROR(x.chunk(0), ValueError, "chunk", "0");
  EXPECT_TANDEM_ERROR(zeros({}).unbind(), ValueError, "unbind", "no dimensions");
  EXPECT_TANDEM_ERROR(x.diagonal(0, 1, 1), ValueError, "diagonal", "identical");
  EXPECT_TANDEM_ERROR(x.diagonal(0, 1, -2), ValueError, "diagonal", "identical");
  EXPECT_TANDEM_ERROR(Tensor().view({1}), ValueError, "view", "undefined");
}

TEST(Errors, CreationAndConversion) {
  EXPECT_TANDEM_ERROR(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), ShapeError, "from_vector", "3", "[2, 2]");
  EXPECT_TANDEM_ERROR(tensor({{1.0, 2.0}, {3.0}}), ShapeError, "tensor", "2", "1");
  EXPECT_TANDEM_ERROR(arange(0, 10, 0), ValueError, "arange", "step");
  EXPECT_TANDEM_ERROR(arange(0, 10, -1), ValueError, "arange", "10", "-1");
  EXPECT_TANDEM_ERROR(arange(5, 0, 1), ValueError, "arange", "5");
  EXPECT_TANDEM_ERROR(arange(0.0, INFINITY, 1.0), ValueError, "arange", "inf");
  EXPECT_TANDEM_ERROR(from_blob(nullptr, {2, 2}, kFloat32, {}, DimVector{1}), ShapeError, "from_blob", "2 sizes", "1 strides");
  EXPECT_TANDEM_ERROR(from_blob(nullptr, {2}, kFloat32, {}, DimVector{-1}), ValueError, "from_blob", "-1");
  EXPECT_TANDEM_ERROR(arange(3).requires_grad_(), TypeError, "requires_grad_", "int64");
  EXPECT_TANDEM_ERROR(set_default_float_dtype(kInt32), TypeError, "set_default_dtype", "int32");
  EXPECT_TANDEM_ERROR(empty_strided_tensor({2, 2}, {1}, kFloat32), ShapeError, "empty_strided", "[2, 2]", "[1]");
  EXPECT_TANDEM_ERROR(Tensor().data_ptr<float>(), RuntimeError, "data_ptr", "undefined");
  EXPECT_TANDEM_ERROR(Tensor().item(), RuntimeError, "item", "undefined");
}

}  // namespace
