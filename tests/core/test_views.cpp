// View ops against PyTorch: sizes, strides, storage offset, contiguity and values of
// chains of view calls (tests/data/views.json, made by tests/oracle/gen_views.py),
// reshape's view-or-copy decision, view()'s errors, and writes through views.
#include <map>

#include "core/core_test_util.h"

using namespace tandem;
using namespace tandem::testing;
using nlohmann::json;

namespace {

std::optional<int64_t> opt_int(const json& j) {
  if (j.is_null()) return std::nullopt;
  return j.get<int64_t>();
}

/// Applies one step of a chain (see gen_views.py for the vocabulary).
std::vector<Tensor> apply_step(const Tensor& x, const json& st) {
  const std::string op = st.at("op");
  const json& a = st.at("args");
  std::vector<Tensor> r;
  auto one = [&](Tensor t) { r.push_back(std::move(t)); };
  if (op == "view") one(view(x, dims_of(a[0])));
  else if (op == "reshape") one(reshape(x, dims_of(a[0])));
  else if (op == "permute") one(permute(x, dims_of(a[0])));
  else if (op == "transpose") one(transpose(x, a[0], a[1]));
  else if (op == "t") one(t(x));
  else if (op == "movedim") one(movedim(x, a[0], a[1]));
  else if (op == "slice") one(slice(x, a[0], opt_int(a[1]), opt_int(a[2]), a[3]));
  else if (op == "narrow") one(narrow(x, a[0], a[1], a[2]));
  else if (op == "select") one(select(x, a[0], a[1]));
  else if (op == "squeeze") one(squeeze(x));
  else if (op == "squeeze_dim") one(squeeze(x, a[0].get<int64_t>()));
  else if (op == "unsqueeze") one(unsqueeze(x, a[0]));
  else if (op == "expand") one(expand(x, dims_of(a[0])));
  else if (op == "broadcast_to") one(broadcast_to(x, dims_of(a[0])));
  else if (op == "flatten") one(flatten(x, a[0], a[1]));
  else if (op == "unflatten") one(unflatten(x, a[0], dims_of(a[1])));
  else if (op == "split") r = split(x, a[0], a[1]);
  else if (op == "split_with_sizes") r = split_with_sizes(x, dims_of(a[0]), a[1]);
  else if (op == "chunk") r = chunk(x, a[0], a[1]);
  else if (op == "unbind") r = unbind(x, a[0]);
  else if (op == "diagonal") one(diagonal(x, a[0], a[1], a[2]));
  else if (op == "as_strided") {
    std::optional<int64_t> off;
    if (a.size() > 2) off = a[2].get<int64_t>();
    one(as_strided(x, dims_of(a[0]), dims_of(a[1]), off));
  } else {
    throw std::runtime_error("unknown step " + op);
  }
  if (st.contains("pick")) {
    Tensor p = r.at(st["pick"].get<size_t>());
    r = {p};
  }
  return r;
}

Tensor make_base(const json& shape) { return arange(multiply_integers(dims_of(shape))).view(dims_of(shape)); }

std::vector<Tensor> run_chain(const Tensor& base, const json& chain) {
  std::vector<Tensor> cur{base};
  for (const auto& st : chain) {
    EXPECT_EQ(cur.size(), 1u) << "multi-output step in the middle of a chain needs 'pick'";
    cur = apply_step(cur.at(0), st);
  }
  return cur;
}

/// Element values read straight through sizes/strides/offset from the storage
/// (independent of tandem's copy kernels), row-major logical order.
std::vector<int64_t> read_through_strides(const Tensor& t) {
  const auto* base = static_cast<const int64_t*>(t.storage()->data());
  std::vector<int64_t> out;
  if (t.numel() == 0) return out;
  DimVector idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t pos = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) pos += idx[d] * t.strides()[d];
    EXPECT_GE(pos, 0);
    EXPECT_LT(pos * 8, static_cast<int64_t>(t.storage()->nbytes())) << "view reads outside its storage";
    out.push_back(base[pos]);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

void expect_geometry(const Tensor& got, const json& want, const Tensor& base, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(got.sizes().vec(), dims_of(want.at("sizes")));
  EXPECT_EQ(got.strides().vec(), dims_of(want.at("strides")));
  EXPECT_EQ(got.storage_offset(), want.at("offset").get<int64_t>());
  EXPECT_EQ(got.dtype(), kInt64);
  EXPECT_EQ(got.is_contiguous(), want.at("contiguous").get<bool>());
  if (want.contains("alias"))
    EXPECT_EQ(got.is_alias_of(base), want["alias"].get<bool>()) << "shares the base's storage exactly when torch's does";
  else
    EXPECT_TRUE(got.is_alias_of(base)) << "a view must share the base's storage";
  EXPECT_EQ(read_through_strides(got), want.at("values").get<std::vector<int64_t>>());
  // Values through the copy kernels too (contiguous() of the view).
  Tensor c = got.contiguous();
  ASSERT_TRUE(c.is_contiguous());
  std::vector<int64_t> vals(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
  EXPECT_EQ(vals, want.at("values").get<std::vector<int64_t>>());
}

class ViewCaseGroup : public ::testing::Test {
 public:
  explicit ViewCaseGroup(std::vector<json> cases) : cases_(std::move(cases)) {}
  void TestBody() override {
    for (const json& c : cases_) {
      const std::string name = c.at("name");
      SCOPED_TRACE(name + " chain=" + c.at("chain").dump());
      Tensor base = make_base(c.at("base"));
      if (c.contains("error")) {
        const std::string want = c["error"];
        try {
          run_chain(base, c["chain"]);
          ADD_FAILURE() << name << ": expected " << want << " (torch: " << c.value("torch_error", "") << ")";
        } catch (const std::exception& e) {
          EXPECT_EQ(error_name(e), want) << e.what();
          EXPECT_EQ(std::string(e.what()).rfind("[", 0), 0u) << "message must start with [op]: " << e.what();
        }
        continue;
      }
      std::vector<Tensor> outs;
      try {
        outs = run_chain(base, c["chain"]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << ": raised " << error_name(e) << ": " << e.what();
        continue;
      }
      const json& want = c.at("outputs");
      ASSERT_EQ(outs.size(), want.size()) << name << ": number of pieces";
      for (size_t i = 0; i < outs.size(); ++i) expect_geometry(outs[i], want[i], base, name + " piece " + std::to_string(i));
    }
  }

 private:
  std::vector<json> cases_;
};

// One test per starting layout (or 'error', 'mid') of views.json cases; a failure names
// the case and its chain.
const bool registered = [] {
  json doc = load_data("views.json");
  std::map<std::string, std::vector<json>> groups;
  for (const auto& c : doc.at("cases")) {
    std::string name = c.at("name");
    groups[name.substr(0, name.find('/'))].push_back(c);
  }
  for (auto& [g, cases] : groups) {
    ::testing::RegisterTest("ViewOracle", sanitize(g).c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [cases = cases]() -> ::testing::Test* { return new ViewCaseGroup(cases); });
  }
  return true;
}();

TEST(ViewOracleData, HasEnoughCases) {
  json doc = load_data("views.json");
  EXPECT_GT(doc.at("cases").size(), 1000u);
  EXPECT_GT(doc.at("reshape").size(), 50u);
  EXPECT_GT(doc.at("writes").size(), 20u);
}

// ---------------------------------------------------------------- reshape: view or copy
TEST(ReshapeOracle, ViewOrCopyMatchesTorch) {
  json doc = load_data("views.json");
  for (const auto& c : doc.at("reshape")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    Tensor base = make_base(c.at("base"));
    Tensor x = run_chain(base, c.at("chain")).at(0);
    DimVector target = dims_of(c.at("target"));
    // view() raises ShapeError exactly where torch's view raises.
    if (c.at("view_ok").get<bool>()) {
      Tensor v;
      ASSERT_NO_THROW(v = x.view(target));
      expect_geometry(v, c.at("view"), base, "view");
    } else {
      EXPECT_THROW(x.view(target), ShapeError);
    }
    Tensor r = x.reshape(target);
    EXPECT_EQ(r.sizes().vec(), dims_of(c.at("reshape").at("sizes")));
    EXPECT_EQ(r.strides().vec(), dims_of(c.at("reshape").at("strides")));
    EXPECT_EQ(r.storage_offset(), c.at("reshape").at("offset").get<int64_t>());
    const bool alias = c.at("reshape_alias");
    EXPECT_EQ(r.is_alias_of(x), alias) << "reshape must alias exactly when torch's does";
    EXPECT_EQ(r.is_alias_of(base), alias);
    std::vector<int64_t> want = c.at("reshape").at("values").get<std::vector<int64_t>>();
    Tensor rc = r.contiguous();
    EXPECT_EQ(std::vector<int64_t>(rc.data_ptr<int64_t>(), rc.data_ptr<int64_t>() + rc.numel()), want);
    if (!alias) {
      // A copy is contiguous and independent of the source.
      EXPECT_TRUE(r.is_contiguous());
      if (r.numel() > 0) {
        r.fill_(-5);
        EXPECT_NE(x.contiguous().data_ptr<int64_t>()[0], -5);
      }
    } else if (r.numel() > 0) {
      // An alias: a write through the reshape shows up in the source.
      Tensor r0 = r, x0 = x;
      while (r0.dim() > 0) r0 = r0.select(0, 0);
      while (x0.dim() > 0) x0 = x0.select(0, 0);
      r0.fill_(-5);
      EXPECT_EQ(x0.item<int64_t>(), -5);
    }
  }
}

// ---------------------------------------------------------------- writes through views
TEST(ViewWrites, FillAndCopyReachTheBase) {
  json doc = load_data("views.json");
  for (const auto& c : doc.at("writes")) {
    const std::string name = c.at("name");
    SCOPED_TRACE(name);
    Tensor base = make_base(c.at("base"));
    Tensor v = run_chain(base, c.at("chain")).at(0);
    const uint64_t v0 = base._version();
    if (c.at("write") == "fill") {
      v.fill_(c.at("value").get<int64_t>());
    } else {
      std::vector<int64_t> vals(static_cast<size_t>(v.numel()));
      for (size_t i = 0; i < vals.size(); ++i) vals[i] = -1 - static_cast<int64_t>(i);
      v.copy_(from_vector(vals, v.sizes()));
    }
    EXPECT_GT(base._version(), v0) << "an in-place write bumps the shared version counter";
    std::vector<int64_t> got(base.data_ptr<int64_t>(), base.data_ptr<int64_t>() + base.numel());
    EXPECT_EQ(got, c.at("base_after").get<std::vector<int64_t>>());
  }
}

// ---------------------------------------------------------------- by hand
TEST(ViewWrites, BaseWritesShowInViews) {
  Tensor base = arange(12).view({3, 4});
  Tensor col = base.select(1, 2);
  Tensor diag = base.diagonal(1);
  Tensor tr = base.t();
  Tensor stepped = base.slice(1, 0, 4, 3);
  base.fill_(-1);
  EXPECT_EQ(col[1].item<int64_t>(), -1);
  EXPECT_EQ(diag[2].item<int64_t>(), -1);
  EXPECT_EQ(tr[3][2].item<int64_t>(), -1);
  EXPECT_EQ(stepped[2][1].item<int64_t>(), -1);
  // A write through one view is seen through another view of the same base.
  col.fill_(9);
  EXPECT_EQ(tr[2][0].item<int64_t>(), 9);
  EXPECT_EQ(diag[1].item<int64_t>(), 9);  // element (1, 2)
  EXPECT_EQ(stepped[0][0].item<int64_t>(), -1);
}

TEST(ViewWrites, CopyIntoOverlappingViewIsRejected) {
  // PyTorch 1.13 raises "unsupported operation: some elements of the input tensor and the
  // written-to tensor refer to a single memory location" for both (the result would
  // depend on the order of the writes); nothing is written.
  Tensor x = arange(9).view({3, 3});
  EXPECT_TANDEM_ERROR(x.copy_(x.t()), ValueError, "copy", "refer to a single memory location");
  std::vector<int64_t> got(x.data_ptr<int64_t>(), x.data_ptr<int64_t>() + 9);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  // Shifted overlap within one row.
  Tensor y = arange(6);
  EXPECT_TANDEM_ERROR(y.slice(0, 1, 6).copy_(y.slice(0, 0, 5)), ValueError, "copy", "refer to a single memory location");
  // Cloning the source first is the documented way out.
  y.slice(0, 1, 6).copy_(y.slice(0, 0, 5).clone());
  std::vector<int64_t> got2(y.data_ptr<int64_t>(), y.data_ptr<int64_t>() + 6);
  EXPECT_EQ(got2, (std::vector<int64_t>{0, 0, 1, 2, 3, 4}));
}

// A size-1 dim whose stride happens to equal size * stride of the next kept dim must not
// make the elementwise iterator merge two dims that are not contiguous in every operand
// (it once compared against the dropped size-1 dim's stride; the weight gradient of a
// grouped conv1d read garbage through this).
TEST(ViewWrites, CopyOfPermutedTensorWithSizeOneDim) {
  Tensor base = arange(72);
  Tensor src = base.as_strided({2, 2, 2, 1, 9}, {9, 18, 36, 9, 1});  // dims 0 and 2 of [2,2,2,9] swapped
  Tensor got = src.contiguous();
  Tensor want = base.view({2, 2, 2, 9}).permute({2, 1, 0, 3}).contiguous();
  std::vector<int64_t> g(got.data_ptr<int64_t>(), got.data_ptr<int64_t>() + 72);
  std::vector<int64_t> w(want.data_ptr<int64_t>(), want.data_ptr<int64_t>() + 72);
  EXPECT_EQ(g, w);
  EXPECT_EQ(g[9], 36);  // element [0, 0, 1, 0, 0] = base[36]
  // The same through reshape of the view chain the conv weight gradient builds.
  Tensor x = arange(72).view({2, 4, 9}).unsqueeze(2);
  Tensor r = reshape(permute(reshape(x, {2, 2, 2, 1, 9}), {2, 1, 0, 3, 4}), {2, 4, 1, 9});
  // r[c, g * 2 + n] = x[n, g * 2 + c]
  EXPECT_EQ(r[0][2][0][1].item<int64_t>(), 19);  // x[0, 2, 0, 1]
  EXPECT_EQ(r[1][1][0][0].item<int64_t>(), 45);  // x[1, 1, 0, 0]
}

TEST(ViewMethods, MatchTheFreeFunctions) {
  Tensor x = arange(24).view({2, 3, 4});
  auto same = [](const Tensor& a, const Tensor& b) {
    return a.sizes().vec() == b.sizes().vec() && a.strides().vec() == b.strides().vec() &&
           a.storage_offset() == b.storage_offset() && a.is_alias_of(b);
  };
  EXPECT_TRUE(same(x.mT(), transpose(x, -2, -1)));
  EXPECT_TRUE(same(x.view_as(zeros({4, 6})), view(x, {4, 6})));
  EXPECT_TRUE(same(x.reshape_as(zeros({24})), reshape(x, {24})));
  EXPECT_TRUE(same(x.select(0, 1).unsqueeze(0).expand_as(zeros({5, 3, 4})), expand(select(x, 0, 1).unsqueeze(0), {5, 3, 4})));
  EXPECT_TRUE(same(x.broadcast_to({2, 2, 3, 4}), expand(x, {2, 2, 3, 4})));
  EXPECT_TRUE(same(x[1], select(x, 0, 1)));
  EXPECT_TRUE(same(x.narrow(2, 1, 2), slice(x, 2, 1, 3)));
  EXPECT_TRUE(same(movedim(x, 0, 2), permute(x, {1, 2, 0})));
  EXPECT_EQ(x.mT().sizes().vec(), (DimVector{2, 4, 3}));
  // Views of views keep pointing at the original storage and offsets add up.
  Tensor v = x[1][2].slice(0, 1, 4, 2);
  EXPECT_EQ(v.storage_offset(), 12 + 8 + 1);
  EXPECT_EQ(v.strides().vec(), (DimVector{2}));
  EXPECT_EQ(v[1].item<int64_t>(), 23);
  EXPECT_TRUE(v.is_alias_of(x));
}

TEST(ViewMethods, ViewsOfOtherDtypes) {
  for (DType d : {kBool, kUInt8, kInt16, kFloat16, kBFloat16, kFloat32, kFloat64}) {
    Tensor x = zeros({4, 6}, d);
    Tensor v = x.t().slice(0, 1, 6, 2).unsqueeze(1);
    EXPECT_EQ(v.dtype(), d);
    EXPECT_EQ(v.sizes().vec(), (DimVector{3, 1, 4}));
    EXPECT_EQ(v.strides().vec(), (DimVector{2, 24, 6}));  // as torch: unsqueeze takes size*stride of the next dim
    EXPECT_EQ(v.storage_offset(), 1);
    EXPECT_EQ(static_cast<char*>(v.data_ptr()) - static_cast<char*>(x.data_ptr()), element_size(d))
        << "data_ptr accounts for the offset in bytes";
    v.fill_(1);
    EXPECT_EQ(x[3][1].item<double>(), 1.0);
    EXPECT_EQ(x[3][0].item<double>(), 0.0);
  }
}

// Regression: the elementwise iterator merged dims by comparing with the stride of an
// input dim instead of the last kept one, so after dropping a size-1 dim whose stride
// matched, copies of such permuted views skipped half the elements (found through a
// grouped conv1d's weight gradient, tests/nn).
TEST(ViewMethods, CopyOfPermutedViewWithSize1Dim) {
  Tensor base = arange(8, kFloat32).reshape({2, 2, 2, 1});
  Tensor p = base.permute({2, 1, 0, 3});  // sizes [2, 2, 2, 1], strides [1, 2, 4, 1]
  std::vector<float> want{0, 4, 2, 6, 1, 5, 3, 7};
  Tensor c = p.contiguous();
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(c.flatten()[i].item<float>(), want[static_cast<size_t>(i)]) << i;
  Tensor sum = p + zeros({2, 2, 2, 1});
  for (int64_t i = 0; i < 8; ++i) EXPECT_EQ(sum.flatten()[i].item<float>(), want[static_cast<size_t>(i)]) << i;
}

}  // namespace
