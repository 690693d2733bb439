// Hand-written tests for the pointwise family: what the oracle JSON can't express
// (operators and methods, exact int64 edge values, PyTorch crash cases, data left intact
// after an error, aliasing in place, the parallel path) plus the meta-only path.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>
#include <vector>

#include "support/tensor_json.h"
#include "tandem/tandem.h"

using namespace tandem;

namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

std::vector<double> vals(const Tensor& t) { return oracle::to_doubles(t); }

template <typename T>
std::vector<T> exact(const Tensor& t) {
  Tensor c = t.contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

template <typename Fn>
std::string error_message(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---------------------------------------------------------------- operators and methods
TEST(PointwiseOperators, ArithmeticOperators) {
  Tensor a = tensor({7, -7, 6});
  Tensor b = tensor({2, 2, -4});
  Tensor q = a / b;  // true division: int / int is float32
  EXPECT_EQ(q.dtype(), kFloat32);
  EXPECT_EQ(vals(q), (std::vector<double>{3.5, -3.5, -1.5}));
  Tensor r = a % b;  // Python modulus: sign of the divisor
  EXPECT_EQ(r.dtype(), kInt64);
  EXPECT_EQ(exact<int64_t>(r), (std::vector<int64_t>{1, 1, -2}));
  EXPECT_EQ(exact<int64_t>(a % 4), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(exact<int64_t>(Scalar(10) % b), (std::vector<int64_t>{0, 0, -2}));
  EXPECT_EQ(vals(Scalar(1) / tensor({2.f, 4.f})), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(vals(tensor({1.f, 3.f}) / 2), (std::vector<double>{0.5, 1.5}));
}

TEST(PointwiseOperators, ComparisonOperatorsReturnBoolTensors) {
  Tensor a = tensor({1, 2, 3});
  Tensor b = tensor({3.f, 2.f, 1.f});
  Tensor eq = a == b;
  EXPECT_EQ(eq.dtype(), kBool);
  EXPECT_EQ(vals(eq), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(vals(a != b), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(vals(a < b), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(vals(a <= b), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(vals(a > b), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(vals(a >= b), (std::vector<double>{0, 1, 1}));
  // Scalar on either side; on the left the comparison flips (2 < a means a > 2).
  EXPECT_EQ(vals(a == 2), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(vals(2 == a), (std::vector<double>{0, 1, 0}));
  EXPECT_EQ(vals(a != 2.5), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(vals(2 != a), (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(vals(2 < a), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(vals(2 <= a), (std::vector<double>{0, 1, 1}));
  EXPECT_EQ(vals(2 > a), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(vals(2 >= a), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(vals(a < 2.5), (std::vector<double>{1, 1, 0}));
  // Metadata comparisons keep working as ordinary ints.
  EXPECT_EQ(a.dim(), 1);
}

TEST(PointwiseOperators, BitwiseAndShiftOperators) {
  Tensor a = tensor({12, 10, -1});
  Tensor b = tensor({10, 3, 5});
  EXPECT_EQ(exact<int64_t>(a & b), (std::vector<int64_t>{8, 2, 5}));
  EXPECT_EQ(exact<int64_t>(a | b), (std::vector<int64_t>{14, 11, -1}));
  EXPECT_EQ(exact<int64_t>(a ^ b), (std::vector<int64_t>{6, 9, -6}));
  EXPECT_EQ(exact<int64_t>(a & 6), (std::vector<int64_t>{4, 2, 6}));
  EXPECT_EQ(exact<int64_t>(6 | a), (std::vector<int64_t>{14, 14, -1}));
  EXPECT_EQ(exact<int64_t>(a << 2), (std::vector<int64_t>{48, 40, -4}));
  EXPECT_EQ(exact<int64_t>(a >> 1), (std::vector<int64_t>{6, 5, -1}));
  EXPECT_EQ(exact<int64_t>(1 << tensor({0, 3, 62})), (std::vector<int64_t>{1, 8, int64_t{1} << 62}));
  EXPECT_EQ(exact<int64_t>(Scalar(-64) >> tensor({1, 3})), (std::vector<int64_t>{-32, -8}));
  // On bool tensors &, |, ^ are logical and stay bool.
  Tensor p = tensor({true, true, false}), q = tensor({true, false, false});
  Tensor pq = p & q;
  EXPECT_EQ(pq.dtype(), kBool);
  EXPECT_EQ(vals(pq), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(vals(p | q), (std::vector<double>{1, 1, 0}));
  EXPECT_EQ(vals(p ^ true), (std::vector<double>{0, 0, 1}));
  EXPECT_THROW(tensor({1.f}) & tensor({1.f}), TypeError);
  EXPECT_THROW(p << q, TypeError);
}

TEST(PointwiseOperators, PrintingStillWorksNextToShiftOperators) {
  std::ostringstream os;
  os << tensor({1, 2});  // operator<<(ostream&, Tensor) must win over the shift operator
  EXPECT_EQ(os.str(), "tensor([1, 2])");
}

TEST(PointwiseOperators, CompoundAssignment) {
  Tensor x = tensor({8.f, 6.f});
  void* data = x.data_ptr();
  x += 2;
  x -= tensor({1.f, 1.f});
  x *= 2;
  x /= 3;
  EXPECT_EQ(x.data_ptr(), data);  // in place
  EXPECT_EQ(vals(x), (std::vector<double>{6, static_cast<float>(14.0f / 3.0f)}));
  Tensor i = tensor({13, -13});
  i %= 5;
  EXPECT_EQ(exact<int64_t>(i), (std::vector<int64_t>{3, 2}));
  i <<= 2;
  i >>= 1;
  i |= 1;
  i &= 7;
  i ^= 2;
  EXPECT_EQ(exact<int64_t>(i), (std::vector<int64_t>{5, 7}));
  Tensor f = tensor({1, 2});
  EXPECT_THROW(f /= 2, TypeError);  // true division result float can't go into int64
  EXPECT_EQ(exact<int64_t>(f), (std::vector<int64_t>{1, 2}));
}

TEST(PointwiseMethods, FunctionalMethodsAndInPlace) {
  Tensor a = tensor({1.f, -4.f, 9.f});
  Tensor b = tensor({2.f, 2.f, -2.f});
  EXPECT_EQ(vals(a.div(b, "floor")), (std::vector<double>{0, -2, -5}));
  EXPECT_EQ(vals(a.div(b, "trunc")), (std::vector<double>{0, -2, -4}));
  EXPECT_EQ(vals(a.floor_divide(2)), (std::vector<double>{0, -2, 4}));
  EXPECT_EQ(vals(a.fmod(b)), (std::vector<double>{1, -0.0, 1}));
  EXPECT_EQ(vals(a.remainder(b)), (std::vector<double>{1, 0, -1}));
  EXPECT_EQ(vals(a.pow(2)), (std::vector<double>{1, 16, 81}));
  EXPECT_EQ(vals(a.maximum(b)), (std::vector<double>{2, 2, 9}));
  EXPECT_EQ(vals(a.minimum(b)), (std::vector<double>{1, -4, -2}));
  EXPECT_EQ(vals(tensor({3.f}).hypot(tensor({4.f}))), (std::vector<double>{5}));
  EXPECT_NEAR(vals(tensor({1.f}).atan2(tensor({-1.f})))[0], 3 * M_PI / 4, 1e-6);
  EXPECT_EQ(vals(a.gt(0).logical_and(b.gt(0))), (std::vector<double>{1, 0, 0}));
  EXPECT_EQ(vals(a.where(a > 0, 0)), (std::vector<double>{1, 0, 9}));
  EXPECT_EQ(vals(a.lerp(b, 0.5)), (std::vector<double>{1.5, -1, 3.5}));
  EXPECT_EQ(vals(a.addcmul(b, b, 2)), (std::vector<double>{9, 4, 17}));
  EXPECT_EQ(vals(a.addcdiv(b, b, -1)), (std::vector<double>{0, -5, 8}));

  Tensor c = a.clone();
  c.pow_(2).sub_(1).div_(tensor({2.f}));
  EXPECT_EQ(vals(c), (std::vector<double>{0, 7.5, 40}));
  c.lt_(10);  // comparison in place leaves 0/1 in the float tensor
  EXPECT_EQ(c.dtype(), kFloat32);
  EXPECT_EQ(vals(c), (std::vector<double>{1, 1, 0}));
  Tensor d = a.clone();
  d.lerp_(b, tensor({0.f, 1.f, 0.5f})).addcmul_(b, b).addcdiv_(b, b, 2);
  EXPECT_EQ(vals(d), (std::vector<double>{1 + 4 + 2, 2 + 4 + 2, 3.5 + 4 + 2}));
}

TEST(PointwiseMethods, InPlaceWritesThroughNonContiguousViews) {
  Tensor m = zeros({2, 3});
  Tensor col = m.select(1, 1);  // stride 3
  col.add_(5).div_(2).pow_(2);
  EXPECT_EQ(vals(m), (std::vector<double>{0, 6.25, 0, 0, 6.25, 0}));
  Tensor t = arange(6, kFloat32).view({2, 3}).t();
  t.remainder_(4);
  EXPECT_EQ(vals(t), (std::vector<double>{0, 3, 1, 0, 2, 1}));
}

TEST(PointwiseMethods, InPlaceWithSelfAliasing) {
  Tensor x = tensor({2.f, -3.f, 4.f});
  x.div_(x);
  EXPECT_EQ(vals(x), (std::vector<double>{1, 1, 1}));
  Tensor y = tensor({1.f, 2.f});
  y.addcmul_(y, y, 1);
  EXPECT_EQ(vals(y), (std::vector<double>{2, 6}));
  Tensor z = tensor({3, 5});
  z.pow_(z);
  EXPECT_EQ(exact<int64_t>(z), (std::vector<int64_t>{27, 3125}));
}

// ---------------------------------------------------------------- integer edge values
TEST(PointwiseIntegers, MinByMinusOneWrapsInsteadOfCrashing) {
  // PyTorch dies of SIGFPE here (x86 idiv traps); tandem defines the two's-complement result.
  Tensor a = tensor({kI64Min, kI64Min, int64_t{7}});
  Tensor m1 = tensor({int64_t{-1}, int64_t{-1}, int64_t{-1}});
  EXPECT_EQ(exact<int64_t>(div(a, m1, "trunc")), (std::vector<int64_t>{kI64Min, kI64Min, -7}));
  EXPECT_EQ(exact<int64_t>(div(a, m1, "floor")), (std::vector<int64_t>{kI64Min, kI64Min, -7}));
  EXPECT_EQ(exact<int64_t>(floor_divide(a, -1)), (std::vector<int64_t>{kI64Min, kI64Min, -7}));
  EXPECT_EQ(exact<int64_t>(remainder(a, m1)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(exact<int64_t>(fmod(a, m1)), (std::vector<int64_t>{0, 0, 0}));
  Tensor a32 = from_vector<int32_t>({kI32Min, 9}, {2});
  EXPECT_EQ(exact<int32_t>(div(a32, Scalar(-1), "floor")), (std::vector<int32_t>{kI32Min, -9}));
  EXPECT_EQ(exact<int32_t>(remainder(a32, Scalar(-1))), (std::vector<int32_t>{0, 0}));
}

TEST(PointwiseIntegers, Int64ExtremesAreExact) {
  Tensor a = tensor({std::numeric_limits<int64_t>::max(), kI64Min + 1, kI64Min});
  EXPECT_EQ(exact<int64_t>(div(a, Scalar(7), "floor")),
            (std::vector<int64_t>{1317624576693539401, -1317624576693539401, -1317624576693539402}));
  EXPECT_EQ(exact<int64_t>(remainder(a, 7)), (std::vector<int64_t>{0, 0, 6}));
  EXPECT_EQ(exact<int64_t>(fmod(a, 7)), (std::vector<int64_t>{0, 0, -1}));
  EXPECT_EQ(exact<int64_t>(maximum(a, tensor({int64_t{0}}))), (std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0, 0}));
  EXPECT_EQ(exact<int64_t>(pow(tensor({int64_t{3}}), tensor({int64_t{39}}))), (std::vector<int64_t>{4052555153018976267}));
  EXPECT_EQ(exact<int64_t>(pow(tensor({int64_t{3}}), tensor({int64_t{41}}))),
            (std::vector<int64_t>{-420491770248316829}));  // 3^41 wraps modulo 2^64
}

TEST(PointwiseIntegers, DivisionByZeroRaisesAndLeavesDataIntact) {
  Tensor a = tensor({5, -5, 3});
  Tensor b = tensor({1, 0, 2});
  for (auto fn : std::vector<std::function<Tensor()>>{
           [&] { return div(a, b, "floor"); }, [&] { return div(a, b, "trunc"); }, [&] { return floor_divide(a, b); },
           [&] { return remainder(a, b); }, [&] { return fmod(a, b); }, [&] { return a % 0; }}) {
    std::string msg = error_message(fn);
    EXPECT_NE(msg.find("ZeroDivisionError"), std::string::npos) << msg;
    EXPECT_THROW(fn(), ValueError);
  }
  a.remainder_(tensor({2, 2, 2}));  // fine
  Tensor before = a.clone();
  EXPECT_THROW(a.floor_divide_(b), ValueError);
  EXPECT_EQ(exact<int64_t>(a), exact<int64_t>(before));  // checked before anything is written
  // A zero that is not used (empty result) is fine, like PyTorch.
  EXPECT_EQ(floor_divide(zeros({0}, kInt64), tensor({0})).numel(), 0);
  // Floating division by zero is IEEE.
  EXPECT_EQ(vals(div(tensor({1.f, -1.f}), 0.0)), (std::vector<double>{INFINITY, -INFINITY}));
  EXPECT_TRUE(std::isnan(vals(fmod(tensor({1.0}), 0.0))[0]));
}

TEST(PointwiseFloats, RemainderSignedZerosAndInfinitiesMatchTorchBits) {
  // torch 1.13 (CPU, float32 and float64, scalar and vectorised paths alike) computes
  // fmod(a, b) and adds b when the nonzero remainder's sign differs from b's: a zero
  // remainder keeps fmod's sign, which is the dividend's, so remainder(-1., 1.) is -0.0 and
  // remainder(2., -1.) is +0.0 (issue 19 expected Python's `%`, where a zero takes the
  // divisor's sign; torch does not). Expected bits below were printed by torch 1.13:
  //   torch.remainder(a, b).view(torch.int32 / torch.int64)
  const std::vector<double> a = {-1.0, 2.0, -0.0, 0.0, 3.0, -3.0, 1.0, 5.5, -5.5, -4.0, 4.0, -2.0, -1.0};
  const std::vector<double> b = {1.0, -1.0, 1.0, -1.0, -1.5, 1.5, INFINITY, -INFINITY, INFINITY, 2.0, -2.0, -1.0, 1.0};
  const std::vector<uint32_t> want32 = {0x80000000u, 0x0u, 0x80000000u, 0x0u, 0x0u, 0x80000000u, 0x3f800000u,
                                        0xff800000u, 0x7f800000u, 0x80000000u, 0x0u, 0x80000000u, 0x80000000u};
  const std::vector<uint64_t> want64 = {0x8000000000000000ull, 0x0ull, 0x8000000000000000ull, 0x0ull, 0x0ull,
                                        0x8000000000000000ull, 0x3ff0000000000000ull, 0xfff0000000000000ull,
                                        0x7ff0000000000000ull, 0x8000000000000000ull, 0x0ull, 0x8000000000000000ull,
                                        0x8000000000000000ull};
  for (int64_t n : {1, 3, 17}) {  // lengths that take the vector loop's body and its tail
    std::vector<double> ra, rb;
    for (size_t i = 0; i < a.size(); ++i)
      for (int64_t k = 0; k < n; ++k) {
        ra.push_back(a[i]);
        rb.push_back(b[i]);
      }
    const int64_t m = static_cast<int64_t>(ra.size());
    Tensor x64 = from_vector<double>(ra, {m}), y64 = from_vector<double>(rb, {m});
    auto bits = [](const Tensor& t, auto zero) {
      using U = decltype(zero);
      Tensor c = t.contiguous();
      std::vector<U> out(static_cast<size_t>(c.numel()));
      std::memcpy(out.data(), c.data_ptr(), out.size() * sizeof(U));
      return out;
    };
    std::vector<uint64_t> got64 = bits(remainder(x64, y64), uint64_t{0});
    std::vector<uint32_t> got32 = bits(remainder(x64.to(kFloat32), y64.to(kFloat32)), uint32_t{0});
    for (size_t i = 0; i < a.size(); ++i)
      for (int64_t k = 0; k < n; ++k) {
        const size_t j = i * static_cast<size_t>(n) + static_cast<size_t>(k);
        EXPECT_EQ(got64[j], want64[i]) << "float64 remainder(" << a[i] << ", " << b[i] << ")";
        EXPECT_EQ(got32[j], want32[i]) << "float32 remainder(" << a[i] << ", " << b[i] << ")";
      }
  }
  // NaN results (torch's NaN sign differs between its vector and scalar paths, so only
  // NaN-ness is PyTorch's contract): inf % 1, 1 % 0, nan % 1, 1 % nan, 0 % 0.
  Tensor nx = tensor({INFINITY, 1.0, NAN, 1.0, 0.0}), ny = tensor({1.0, 0.0, 1.0, NAN, 0.0});
  for (double v : vals(remainder(nx, ny))) EXPECT_TRUE(std::isnan(v));
  for (double v : vals(remainder(nx.to(kFloat32), ny.to(kFloat32)))) EXPECT_TRUE(std::isnan(v));
  // The same sign rule for a wrapped scalar divisor and the in-place form.
  Tensor z = tensor({-1.0, 2.0});
  z.remainder_(1.0);
  EXPECT_TRUE(std::signbit(vals(z)[0]));
  EXPECT_FALSE(std::signbit(vals(z)[1]));
}

TEST(PointwiseIntegers, ShiftCountsOutOfRangeAreDefined) {
  // PyTorch 1.13 leaves these to the CPU (x86 masks the count); tandem follows the
  // well-defined rule of PyTorch >= 2.0: 0 for left shifts, the sign fill for right shifts.
  Tensor a = tensor({1, -8, 8});
  EXPECT_EQ(exact<int64_t>(a << tensor({64, 65, -1})), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(exact<int64_t>(a >> tensor({64, 70, -1})), (std::vector<int64_t>{0, -1, 0}));
  EXPECT_EQ(exact<int64_t>(tensor({1}) << 63), (std::vector<int64_t>{kI64Min}));
  Tensor i8 = from_vector<int8_t>({1, -128, 64}, {3});
  EXPECT_EQ(exact<int8_t>(i8 << from_vector<int8_t>({8, 1, 1}, {3})), (std::vector<int8_t>{0, 0, -128}));
  EXPECT_EQ(exact<int8_t>(i8 >> from_vector<int8_t>({8, 9, 7}, {3})), (std::vector<int8_t>{0, -1, 0}));
  Tensor u8 = from_vector<uint8_t>({255, 128}, {2});
  EXPECT_EQ(exact<uint8_t>(u8 >> from_vector<uint8_t>({8, 7}, {2})), (std::vector<uint8_t>{0, 1}));
  EXPECT_EQ(exact<uint8_t>(u8 << from_vector<uint8_t>({1, 200}, {2})), (std::vector<uint8_t>{254, 0}));
}

TEST(PointwiseIntegers, PowErrorsAndWrap) {
  std::string msg = error_message([] { pow(tensor({2, 3}), -1); });
  EXPECT_NE(msg.find("Integers to negative integer powers are not allowed"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[pow]"), std::string::npos) << msg;
  EXPECT_THROW(tensor({2, 3}).pow_(-2), ValueError);
  // A negative integer *tensor* exponent is allowed (0, or +-1 for bases +-1).
  EXPECT_EQ(exact<int64_t>(pow(tensor({2, 1, -1, -1}), tensor({-1, -5, -3, -2}))), (std::vector<int64_t>{0, 1, -1, 1}));
  // A negative C++ exponent with a floating result is fine.
  EXPECT_EQ(vals(pow(tensor({2, 4}), -1.0)), (std::vector<double>{0.5, 0.25}));
  EXPECT_EQ(vals(pow(tensor({2.f, 4.f}), -1)), (std::vector<double>{0.5, 0.25}));
  // uint8 ** -1 must raise even though -1 would wrap to 255 in uint8.
  EXPECT_THROW(pow(from_vector<uint8_t>({2}, {1}), -1), ValueError);
  EXPECT_THROW(pow(from_vector<int32_t>({2}, {1}), int64_t{1} << 40), ValueError);
  EXPECT_EQ(exact<int8_t>(pow(from_vector<int8_t>({2, 3}, {2}), 7)), (std::vector<int8_t>{-128, -117}));
  EXPECT_EQ(exact<int64_t>(pow(2, tensor({3, 0, -1}))), (std::vector<int64_t>{8, 1, 0}));
  EXPECT_THROW(pow(tensor({true}), tensor({true})), TypeError);
}

TEST(PointwiseIntegers, AddcmulWrapsAndChecksValue) {
  Tensor r = addcmul(tensor({int64_t{1} << 62}), tensor({int64_t{1} << 62}), tensor({int64_t{4}}));
  EXPECT_EQ(exact<int64_t>(r), (std::vector<int64_t>{int64_t{1} << 62}));  // 2^62 + 2^64 wraps
  Tensor i8 = from_vector<int8_t>({1}, {1});
  std::string msg = error_message([&] { addcmul(i8, i8, i8, 300); });
  EXPECT_NE(msg.find("cannot be converted to int8"), std::string::npos) << msg;
  EXPECT_EQ(exact<int64_t>(addcmul(tensor({1, 2}), tensor({3, 4}), tensor({5, 6}), 0.5)), (std::vector<int64_t>{1, 2}));
}

// ---------------------------------------------------------------- dtypes, errors, meta
TEST(PointwiseDtypes, ResultDtypes) {
  Tensor i = tensor({1, 2});
  Tensor f16 = ones({2}, kFloat16);
  EXPECT_EQ(div(i, i).dtype(), kFloat32);
  EXPECT_EQ(div(i, i, "floor").dtype(), kInt64);
  EXPECT_EQ(div(ones({2}, kBool), ones({2}, kBool)).dtype(), kFloat32);
  EXPECT_EQ(div(f16, 3).dtype(), kFloat16);
  EXPECT_EQ(atan2(i, i).dtype(), kFloat32);
  EXPECT_EQ(atan2(i, ones({2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(pow(i, 0.5).dtype(), kFloat32);
  EXPECT_EQ(pow(tensor({true}), 2).dtype(), kInt64);
  EXPECT_EQ(pow(from_vector<int8_t>({2}, {1}), scalar_tensor(2)).dtype(), kInt8);
  EXPECT_EQ(eq(i, 1.5).dtype(), kBool);
  EXPECT_EQ(logical_xor(f16, i).dtype(), kBool);
  EXPECT_EQ(bitwise_xor(from_vector<uint8_t>({1}, {1}), from_vector<int8_t>({1}, {1})).dtype(), kInt16);
  EXPECT_EQ(where(tensor({true, false}), i, 2.5).dtype(), kFloat32);
  EXPECT_EQ(where(tensor({true, false}), 1, 2).dtype(), kInt64);
  EXPECT_EQ(where(tensor({true, false}), from_vector<int8_t>({1, 2}, {2}), 5).dtype(), kInt8);
  EXPECT_EQ(lerp(ones({2}, kBFloat16), ones({2}, kBFloat16), 0.5).dtype(), kBFloat16);
  EXPECT_EQ(addcmul(from_vector<int8_t>({1}, {1}), tensor({3}), scalar_tensor(5)).dtype(), kInt64);
  EXPECT_EQ(addcdiv(i, ones({2}), i).dtype(), kFloat32);
}

TEST(PointwiseDtypes, ErrorsNameTheOpAndTheDtypes) {
  std::string m = error_message([] { hypot(tensor({1}), tensor({2})); });
  EXPECT_NE(m.find("[hypot]"), std::string::npos) << m;
  EXPECT_NE(m.find("int64"), std::string::npos) << m;
  m = error_message([] { addcdiv(ones({2}), tensor({1, 2}), tensor({1, 2})); });
  EXPECT_NE(m.find("[addcdiv]"), std::string::npos) << m;
  EXPECT_NE(m.find("integer division"), std::string::npos) << m;
  m = error_message([] { div(ones({2}), ones({2}), "round"); });
  EXPECT_NE(m.find("rounding_mode"), std::string::npos) << m;
  EXPECT_THROW(div(ones({2}), ones({2}), "round"), ValueError);
  m = error_message([] { where(ones({2}), ones({2}), ones({2})); });
  EXPECT_NE(m.find("[where]"), std::string::npos) << m;
  EXPECT_NE(m.find("float32"), std::string::npos) << m;
  m = error_message([] { lerp(ones({2}), ones({2}, kFloat64), 0.5); });
  EXPECT_NE(m.find("`end`"), std::string::npos) << m;
  EXPECT_THROW(lerp(ones({2}), ones({2}), ones({}, kFloat64)), TypeError);
  EXPECT_THROW(maximum(ones({2}), ones({3})), ShapeError);
  EXPECT_THROW(ones({3}).div_(ones({2, 3})), ShapeError);
  EXPECT_THROW(ones({2}, kFloat16).hypot(ones({2}, kFloat16)), TypeError);
}

TEST(PointwiseMeta, InferMetaWithoutData) {
  DimVector s23{2, 3}, s3{3}, s0{};
  DimVector c23{3, 1}, c3{1}, c0{};
  auto meta = [](DType d, const DimVector& sizes, const DimVector& strides) {
    MetaRef m;
    m.dtype = d;
    m.sizes = sizes;
    m.strides = strides;
    return m;
  };
  MetaRef i = meta(kInt64, s23, c23);
  MetaRef f = meta(kFloat32, s3, c3);
  MetaRef w = meta(kInt64, s0, c0);
  w.is_wrapped_number = true;
  auto m = infer_meta(get_op("div"), {i, i}, {AttrValue(std::monostate{})});
  EXPECT_EQ(m[0].dtype, kFloat32);
  EXPECT_TRUE(IntArrayRef(m[0].sizes).equals(s23));
  m = infer_meta(get_op("div"), {i, i}, {AttrValue(std::string("floor"))});
  EXPECT_EQ(m[0].dtype, kInt64);
  m = infer_meta(get_op("lt"), {i, f}, {});
  EXPECT_EQ(m[0].dtype, kBool);
  m = infer_meta(get_op("pow"), {i, w}, {});
  EXPECT_EQ(m[0].dtype, kInt64);
  m = infer_meta(get_op("where"), {meta(kBool, s3, c3), i, w}, {});
  EXPECT_EQ(m[0].dtype, kInt64);
  EXPECT_TRUE(IntArrayRef(m[0].sizes).equals(s23));
  EXPECT_THROW(infer_meta(get_op("bitwise_and"), {f, f}, {}), TypeError);
  EXPECT_THROW(infer_meta(get_op("addcdiv"), {f, i, i}, {AttrValue(Scalar(1))}), TypeError);
}

TEST(PointwiseRegistry, InPlaceVariantsExistWherePyTorchHasThem) {
  for (const char* name : {"div", "floor_divide", "remainder", "fmod", "pow", "atan2", "hypot", "eq", "ne", "lt", "le", "gt",
                           "ge", "logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor",
                           "bitwise_left_shift", "bitwise_right_shift", "lerp", "addcmul", "addcdiv"}) {
    const OpDef& op = get_op(name);
    ASSERT_NE(op.inplace, nullptr) << name;
    EXPECT_EQ(op.inplace->name, std::string(name) + "_");
  }
  for (const char* name : {"maximum", "minimum", "fmax", "fmin", "where"}) EXPECT_EQ(find_op(std::string(name) + "_"), nullptr) << name;
  // Bool results carry no gradient.
  EXPECT_EQ(get_op("lt").output_differentiable, std::vector<bool>{false});
  EXPECT_FALSE(get_op("where").inputs[0].promote);
  EXPECT_FALSE(get_op("where").inputs[0].differentiable);
}

// ---------------------------------------------------------------- large tensors (parallel path)
TEST(PointwiseLarge, ParallelChunksMatchElementwiseFormula) {
  const int64_t n = 3 * 32768 + 17;  // several chunks of kGrainSize plus a ragged end
  Tensor a = arange(n, kFloat32) / 7.0 - 5000.0;
  Tensor b = arange(n, kFloat32).remainder(13) + 1;
  Tensor cond = arange(n).remainder(3) == 0;
  Tensor q = div(a, b, "floor"), w = where(cond, a, b), l = lerp(a, b, 0.25), r = remainder(a, b);
  Tensor lt = a < b;
  auto av = vals(a), bv = vals(b), qv = vals(q), wv = vals(w), lv = vals(l), rv = vals(r), ltv = vals(lt);
  for (int64_t i = 0; i < n; i += 1) {
    const float x = static_cast<float>(av[i]), y = static_cast<float>(bv[i]);
    ASSERT_EQ(qv[i], std::floor(static_cast<double>(x) / static_cast<double>(y))) << i;
    ASSERT_EQ(wv[i], i % 3 == 0 ? x : y) << i;
    ASSERT_FLOAT_EQ(static_cast<float>(lv[i]), x + 0.25f * (y - x)) << i;
    float m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    ASSERT_EQ(static_cast<float>(rv[i]), m) << i;
    ASSERT_EQ(ltv[i], x < y ? 1.0 : 0.0) << i;
  }
}

}  // namespace

// Dense bfloat16 rows run in blocks of 256 (widen, compute in float32, round): the results
// are the element-by-element ones (each computed in float32 and rounded once by
// core/half.h's rule), at block tails, in place, with a broadcast operand, for NaN (a
// signalling one comes back quiet), infinities, -0.0 and subnormals.
TEST(Pointwise, Bfloat16RowsInBlocksEqualElementByElement) {
  const int64_t n = 3 * 256 + 37;
  std::vector<uint16_t> bits(static_cast<size_t>(n)), bits2(static_cast<size_t>(n));
  uint32_t s = 12345;
  for (int64_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    bits[static_cast<size_t>(i)] = static_cast<uint16_t>(s >> 16);
    s = s * 1664525u + 1013904223u;
    bits2[static_cast<size_t>(i)] = static_cast<uint16_t>(s >> 16);
  }
  const uint16_t specials[] = {0x7fc0, 0xffc1, 0x7f81 /* signalling NaN */, 0x7f80, 0xff80, 0x8000, 0x0000,
                               0x0001, 0x807f, 0x3f80, 0xbf80};
  for (size_t k = 0; k < std::size(specials); ++k) bits[k * 7] = specials[k], bits2[k * 5 + 1] = specials[k];
  auto make = [&](const std::vector<uint16_t>& b) {
    Tensor t = empty({n}, kBFloat16);
    std::memcpy(t.data_ptr(), b.data(), b.size() * 2);
    return t;
  };
  auto value = [](uint16_t b) {
    uint32_t u = static_cast<uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  };
  // Selecting ops move bits, so even NaN payloads are exact; arithmetic on two NaNs (or
  // inf - inf) may give either payload depending on operand order, so there only "a NaN".
  auto expect = [&](const Tensor& got, const std::function<float(int64_t)>& want, const char* what,
                    bool any_nan = false) {
    ASSERT_EQ(got.dtype(), kBFloat16) << what;
    const uint16_t* g = static_cast<const uint16_t*>(got.data_ptr());
    for (int64_t i = 0; i < n; ++i) {
      const float w = want(i);
      if (any_nan && std::isnan(w)) ASSERT_TRUE(std::isnan(value(g[i]))) << what << " at " << i;
      else ASSERT_EQ(g[i], float_to_bfloat16_bits(w)) << what << " at " << i;
    }
  };
  Tensor a = make(bits), b = make(bits2);
  auto av = [&](int64_t i) { return value(bits[static_cast<size_t>(i)]); };
  auto bv = [&](int64_t i) { return value(bits2[static_cast<size_t>(i)]); };
  expect(relu(a), [&](int64_t i) { return av(i) < 0.0f ? 0.0f : av(i); }, "relu");
  expect(threshold_backward(b, a, 0), [&](int64_t i) { return av(i) <= 0.0f ? 0.0f : bv(i); }, "threshold_backward");
  expect(add(a, b), [&](int64_t i) { return av(i) + bv(i); }, "add", true);
  expect(mul(a, b), [&](int64_t i) { return av(i) * bv(i); }, "mul", true);
  const Tensor half = full({1}, 0.5, kBFloat16);
  expect(mul(a, half), [&](int64_t i) { return av(i) * 0.5f; }, "mul by a broadcast operand", true);
  expect(sub(half, a), [&](int64_t i) { return 0.5f - av(i); }, "broadcast first operand", true);
  Tensor c = a.clone();
  relu_(c);
  expect(c, [&](int64_t i) { return av(i) < 0.0f ? 0.0f : av(i); }, "relu_ in place");
}
