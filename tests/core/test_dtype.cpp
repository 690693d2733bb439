// DTypes against PyTorch (tests/data/dtype.json, made by tests/oracle/gen_dtype.py):
// names and sizes, the promote_types lattice, can_cast, float16/bfloat16 rounding by
// bit pattern, and Tensor::to between every pair of dtypes.
#include <bit>
#include <cmath>

#include "core/core_test_util.h"
#include "support/tensor_json.h"

using namespace tandem;
using namespace tandem::testing;
using nlohmann::json;

namespace {

const json& doc() {
  static const json d = load_data("dtype.json");
  return d;
}

DType dt(const json& name) {
  auto d = dtype_from_name(name.get<std::string>());
  if (!d) throw std::runtime_error("unknown dtype " + name.dump());
  return *d;
}

TEST(DTypeOracle, NamesSizesAndCategories) {
  const auto& rows = doc().at("dtypes");
  ASSERT_EQ(rows.size(), static_cast<size_t>(kNumDTypes));
  for (int i = 0; i < kNumDTypes; ++i) {
    const DType t = static_cast<DType>(i);
    const json& r = rows[i];
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(dtype_name(t), r.at("name").get<std::string>());
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(element_size(t), r.at("itemsize").get<int64_t>());
    EXPECT_EQ(is_floating_point(t), r.at("is_floating_point").get<bool>());
    EXPECT_EQ(is_signed(t), r.at("is_signed").get<bool>());
    EXPECT_EQ(is_integral(t), !r.at("is_floating_point").get<bool>() && t != kBool);
    EXPECT_EQ(is_integral(t, true), !r.at("is_floating_point").get<bool>());
    EXPECT_EQ(is_reduced_float(t), t == kFloat16 || t == kBFloat16);
    EXPECT_EQ(empty({3}, t).nbytes(), 3 * r.at("itemsize").get<int64_t>());
  }
}

TEST(DTypeOracle, NameAliases) {
  EXPECT_EQ(dtype_from_name("float"), kFloat32);
  EXPECT_EQ(dtype_from_name("double"), kFloat64);
  EXPECT_EQ(dtype_from_name("half"), kFloat16);
  EXPECT_EQ(dtype_from_name("long"), kInt64);
  EXPECT_EQ(dtype_from_name("int"), kInt32);
  EXPECT_EQ(dtype_from_name("short"), kInt16);
  EXPECT_EQ(dtype_from_name("float128"), std::nullopt);
  EXPECT_EQ(dtype_from_name(""), std::nullopt);
}

TEST(DTypeOracle, PromoteTypesAll100Pairs) {
  const auto& rows = doc().at("promote");
  ASSERT_EQ(rows.size(), 100u);
  for (const auto& r : rows) {
    DType a = dt(r[0]), b = dt(r[1]), want = dt(r[2]);
    EXPECT_EQ(dtype_name(promote_types(a, b)), dtype_name(want)) << dtype_name(a) << " x " << dtype_name(b);
  }
}

TEST(DTypeOracle, CanCastAll100Pairs) {
  const auto& rows = doc().at("can_cast");
  ASSERT_EQ(rows.size(), 100u);
  for (const auto& r : rows)
    EXPECT_EQ(can_cast(dt(r[0]), dt(r[1])), r[2].get<bool>()) << r.dump();
}

TEST(DTypeOracle, DefaultFloatDtype) {
  EXPECT_EQ(default_float_dtype(), kFloat32);
  set_default_float_dtype(kFloat64);
  EXPECT_EQ(Scalar(1.5).dtype(), kFloat64);
  EXPECT_EQ(zeros({2}).dtype(), kFloat64);
  set_default_float_dtype(kFloat32);
  EXPECT_EQ(zeros({2}).dtype(), kFloat32);
  EXPECT_THROW(set_default_float_dtype(kInt64), TypeError);
  EXPECT_THROW(set_default_float_dtype(kFloat16), TypeError);
  EXPECT_EQ(default_float_dtype(), kFloat32);
}

// ---------------------------------------------------------------- float16 / bfloat16 bits
bool is_half_nan(uint16_t b) { return (b & 0x7c00u) == 0x7c00u && (b & 0x3ffu) != 0; }
bool is_bf16_nan(uint16_t b) { return (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0; }

TEST(DTypeOracle, Float32ToHalfAndBFloat16BitPatterns) {
  const auto& rows = doc().at("f32_to_reduced");
  ASSERT_GT(rows.size(), 1000u);
  std::vector<float> all;
  for (const auto& r : rows) {
    const float f = std::bit_cast<float>(r.at("f32").get<uint32_t>());
    all.push_back(f);
    const uint16_t want16 = r.at("f16").get<uint16_t>(), wantbf = r.at("bf16").get<uint16_t>();
    SCOPED_TRACE(r.dump());
    EXPECT_EQ(Half(f).bits, want16) << std::hex << "float16 of " << f;
    EXPECT_EQ(float_to_half_bits(f), want16);
    // PyTorch's CPU bfloat16 NaN is 0xffff from its SIMD path but 0x7fc0 from its scalar
    // path; only NaN-ness is specified.
    if (is_bf16_nan(wantbf)) EXPECT_TRUE(is_bf16_nan(BFloat16(f).bits)) << std::hex << BFloat16(f).bits;
    else EXPECT_EQ(BFloat16(f).bits, wantbf) << std::hex << "bfloat16 of " << f;
  }
  // The same through Tensor::to (the copy kernel).
  Tensor src = from_vector(all, {static_cast<int64_t>(all.size())});
  Tensor h = src.to(kFloat16), b = src.to(kBFloat16);
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(h.data_ptr<Half>()[i].bits, rows[i].at("f16").get<uint16_t>()) << rows[i].dump();
    const uint16_t wantbf = rows[i].at("bf16").get<uint16_t>();
    if (is_bf16_nan(wantbf)) EXPECT_TRUE(is_bf16_nan(b.data_ptr<BFloat16>()[i].bits));
    else EXPECT_EQ(b.data_ptr<BFloat16>()[i].bits, wantbf) << rows[i].dump();
  }
}

TEST(DTypeOracle, NamedHalfEdgeValues) {
  // The named edge cases, spelled out (the JSON holds them too).
  EXPECT_EQ(Half(65504.f).bits, 0x7bffu);
  EXPECT_EQ(Half(65520.f).bits, 0x7c00u);  // rounds to inf
  EXPECT_EQ(Half(65519.f).bits, 0x7bffu);
  EXPECT_EQ(Half(std::ldexp(1.f, -14)).bits, 0x0400u);  // min normal 6.1035e-05
  EXPECT_EQ(Half(std::ldexp(1.f, -24)).bits, 0x0001u);  // smallest subnormal 5.96e-08
  EXPECT_EQ(Half(std::ldexp(1.f, -25)).bits, 0x0000u);  // tie to even: 0
  EXPECT_EQ(Half(1.f + std::ldexp(1.f, -11)).bits, 0x3c00u);      // tie to even: 1.0
  EXPECT_EQ(Half(1.f + 3 * std::ldexp(1.f, -11)).bits, 0x3c02u);  // tie to even: up
  EXPECT_EQ(Half(-0.f).bits, 0x8000u);
  EXPECT_EQ(Half(INFINITY).bits, 0x7c00u);
  EXPECT_EQ(Half(-INFINITY).bits, 0xfc00u);
  EXPECT_TRUE(is_half_nan(Half(NAN).bits));
  EXPECT_EQ(BFloat16(1.f + std::ldexp(1.f, -8)).bits, 0x3f80u);      // tie to even
  EXPECT_EQ(BFloat16(1.f + 3 * std::ldexp(1.f, -8)).bits, 0x3f82u);  // tie to even: up
  EXPECT_EQ(BFloat16(-0.f).bits, 0x8000u);
  EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(NAN))));
}

TEST(DTypeOracle, HalfAndBFloat16ToFloat32) {
  for (const auto& r : doc().at("f16_to_f32")) {
    const uint16_t h = r[0].get<uint16_t>();
    const uint32_t want = r[1].get<uint32_t>();
    const float got = half_bits_to_float(h);
    if (std::isnan(std::bit_cast<float>(want))) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      EXPECT_EQ(std::signbit(got), std::signbit(std::bit_cast<float>(want))) << std::hex << h;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(got), want) << std::hex << "half " << h;
    }
  }
  for (const auto& r : doc().at("bf16_to_f32")) {
    const uint16_t b = r[0].get<uint16_t>();
    const uint32_t want = r[1].get<uint32_t>();
    const float got = bfloat16_bits_to_float(b);
    if (std::isnan(std::bit_cast<float>(want))) EXPECT_TRUE(std::isnan(got)) << std::hex << b;
    else EXPECT_EQ(std::bit_cast<uint32_t>(got), want) << std::hex << "bfloat16 " << b;
  }
}

TEST(DTypeOracle, EveryHalfRoundTripsThroughFloat) {
  for (uint32_t b = 0; b <= 0xffffu; ++b) {
    const uint16_t h = static_cast<uint16_t>(b);
    const float f = half_bits_to_float(h);
    if (is_half_nan(h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(is_half_nan(float_to_half_bits(f))) << std::hex << h;
    } else {
      ASSERT_EQ(float_to_half_bits(f), h) << std::hex << h;
    }
    const uint16_t bf = h;
    const float g = bfloat16_bits_to_float(bf);
    if (is_bf16_nan(bf)) ASSERT_TRUE(is_bf16_nan(float_to_bfloat16_bits(g))) << std::hex << bf;
    else ASSERT_EQ(float_to_bfloat16_bits(g), bf) << std::hex << bf;
  }
}

// ---------------------------------------------------------------- Tensor::to, all pairs
Tensor tensor_of(DType t, const json& vals) {
  const int64_t n = static_cast<int64_t>(vals.size());
  Tensor x = empty({n}, t);
  TANDEM_DISPATCH_ALL_TYPES(t, "tensor_of", [&] {
    scalar_t* p = x.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<scalar_t, bool>) p[i] = vals[i].get<bool>();
      else if constexpr (std::is_integral_v<scalar_t>) p[i] = static_cast<scalar_t>(vals[i].get<int64_t>());
      else p[i] = static_cast<scalar_t>(static_cast<float>(oracle::json_number(vals[i])));  // exact: src values
    }
  });
  if (t == kFloat64)  // keep doubles exact (not through float)
    for (int64_t i = 0; i < n; ++i) x.data_ptr<double>()[i] = oracle::json_number(vals[i]);
  return x;
}

std::string same_value(const Tensor& y, int64_t i, const json& want) {
  if (y.dtype() == kInt64) {
    int64_t got = y.data_ptr<int64_t>()[i];
    return got == want.get<int64_t>() ? "" : str_cat("got ", got, " want ", want.dump());
  }
  if (y.dtype() == kBool) {
    bool got = y.data_ptr<bool>()[i];
    return got == want.get<bool>() ? "" : str_cat("got ", got, " want ", want.dump());
  }
  double got = TANDEM_DISPATCH_ALL_TYPES(y.dtype(), "read", [&]() -> double {
    const scalar_t v = y.data_ptr<scalar_t>()[i];
    if constexpr (std::is_same_v<scalar_t, Half> || std::is_same_v<scalar_t, BFloat16>) return static_cast<float>(v);
    else return static_cast<double>(v);
  });
  double w = oracle::json_number(want);
  if (std::isnan(w)) return std::isnan(got) ? "" : str_cat("got ", got, " want nan");
  if (got != w || std::signbit(got) != std::signbit(w)) return str_cat("got ", got, " want ", want.dump());
  return "";
}

TEST(DTypeOracle, ToBetweenAllDtypePairs) {
  const auto& cases = doc().at("to");
  ASSERT_EQ(cases.size(), 100u);
  for (const auto& c : cases) {
    const DType src = dt(c.at("src")), dst = dt(c.at("dst"));
    SCOPED_TRACE(str_cat(dtype_name(src), " -> ", dtype_name(dst)));
    Tensor x = tensor_of(src, c.at("in"));
    Tensor y = x.to(dst);
    ASSERT_EQ(y.dtype(), dst);
    ASSERT_EQ(y.numel(), x.numel());
    if (src == dst) EXPECT_TRUE(y.is_same(x)) << "to(same dtype) returns self";
    else EXPECT_FALSE(y.is_alias_of(x));
    for (int64_t i = 0; i < y.numel(); ++i) {
      std::string d = same_value(y, i, c.at("out")[i]);
      EXPECT_TRUE(d.empty()) << "input " << c.at("in")[i].dump() << ": " << d;
    }
    // Non-contiguous source (every other element of a doubled tensor) through copy_.
    Tensor wide = empty({x.numel(), 2}, src);
    wide.select(1, 0).copy_(x);
    Tensor strided = wide.select(1, 0);
    ASSERT_FALSE(strided.is_contiguous() && x.numel() > 1);
    Tensor out = zeros({x.numel()}, dst);
    out.copy_(strided);
    for (int64_t i = 0; i < out.numel(); ++i) {
      std::string d = same_value(out, i, c.at("out")[i]);
      EXPECT_TRUE(d.empty()) << "strided input " << c.at("in")[i].dump() << ": " << d;
    }
  }
}

TEST(DTypeOracle, ToSameDtypeCopyFlag) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_TRUE(x.to(kInt64).is_same(x));
  Tensor c = x.to(kInt64, /*copy=*/true);
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(c.sizes().vec(), (DimVector{2, 3}));
  c.fill_(7);
  EXPECT_EQ(x[1][2].item<int64_t>(), 5);
  // A non-contiguous tensor converted keeps its logical order.
  Tensor f = x.t().to(kFloat32);
  EXPECT_EQ(f.sizes().vec(), (DimVector{3, 2}));
  EXPECT_EQ(f[2][1].item<float>(), 5.f);
  EXPECT_EQ(f[0][1].item<float>(), 3.f);
}

TEST(DTypeOracle, ScalarCategories) {
  EXPECT_EQ(Scalar(true).dtype(), kBool);
  EXPECT_EQ(Scalar(3).dtype(), kInt64);
  EXPECT_EQ(Scalar(int8_t{3}).dtype(), kInt64);
  EXPECT_EQ(Scalar(2.5f).dtype(), kFloat32);
  EXPECT_EQ(Scalar(Half(1.5f)).dtype(), kFloat32);
  EXPECT_TRUE(Scalar(Half(1.5f)).is_floating_point());
  EXPECT_EQ(Scalar(2.7).to<int64_t>(), 2);
  EXPECT_EQ(Scalar(-2.7).to<int64_t>(), -2);
  EXPECT_EQ(Scalar(0.5).to<bool>(), true);
}

}  // namespace
