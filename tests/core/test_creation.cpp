// Creation functions and conversions: arange/linspace/eye/full against PyTorch
// (tests/data/creation.json, made by tests/oracle/gen_creation.py), and by hand:
// zeros/ones/*_like, tensor({...}) dtypes, from_vector, from_blob, clone, contiguous,
// to(), fill_/zero_ version counter, detach.
#include <cmath>

#include "core/core_test_util.h"
#include "support/tensor_json.h"

using namespace tandem;
using namespace tandem::testing;
using nlohmann::json;

namespace {

const json& doc() {
  static const json d = load_data("creation.json");
  return d;
}

Scalar scalar_of(const json& a) {
  if (a.contains("int")) return Scalar(a["int"].get<int64_t>());
  if (a.contains("bool")) return Scalar(a["bool"].get<bool>());
  return Scalar(oracle::json_number(a.at("float")));
}

TensorOptions opts_of(const json& c) {
  if (c.at("dtype").is_null()) return {};
  return TensorOptions(*dtype_from_name(c["dtype"].get<std::string>()));
}

/// Exact comparison with the PyTorch result: dtype, shape, values (NaN == NaN; int64
/// compared as integers).
void expect_result(const Tensor& got, const json& want, double tol = 0) {
  ASSERT_EQ(dtype_name(got.dtype()), want.at("dtype").get<std::string>());
  ASSERT_EQ(got.sizes().vec(), dims_of(want.at("shape")));
  ASSERT_TRUE(got.is_contiguous());
  const auto& vals = want.at("values");
  ASSERT_EQ(static_cast<size_t>(got.numel()), vals.size());
  for (int64_t i = 0; i < got.numel(); ++i) {
    if (got.dtype() == kInt64) {
      EXPECT_EQ(got.data_ptr<int64_t>()[i], vals[i].get<int64_t>()) << "element " << i;
      continue;
    }
    double g = oracle::to_doubles(got)[static_cast<size_t>(i)];
    double w = oracle::json_number(vals[i]);
    if (std::isnan(w)) EXPECT_TRUE(std::isnan(g)) << "element " << i;
    else if (tol == 0) EXPECT_EQ(g, w) << "element " << i;
    else EXPECT_NEAR(g, w, tol) << "element " << i;
  }
}

TEST(CreationOracle, Arange) {
  for (const auto& c : doc().at("arange")) {
    SCOPED_TRACE(c.dump());
    Tensor t = arange(scalar_of(c.at("start")), scalar_of(c.at("end")), scalar_of(c.at("step")), opts_of(c));
    expect_result(t, c.at("result"));
  }
  for (const auto& c : doc().at("arange_errors")) {
    SCOPED_TRACE(c.dump());
    EXPECT_TANDEM_ERROR(arange(scalar_of(c.at("start")), scalar_of(c.at("end")), scalar_of(c.at("step")), opts_of(c)),
                        ValueError, "arange", "step must be nonzero");
  }
  // The one-argument form.
  expect_result(arange(5), doc().at("arange")[0].at("result"));
}

TEST(CreationOracle, Linspace) {
  for (const auto& c : doc().at("linspace")) {
    SCOPED_TRACE(c.dump());
    const double a = c.at("start").get<double>(), b = c.at("end").get<double>();
    Tensor t = linspace(a, b, c.at("steps").get<int64_t>(), opts_of(c));
    // PyTorch computes in the output dtype, with SIMD chunks whose width depends on the
    // CPU, so its last bit is not portable: allow 2 ulps of the dtype at the range's scale
    // (integers and the end points are exact).
    const double scale = std::max(std::fabs(a), std::fabs(b));
    const double ulp = t.dtype() == kFloat64 ? 0x1p-52 : t.dtype() == kFloat32 ? 0x1p-23
                       : t.dtype() == kFloat16 ? 0x1p-10 : t.dtype() == kBFloat16 ? 0x1p-7 : 0.0;
    expect_result(t, c.at("result"), 2 * ulp * scale);
    const auto& vals = c.at("result").at("values");
    if (!vals.empty()) {
      EXPECT_EQ(oracle::to_doubles(t).front(), oracle::json_number(vals.front())) << "first value exact";
      EXPECT_EQ(oracle::to_doubles(t).back(), oracle::json_number(vals.back())) << "last value exact";
    }
  }
}

TEST(CreationOracle, Eye) {
  for (const auto& c : doc().at("eye")) {
    SCOPED_TRACE(c.dump());
    std::optional<int64_t> m;
    if (!c.at("m").is_null()) m = c["m"].get<int64_t>();
    expect_result(eye(c.at("n").get<int64_t>(), m, opts_of(c)), c.at("result"));
  }
}

TEST(CreationOracle, FullAndFill) {
  for (const auto& c : doc().at("full")) {
    SCOPED_TRACE(c.dump());
    DimVector size = dims_of(c.at("size"));
    Scalar v = scalar_of(c.at("value"));
    if (c.contains("error")) {
      EXPECT_TANDEM_ERROR(full(size, v, opts_of(c)), TypeError, "full", "without overflow");
      Tensor z = zeros(size, opts_of(c).dtype(*dtype_from_name(c.at("dtype").get<std::string>())));
      const uint64_t v0 = z._version();
      EXPECT_TANDEM_ERROR(z.fill_(v), TypeError, "fill_", "without overflow");
      EXPECT_EQ(z._version(), v0) << "a rejected fill_ changes nothing";
      continue;
    }
    Tensor t = full(size, v, opts_of(c));
    expect_result(t, c.at("result"));
    Tensor z = zeros(size, t.dtype());
    z.fill_(v);
    expect_result(z, c.at("result"));
  }
}

// ---------------------------------------------------------------- by hand
TEST(Creation, ZerosOnesDefaultsAndLike) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.sizes().vec(), (DimVector{2, 3}));
  EXPECT_TRUE(z.is_contiguous());
  for (double v : oracle::to_doubles(z)) EXPECT_EQ(v, 0.0);
  Tensor o = ones({4}, kInt32);
  EXPECT_EQ(o.dtype(), kInt32);
  for (double v : oracle::to_doubles(o)) EXPECT_EQ(v, 1.0);
  EXPECT_EQ(zeros({}).dim(), 0);
  EXPECT_EQ(zeros({}).numel(), 1);
  EXPECT_EQ(ones({0, 5}).numel(), 0);
  EXPECT_EQ(full({2}, 3).dtype(), kInt64) << "full takes the value's dtype, like torch.full";
  EXPECT_EQ(full({2}, 3.0).dtype(), kFloat32);
  EXPECT_EQ(full({2}, true).dtype(), kBool);

  // *_like: shape and dtype of the source (also from a non-contiguous source), options override.
  Tensor src = arange(6, kFloat64).view({2, 3}).t();
  for (const Tensor& l : {zeros_like(src), ones_like(src), full_like(src, 2.5), empty_like(src)}) {
    EXPECT_EQ(l.sizes().vec(), (DimVector{3, 2}));
    EXPECT_EQ(l.dtype(), kFloat64);
    EXPECT_FALSE(l.is_alias_of(src));
  }
  EXPECT_EQ(oracle::to_doubles(ones_like(src)), std::vector<double>(6, 1.0));
  EXPECT_EQ(oracle::to_doubles(full_like(src, 2.5)), std::vector<double>(6, 2.5));
  EXPECT_EQ(zeros_like(src, kInt8).dtype(), kInt8);
  EXPECT_EQ(full_like(arange(3), 7).dtype(), kInt64);
  EXPECT_EQ(full_like(arange(3), 2.5).dtype(), kInt64) << "like torch.full_like: the source dtype wins";
  EXPECT_EQ(full_like(arange(3), 2.5)[0].item<int64_t>(), 2);
}

TEST(Creation, TensorLiteralDtypes) {
  EXPECT_EQ(tensor({1.0, 2.0}).dtype(), kFloat32) << "a double literal gives the default float dtype";
  EXPECT_EQ(tensor({1.f, 2.f}).dtype(), kFloat32);
  EXPECT_EQ(tensor({1, 2, 3}).dtype(), kInt64);
  EXPECT_EQ(tensor({int64_t{1}, int64_t{2}}).dtype(), kInt64);
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({1.5, 2.5}, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(tensor({1, 2}, kFloat16).dtype(), kFloat16);
  Tensor b = tensor({true, false, true});
  EXPECT_EQ(b.sizes().vec(), (DimVector{3}));
  EXPECT_EQ(b[1].item<bool>(), false);
  EXPECT_EQ(b[2].item<bool>(), true);
  Tensor m = tensor({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(m.sizes().vec(), (DimVector{2, 3}));
  EXPECT_EQ(m.dtype(), kFloat32);
  EXPECT_EQ(m[1][0].item<float>(), 4.f);
  EXPECT_EQ(tensor({1, 2, 3})[2].item<int64_t>(), 3);
  EXPECT_EQ(tensor({0.1})[0].item<float>(), 0.1f) << "rounded once to float32";
  set_default_float_dtype(kFloat64);
  EXPECT_EQ(tensor({1.0}).dtype(), kFloat64);
  set_default_float_dtype(kFloat32);
  Tensor s = scalar_tensor(2.5);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), kFloat32);
  EXPECT_EQ(scalar_tensor(3).dtype(), kInt64);
  EXPECT_EQ(scalar_tensor(3, kInt8).dtype(), kInt8);
}

TEST(Creation, FromVector) {
  std::vector<int32_t> v = {1, 2, 3, 4, 5, 6};
  Tensor t = from_vector(v, {2, 3});
  EXPECT_EQ(t.dtype(), kInt32);
  EXPECT_EQ(t.sizes().vec(), (DimVector{2, 3}));
  EXPECT_NE(t.data_ptr(), static_cast<void*>(v.data())) << "from_vector copies";
  v[0] = 100;
  EXPECT_EQ(t[0][0].item<int32_t>(), 1);
  EXPECT_EQ(t[1][2].item<int32_t>(), 6);
  Tensor f = from_vector(std::vector<float>{1.5f, -2.5f}, {2}, kFloat64);
  EXPECT_EQ(f.dtype(), kFloat64);
  EXPECT_EQ(f[1].item<double>(), -2.5);
  Tensor h = from_vector(std::vector<Half>{Half(1.5f), Half(65504.f)}, {2});
  EXPECT_EQ(h.dtype(), kFloat16);
  EXPECT_EQ(h[1].item<float>(), 65504.f);
  Tensor b = from_vector(std::vector<bool>{true, false, true, true}, {2, 2});
  EXPECT_EQ(b.dtype(), kBool);
  EXPECT_EQ(b[0][1].item<bool>(), false);
  EXPECT_EQ(b[1][1].item<bool>(), true);
  EXPECT_EQ(from_vector(std::vector<bool>{true, false}, {2}, kFloat32)[0].item<float>(), 1.f);
  Tensor e = from_vector(std::vector<double>{}, {0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(e.dtype(), kFloat64);
  Tensor s = from_vector(std::vector<int64_t>{42}, {});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<int64_t>(), 42);
}

TEST(Creation, FromBlobBorrowsMemory) {
  std::vector<float> buf = {0, 1, 2, 3, 4, 5};
  Tensor t = from_blob(buf.data(), {2, 3}, kFloat32);
  EXPECT_EQ(t.data_ptr(), static_cast<void*>(buf.data()));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t[1][0].item<float>(), 3.f);
  buf[4] = 40.f;  // the tensor sees changes of the buffer...
  EXPECT_EQ(t[1][1].item<float>(), 40.f);
  t[0][2].fill_(-1.f);  // ...and the buffer sees writes through the tensor
  EXPECT_EQ(buf[2], -1.f);
  // Custom strides: a column-major 2x3 view of the same buffer.
  Tensor cm = from_blob(buf.data(), {2, 3}, kFloat32, {}, DimVector{1, 2});
  EXPECT_EQ(cm.strides().vec(), (DimVector{1, 2}));
  EXPECT_FALSE(cm.is_contiguous());
  EXPECT_EQ(cm[0][1].item<float>(), -1.f);  // buf[2]
  EXPECT_EQ(cm[1][2].item<float>(), 5.f);   // buf[5]
  EXPECT_EQ(cm[1][0].item<float>(), 1.f);   // buf[1]
  EXPECT_EQ(oracle::to_doubles(cm.contiguous()), (std::vector<double>{0, -1, 40, 1, 3, 5}));
  // Broadcast strides (0) read one element many times.
  Tensor bc = from_blob(buf.data() + 5, {3, 2}, kFloat32, {}, DimVector{0, 0});
  EXPECT_EQ(oracle::to_doubles(bc), std::vector<double>(6, 5.0));
  // Other dtypes; storage size covers exactly the strided extent.
  std::vector<int64_t> ib = {7, 8, 9, 10};
  Tensor it = from_blob(ib.data(), {2}, kInt64, {}, DimVector{3});
  EXPECT_EQ(it[1].item<int64_t>(), 10);
  EXPECT_EQ(it.storage()->nbytes(), 4u * sizeof(int64_t));
  EXPECT_EQ(from_blob(ib.data(), {0, 4}, kInt64).storage()->nbytes(), 0u);
}

TEST(Creation, CloneIsADeepContiguousCopy) {
  Tensor x = arange(12).view({3, 4});
  Tensor xt = x.t();
  Tensor c = xt.clone();
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.sizes().vec(), (DimVector{4, 3}));
  EXPECT_EQ(c.strides().vec(), (DimVector{3, 1}));
  EXPECT_EQ(c.dtype(), kInt64);
  EXPECT_EQ(oracle::to_doubles(c), oracle::to_doubles(xt));
  c.fill_(-1);
  EXPECT_EQ(x[2][3].item<int64_t>(), 11) << "writing the clone leaves the source alone";
  x.fill_(5);
  EXPECT_EQ(c[0][0].item<int64_t>(), -1) << "writing the source leaves the clone alone";
  // Expanded source: the clone materialises every element.
  Tensor e = arange(3).view({1, 3}).expand({4, 3}).clone();
  EXPECT_EQ(e.strides().vec(), (DimVector{3, 1}));
  EXPECT_EQ(e.storage()->nbytes(), 12u * 8u);
  e[0][0].fill_(100);
  EXPECT_EQ(e[1][0].item<int64_t>(), 0);
  // 0-d and zero-size.
  Tensor s = scalar_tensor(2.5).clone();
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 2.5f);
  EXPECT_EQ(zeros({0, 3}).clone().sizes().vec(), (DimVector{0, 3}));
  // A view with an offset clones only what it sees.
  Tensor v = arange(10).slice(0, 4, 10, 3).clone();
  EXPECT_EQ(v.storage_offset(), 0);
  EXPECT_EQ(oracle::to_doubles(v), (std::vector<double>{4, 7}));
}

TEST(Creation, ContiguousCopiesOnlyWhenNeeded) {
  Tensor x = arange(6).view({2, 3});
  EXPECT_TRUE(x.contiguous().is_same(x)) << "already contiguous: the same tensor";
  Tensor xt = x.t();
  Tensor c = xt.contiguous();
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(oracle::to_doubles(c), (std::vector<double>{0, 3, 1, 4, 2, 5}));
  Tensor row = x.select(0, 1);  // offset 3, contiguous
  EXPECT_TRUE(row.is_contiguous());
  EXPECT_TRUE(row.contiguous().is_same(row));
  Tensor ones_dims = arange(3).view({3, 1}).expand({3, 1});
  EXPECT_TRUE(ones_dims.contiguous().is_same(ones_dims));
  Tensor stepped = arange(10).slice(0, 0, 10, 2);
  EXPECT_FALSE(stepped.is_contiguous());
  EXPECT_FALSE(stepped.contiguous().is_alias_of(stepped));
}

TEST(Creation, ToCopiesOnlyWhenAsked) {
  Tensor x = arange(4);
  EXPECT_TRUE(x.to(kInt64).is_same(x));
  Tensor c = x.to(kInt64, true);
  EXPECT_FALSE(c.is_alias_of(x));
  EXPECT_EQ(oracle::to_doubles(c), oracle::to_doubles(x));
  Tensor f = x.to(kFloat32);
  EXPECT_EQ(f.dtype(), kFloat32);
  EXPECT_FALSE(f.is_alias_of(x));
  EXPECT_EQ(f[3].item<float>(), 3.f);
  Tensor tt = arange(6).view({2, 3}).t().to(kFloat64, true);
  EXPECT_TRUE(tt.is_contiguous());
  EXPECT_EQ(oracle::to_doubles(tt), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(Creation, InPlaceWritesBumpTheVersionCounter) {
  Tensor x = zeros({2, 3});
  const uint64_t v0 = x._version();
  x.fill_(1.5);
  EXPECT_GT(x._version(), v0);
  const uint64_t v1 = x._version();
  x.zero_();
  EXPECT_GT(x._version(), v1);
  EXPECT_EQ(oracle::to_doubles(x), std::vector<double>(6, 0.0));
  const uint64_t v2 = x._version();
  x.copy_(ones({3}));
  EXPECT_GT(x._version(), v2);
  // Views and detach share the counter: a write through any of them is seen by all.
  Tensor view = x.select(0, 1);
  Tensor det = x.detach();
  const uint64_t v3 = x._version();
  EXPECT_EQ(view._version(), v3);
  EXPECT_EQ(det._version(), v3);
  view.fill_(2);
  EXPECT_GT(x._version(), v3);
  EXPECT_EQ(det._version(), x._version());
  det.zero_();
  EXPECT_EQ(view._version(), x._version());
  // Out-of-place ops and new views do not bump it.
  const uint64_t v4 = x._version();
  Tensor y = x.clone();
  Tensor z = x.to(kFloat64);
  Tensor w = x.t().unsqueeze(0);
  EXPECT_EQ(x._version(), v4);
  EXPECT_EQ(y._version(), 0u) << "a new tensor starts at version 0";
  (void)z;
  (void)w;
}

TEST(Creation, DetachSharesStorage) {
  Tensor x = arange(6, kFloat32).view({2, 3}).t();
  x.requires_grad_(true);
  Tensor d = x.detach();
  EXPECT_TRUE(d.is_alias_of(x));
  EXPECT_FALSE(d.is_same(x));
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(x.requires_grad());
  EXPECT_EQ(d.sizes().vec(), x.sizes().vec());
  EXPECT_EQ(d.strides().vec(), x.strides().vec());
  EXPECT_EQ(d.storage_offset(), x.storage_offset());
  EXPECT_EQ(d.data_ptr(), x.data_ptr());
  d[0][1].fill_(42.f);
  EXPECT_EQ(x[0][1].item<float>(), 42.f);
}

}  // namespace
