#include "support/tensor_json.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace tandem::oracle {

double json_number(const nlohmann::json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    throw std::runtime_error("bad number string " + s);
  }
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return v.get<double>();
}

namespace {
Tensor contiguous_from_values(const std::vector<double>& vals, const std::vector<int64_t>& shape, DType dt,
                              const nlohmann::json& raw) {
  Tensor t = empty(shape, dt);
  TANDEM_DISPATCH_ALL_TYPES(dt, "tensor_from_json", [&] {
    scalar_t* p = t.data_ptr<scalar_t>();
    for (size_t i = 0; i < vals.size(); ++i) {
      if constexpr (std::is_same_v<scalar_t, int64_t>) {
        p[i] = raw[i].is_number_integer() ? raw[i].get<int64_t>() : static_cast<int64_t>(vals[i]);
      } else if constexpr (std::is_same_v<scalar_t, bool>) {
        p[i] = vals[i] != 0;
      } else {
        p[i] = static_cast<scalar_t>(vals[i]);
      }
    }
  });
  return t;
}
}  // namespace

Tensor tensor_from_json(const nlohmann::json& spec) {
  DType dt = *dtype_from_name(spec.at("dtype").get<std::string>());
  std::vector<int64_t> shape = spec.at("shape").get<std::vector<int64_t>>();
  std::string layout = spec.value("layout", "contiguous");
  const auto& raw = spec.at("data");
  std::vector<double> vals;
  for (const auto& v : raw) vals.push_back(json_number(v));
  if (layout == "expanded") {
    std::vector<int64_t> small = spec.at("expand_from").get<std::vector<int64_t>>();
    return contiguous_from_values(vals, small, dt, raw).expand(shape);
  }
  Tensor logical = contiguous_from_values(vals, shape, dt, raw);
  if (layout == "transposed") {
    // Memory holds the transpose; the returned view is logically equal to `data`.
    Tensor mem = logical.transpose(-1, -2).contiguous();
    return mem.transpose(-1, -2);
  }
  if (layout == "strided") {
    std::vector<int64_t> big = shape;
    big.back() *= 2;
    Tensor mem = zeros(big, dt);
    Tensor v = mem.slice(-1, 0, std::nullopt, 2);
    v.copy_(logical);
    return v;
  }
  return logical;
}

AttrValue attr_from_json(const nlohmann::json& a) {
  if (a.is_null()) return std::monostate{};
  if (a.contains("int")) return a["int"].get<int64_t>();
  if (a.contains("float")) return json_number(a["float"]);
  if (a.contains("bool")) return a["bool"].get<bool>();
  if (a.contains("ints")) return a["ints"].get<std::vector<int64_t>>();
  if (a.contains("str")) return a["str"].get<std::string>();
  if (a.contains("dtype")) return *dtype_from_name(a["dtype"].get<std::string>());
  if (a.contains("scalar")) {
    std::string kind = a.value("kind", "float");
    if (kind == "bool") return Scalar(a["scalar"].get<bool>());
    if (kind == "int") return Scalar(a["scalar"].get<int64_t>());
    return Scalar(json_number(a["scalar"]));
  }
  throw std::runtime_error("bad attr " + a.dump());
}

std::vector<double> to_doubles(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<double> out(static_cast<size_t>(c.numel()));
  TANDEM_DISPATCH_ALL_TYPES(c.dtype(), "to_doubles", [&] {
    const scalar_t* p = c.data_ptr<scalar_t>();
    for (size_t i = 0; i < out.size(); ++i) if constexpr (std::is_same_v<scalar_t, Half> || std::is_same_v<scalar_t, BFloat16>) out[i] = static_cast<float>(p[i]); else out[i] = static_cast<double>(p[i]);
  });
  return out;
}

std::string compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
  std::ostringstream os;
  if (!got.defined()) return "result is undefined";
  if (!got.sizes().equals(want.sizes())) {
    os << "shape " << got.sizes() << " != expected " << want.sizes();
    return os.str();
  }
  if (got.dtype() != want.dtype()) {
    os << "dtype " << dtype_name(got.dtype()) << " != expected " << dtype_name(want.dtype());
    return os.str();
  }
  auto g = to_doubles(got), w = to_doubles(want);
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) && std::isnan(g[i])) continue;
    if (g[i] == w[i]) continue;
    if (std::isfinite(w[i]) && std::fabs(g[i] - w[i]) <= atol + rtol * std::fabs(w[i])) continue;
    os << "element " << i << ": got " << g[i] << ", expected " << w[i] << " (rtol " << rtol << ", atol " << atol << ")";
    return os.str();
  }
  return "";
}

}  // namespace tandem::oracle
