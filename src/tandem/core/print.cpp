// Tensor::to_string and operator<<: PyTorch-style tensor text.
//
// Follows PyTorch 1.13's torch/_tensor_str.py (repr of a strided CPU tensor) with its
// default print options: precision 4, threshold 1000 elements, 3 edge items, line width 80.
// Differences: dtype names have no "torch." prefix ("dtype=float64"), and autograd
// history is shown only as "requires_grad=True" (core/ cannot see grad_fn names).
//
// Rules reproduced:
//  * Floating values (float16/bfloat16 are widened to float32 first): over the nonzero
//    finite values that will be printed, if all are integral -> "1." style ("{:.0f}" + "."),
//    switching to scientific "{:.4e}" when max/min > 1000 or max > 1e8; otherwise fixed
//    "{:.4f}", switching to scientific when max/min > 1000, max > 1e8 or min < 1e-4.
//    nan, inf, -inf print as such. Every element is right-aligned to the widest formatted
//    nonzero finite value (at least 1 character; nonfinite values and zeros do not widen it).
//  * Integers print in decimal, bools as True/False, right-aligned to the widest value.
//  * More than 1000 elements: each dim longer than 6 shows its first and last 3 entries
//    with "..." between them; the widths come from the shown entries only.
//  * A 1-d run breaks lines after floor((80 - indent) / (width + 2)) elements; slices of an
//    n-d tensor are separated by "," plus n-1 newlines and indentation.
//  * Suffixes ", dtype=..." (not for float32 = default float, int64, bool), ", size=(...)"
//    for empty tensors that are not 1-d (empty tensors show every non-default-float
//    dtype), ", requires_grad=True"; a suffix that would pass column 80 goes on a new
//    line indented under "tensor(". That decision counts a dtype suffix as PyTorch
//    spells it ("dtype=torch.float64"), so the whole text always equals PyTorch's repr
//    with "torch." removed (a dtype suffix may then end a line before column 80).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "tandem/core/dtype.h"
#include "tandem/core/tensor.h"

namespace tandem {
namespace {

constexpr int kPrecision = 4;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr int64_t kLineWidth = 80;

std::string format_printf(const char* fmt, double v) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, fmt, kPrecision, v);
  if (n >= 0 && static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
  std::string big(static_cast<size_t>(n) + 1, '\0');  // %.4f of a huge double
  std::snprintf(big.data(), big.size(), fmt, kPrecision, v);
  big.resize(static_cast<size_t>(n));
  return big;
}
std::string fixed_str(double v) { return format_printf("%.*f", v); }  // Python "{:.4f}"
std::string sci_str(double v) { return format_printf("%.*e", v); }    // Python "{:.4e}"
std::string int_str(double v) {                                         // Python "{:.0f}"
  char buf[400];
  int n = std::snprintf(buf, sizeof buf, "%.0f", v);
  return std::string(buf, static_cast<size_t>(n));
}
// Python's str() of a nonfinite float (nan never carries a sign).
std::string nonfinite_str(double v) { return std::isnan(v) ? "nan" : (v > 0 ? "inf" : "-inf"); }

std::string pad_left(std::string s, int64_t width) {
  if (static_cast<int64_t>(s.size()) < width) s.insert(0, static_cast<size_t>(width) - s.size(), ' ');
  return s;
}

// torch._tensor_str._Formatter for a floating tensor.
struct FloatFormatter {
  bool int_mode = true;
  bool sci_mode = false;
  int64_t max_width = 1;

  explicit FloatFormatter(const std::vector<double>& values) {
    std::vector<double> nz;
    for (double v : values)
      if (std::isfinite(v) && v != 0.0) nz.push_back(v);
    if (nz.empty()) return;
    double mn = std::fabs(nz[0]), mx = mn;
    for (double v : nz) {
      mn = std::fmin(mn, std::fabs(v));
      mx = std::fmax(mx, std::fabs(v));
      if (v != std::ceil(v)) int_mode = false;
    }
    auto widen = [&](const std::string& s, int64_t extra) {
      max_width = std::max(max_width, static_cast<int64_t>(s.size()) + extra);
    };
    if (int_mode) {
      if (mx / mn > 1000.0 || mx > 1.0e8) {
        sci_mode = true;
        for (double v : nz) widen(sci_str(v), 0);
      } else {
        for (double v : nz) widen(int_str(v), 1);  // + 1 for the trailing "."
      }
    } else if (mx / mn > 1000.0 || mx > 1.0e8 || mn < 1.0e-4) {
      sci_mode = true;
      for (double v : nz) widen(sci_str(v), 0);
    } else {
      for (double v : nz) widen(fixed_str(v), 0);
    }
  }

  std::string format(double v) const {
    std::string s;
    if (!std::isfinite(v)) s = nonfinite_str(v);
    else if (sci_mode) s = sci_str(v);
    else if (int_mode) s = int_str(v) + ".";
    else s = fixed_str(v);
    return pad_left(std::move(s), max_width);
  }
};

// Lays out already formatted, padded elements (in printing order) as nested brackets
// (_tensor_str_with_formatter / _vector_str).
struct Layout {
  IntArrayRef sizes;
  bool summarize;
  int64_t width;  // the formatter's width (may be less than a nonfinite entry's length)
  const std::vector<std::string>& elems;
  size_t pos = 0;

  bool summarized(int64_t n) const { return summarize && n > 2 * kEdgeItems; }

  std::string vector_str(int64_t n, int64_t indent) {
    const int64_t element_length = width + 2;
    const int64_t per_line =
        std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(kLineWidth - indent) /
                                                             static_cast<double>(element_length))));
    std::vector<std::string> data;
    if (summarized(n)) {
      for (int64_t i = 0; i < kEdgeItems; ++i) data.push_back(elems[pos++]);
      data.emplace_back(" ...");
      for (int64_t i = 0; i < kEdgeItems; ++i) data.push_back(elems[pos++]);
    } else {
      for (int64_t i = 0; i < n; ++i) data.push_back(elems[pos++]);
    }
    std::string out = "[";
    const std::string line_sep = ",\n" + std::string(static_cast<size_t>(indent + 1), ' ');
    for (size_t i = 0; i < data.size(); ++i) {
      if (i > 0) out += (i % static_cast<size_t>(per_line) == 0) ? line_sep : std::string(", ");
      out += data[i];
    }
    return out + "]";
  }

  std::string tensor_str(size_t d, int64_t indent) {
    if (sizes.empty()) return elems[pos++];
    const int64_t n = sizes[d];
    if (d + 1 == sizes.size()) return vector_str(n, indent);
    const size_t sub_dim = sizes.size() - d;
    const std::string sep = "," + std::string(sub_dim - 1, '\n') + std::string(static_cast<size_t>(indent + 1), ' ');
    std::string out = "[";
    if (summarized(n)) {
      for (int64_t i = 0; i < kEdgeItems; ++i) out += tensor_str(d + 1, indent + 1) + sep;
      out += "..." + sep;
      for (int64_t i = 0; i < kEdgeItems; ++i) out += (i ? sep : std::string()) + tensor_str(d + 1, indent + 1);
    } else {
      for (int64_t i = 0; i < n; ++i) out += (i ? sep : std::string()) + tensor_str(d + 1, indent + 1);
    }
    return out + "]";
  }
};

// Element offsets (relative to data_ptr(), in elements) in printing order; with
// summarize, only the edge items of long dims (get_summarized_data).
void collect_offsets(IntArrayRef sizes, IntArrayRef strides, bool summarize, size_t d, int64_t off,
                     std::vector<int64_t>& out) {
  if (d == sizes.size()) {
    out.push_back(off);
    return;
  }
  const int64_t n = sizes[d];
  if (summarize && n > 2 * kEdgeItems) {
    for (int64_t i = 0; i < kEdgeItems; ++i) collect_offsets(sizes, strides, summarize, d + 1, off + i * strides[d], out);
    for (int64_t i = n - kEdgeItems; i < n; ++i)
      collect_offsets(sizes, strides, summarize, d + 1, off + i * strides[d], out);
  } else {
    for (int64_t i = 0; i < n; ++i) collect_offsets(sizes, strides, summarize, d + 1, off + i * strides[d], out);
  }
}

// The bracketed body of a non-empty tensor (_tensor_str).
std::string body_str(const Tensor& t, int64_t indent) {
  const bool summarize = t.numel() > kThreshold;
  std::vector<int64_t> offsets;
  collect_offsets(t.sizes(), t.strides(), summarize, 0, 0, offsets);

  std::vector<std::string> elems;
  elems.reserve(offsets.size());
  int64_t width = 1;
  TANDEM_DISPATCH_ALL_TYPES(t.dtype(), "print", [&] {
    const auto* p = static_cast<const scalar_t*>(t.data_ptr());
    if constexpr (std::is_same_v<scalar_t, bool>) {
      for (int64_t o : offsets) elems.emplace_back(p[o] ? "True" : "False");
    } else if constexpr (std::is_integral_v<scalar_t>) {
      for (int64_t o : offsets) elems.push_back(std::to_string(static_cast<int64_t>(p[o])));
    } else {
      std::vector<double> values;
      values.reserve(offsets.size());
      // float16/bfloat16 print via float32 (PyTorch: self.float()); all via Python's double.
      for (int64_t o : offsets) {
        if constexpr (std::is_same_v<scalar_t, double>) values.push_back(p[o]);
        else values.push_back(static_cast<double>(static_cast<float>(p[o])));
      }
      FloatFormatter f(values);
      for (double v : values) elems.push_back(f.format(v));
      width = f.max_width;
    }
  });
  if (!t.is_floating_point()) {
    for (const auto& s : elems) width = std::max(width, static_cast<int64_t>(s.size()));
    for (auto& s : elems) s = pad_left(std::move(s), width);
  }
  Layout layout{t.sizes(), summarize, width, elems};
  return layout.tensor_str(0, indent);
}

// Python's str(tuple(shape)): "(0, 3)", "(0,)".
std::string tuple_str(IntArrayRef sizes) {
  std::string s = "(";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + (sizes.size() == 1 ? ",)" : ")");
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  // Only CPU tensors exist today; a device other than the default would add
  // ", device='...'" here (PyTorch prints the device when it is not the default one).
  TANDEM_CHECK(device().is_cpu(), NotImplementedError, "print", "got a tensor on ", device(),
               ", expected a CPU tensor");
  const std::string prefix = "tensor(";
  const int64_t indent = static_cast<int64_t>(prefix.size());
  // Each suffix with the length PyTorch's line-break rule sees: a dtype suffix counts
  // its "torch." prefix, so the output is PyTorch's repr with "torch." removed.
  std::vector<std::pair<std::string, int64_t>> suffixes;
  auto add_suffix = [&](std::string s, int64_t extra) {
    const int64_t len = static_cast<int64_t>(s.size()) + extra;
    suffixes.emplace_back(std::move(s), len);
  };
  constexpr int64_t kTorchPrefixLen = 6;  // "torch."
  std::string body;
  const DType dt = dtype();
  if (numel() == 0) {
    if (dim() != 1) add_suffix("size=" + tuple_str(sizes()), 0);
    if (dt != default_float_dtype()) add_suffix("dtype=" + std::string(dtype_name(dt)), kTorchPrefixLen);
    body = "[]";
  } else {
    if (dt != default_float_dtype() && dt != DType::Int64 && dt != DType::Bool)
      add_suffix("dtype=" + std::string(dtype_name(dt)), kTorchPrefixLen);
    body = body_str(*this, indent);
  }
  if (requires_grad()) add_suffix("requires_grad=True", 0);

  // _add_suffixes
  std::string out = prefix + body;
  const size_t nl = out.rfind('\n');
  int64_t last_line_len = static_cast<int64_t>(out.size()) - (nl == std::string::npos ? -1 : static_cast<int64_t>(nl)) + 1;
  for (const auto& [s, len] : suffixes) {
    if (last_line_len + len + 2 > kLineWidth) {
      out += ",\n" + std::string(static_cast<size_t>(indent), ' ') + s;
      last_line_len = indent + len;
    } else {
      out += ", " + s;
      last_line_len += len + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace tandem
