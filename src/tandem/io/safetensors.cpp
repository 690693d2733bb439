// safetensors reader and atomic writer (format and rules in safetensors.h).
#include "tandem/io/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <set>
#include <tuple>

#include "tandem/core/grad_mode.h"
#include "tandem/io/file_util.h"
#include "tandem/io/json_guard.h"

namespace tandem::io {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host needs byte swapping here");

namespace {

using ojson = nlohmann::ordered_json;

struct DTypeName {
  DType dtype;
  const char* name;
};
constexpr DTypeName kNames[] = {
    {kFloat64, "F64"}, {kFloat32, "F32"}, {kFloat16, "F16"}, {kBFloat16, "BF16"}, {kInt64, "I64"},
    {kInt32, "I32"},   {kInt16, "I16"},   {kInt8, "I8"},     {kUInt8, "U8"},      {kBool, "BOOL"},
};
// Valid safetensors dtypes that tandem has no dtype for (reported as unsupported rather
// than unknown, so the user learns the file is fine but tandem can't hold it).
constexpr const char* kUnsupported[] = {"U16", "U32", "U64", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "F6_E2M3",
                                        "F6_E3M2", "C64"};

constexpr const char* kMetadataKey = "__metadata__";

[[noreturn]] void load_fail(const std::string& path, const std::string& what) {
  throw RuntimeError(str_cat("[load_safetensors] ", path, ": ", what));
}

// A shape for messages; a long one is cut after a few dimensions.
std::string shape_str(const std::vector<uint64_t>& s) {
  constexpr size_t kShown = 8;
  std::string out = "[";
  for (size_t i = 0; i < s.size() && i < kShown; ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  if (s.size() > kShown) out += ", ... (" + std::to_string(s.size()) + " dims)";
  return out + "]";
}

// Appends a short rendering of v to out: strings and keys quoted by excerpt(), containers
// cut once out passes `budget` characters or below a few levels. Bounded work and
// recursion, whatever v holds (error messages must never print a whole hostile value).
void brief_into(const ojson& v, std::string& out, size_t budget, int depth) {
  constexpr size_t kString = 24;
  if (v.is_string()) {
    out += excerpt(v.get_ref<const std::string&>(), kString);
  } else if (v.is_array() || v.is_object()) {
    const bool arr = v.is_array();
    if (depth >= 3 && !v.empty()) {
      out += arr ? "[...]" : "{...}";
      return;
    }
    out += arr ? '[' : '{';
    bool first = true;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (out.size() >= budget) {
        out += ", ... (" + std::to_string(v.size()) + " items)";
        break;
      }
      if (!first) out += ", ";
      first = false;
      if (!arr) out += excerpt(it.key(), kString) + ": ";
      brief_into(it.value(), out, budget, depth + 1);
    }
    out += arr ? ']' : '}';
  } else {
    out += v.dump();  // number, bool, null: short
  }
}

std::string brief(const ojson& v) {
  std::string out;
  brief_into(v, out, 80, 0);
  return out;
}

// A non-negative integer field; `what` names it in the error.
uint64_t get_uint(const std::string& path, const ojson& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer()) load_fail(path, str_cat(what, " is negative (", brief(v), ")"));
  load_fail(path, str_cat(what, " is not a non-negative integer (got ", brief(v), ")"));
}

struct Entry {
  std::string name;
  DType dtype;
  DimVector shape;
  uint64_t begin, end;
  size_t order;  // position in the header, to keep ties (empty tensors) stable
};

Entry parse_entry(const std::string& path, const std::string& name, const ojson& info, size_t order) {
  const std::string where = str_cat("tensor ", excerpt(name));
  if (!info.is_object()) load_fail(path, str_cat(where, ": entry is not a JSON object (got ", brief(info), ")"));
  auto field = [&](const char* key) -> const ojson& {
    auto it = info.find(key);
    if (it == info.end()) load_fail(path, str_cat(where, ": missing field \"", key, "\""));
    return *it;
  };
  Entry e;
  e.name = name;
  e.order = order;
  const ojson& dt = field("dtype");
  if (!dt.is_string()) load_fail(path, str_cat(where, ": \"dtype\" is not a string (got ", brief(dt), ")"));
  const std::string dname = dt.get<std::string>();
  auto d = dtype_from_safetensors_name(dname);
  if (!d) {
    bool valid = std::any_of(std::begin(kUnsupported), std::end(kUnsupported), [&](const char* n) { return dname == n; });
    load_fail(path, str_cat(where, ": ", valid ? "dtype " + excerpt(dname) + " is not supported by tandem"
                                               : "unknown dtype " + excerpt(dname),
                            " (expected one of F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)"));
  }
  e.dtype = *d;
  const ojson& sh = field("shape");
  if (!sh.is_array()) load_fail(path, str_cat(where, ": \"shape\" is not an array (got ", brief(sh), ")"));
  std::vector<uint64_t> dims;
  uint64_t numel = 1;
  bool overflow = false;
  for (size_t i = 0; i < sh.size(); ++i) {
    uint64_t n = get_uint(path, sh[i], str_cat(where, ": shape[", i, "]"));
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) overflow = true;
    dims.push_back(n);
    if (__builtin_mul_overflow(numel, n, &numel)) overflow = true;
  }
  uint64_t nbytes = 0;
  if (overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(element_size(e.dtype)), &nbytes) ||
      nbytes > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    load_fail(path, str_cat(where, ": shape ", shape_str(dims), " is too large (its byte size overflows)"));
  for (uint64_t n : dims) e.shape.push_back(static_cast<int64_t>(n));
  const ojson& off = field("data_offsets");
  if (!off.is_array() || off.size() != 2)
    load_fail(path, str_cat(where, ": \"data_offsets\" is not an array [begin, end] (got ", brief(off), ")"));
  e.begin = get_uint(path, off[0], str_cat(where, ": data_offsets[0]"));
  e.end = get_uint(path, off[1], str_cat(where, ": data_offsets[1]"));
  if (e.begin > e.end)
    load_fail(path, str_cat(where, ": data_offsets [", e.begin, ", ", e.end, "] has begin > end"));
  if (e.end - e.begin != nbytes)
    load_fail(path, str_cat(where, ": data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin,
                            " bytes, but dtype ", excerpt(dname), " and shape ", shape_str(dims), " need ", nbytes));
  return e;
}

// Parses the header; rejects nesting deeper than kJsonMaxDepth before parsing (see
// json_guard.h) and duplicate keys in any object (nlohmann keeps the last one silently,
// which would hide a corrupt or ambiguous file).
ojson parse_header(const std::string& path, const std::string& text) {
  if (size_t at = json_depth_violation(text); at != std::string::npos)
    load_fail(path, str_cat("header nests arrays/objects deeper than ", kJsonMaxDepth, " levels (file offset ",
                            8 + at, ")"));
  std::vector<std::set<std::string>> keys;
  std::string dup;
  auto cb = [&](int /*depth*/, ojson::parse_event_t ev, ojson& parsed) {
    if (ev == ojson::parse_event_t::object_start) {
      keys.emplace_back();
    } else if (ev == ojson::parse_event_t::object_end) {
      if (!keys.empty()) keys.pop_back();
    } else if (ev == ojson::parse_event_t::key && !keys.empty() && dup.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) dup = k;
    }
    return true;
  };
  ojson header;
  try {
    header = ojson::parse(text, cb);
  } catch (const ojson::parse_error& e) {
    load_fail(path, str_cat("header is not valid JSON (file offset ", 8 + (e.byte > 0 ? e.byte - 1 : 0),
                            "): ", clip(e.what())));
  } catch (const ojson::exception& e) {
    // Found by fuzzing: a number too large for a double ("1e999") raises out_of_range,
    // not parse_error, and escaped as a non-tandem exception.
    load_fail(path, str_cat("header is not valid JSON: ", clip(e.what())));
  }
  if (!dup.empty()) load_fail(path, str_cat("header has the key ", excerpt(dup), " more than once"));
  if (!header.is_object()) load_fail(path, str_cat("header is not a JSON object (it starts with ", excerpt(text, 16), ")"));
  return header;
}

}  // namespace

std::optional<Tensor> SafetensorsContents::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  return std::nullopt;
}

const char* safetensors_dtype_name(DType dtype) {
  for (const auto& n : kNames)
    if (n.dtype == dtype) return n.name;
  throw TypeError(str_cat("[safetensors] no safetensors name for dtype ", dtype_name(dtype)));
}

std::optional<DType> dtype_from_safetensors_name(const std::string& name) {
  for (const auto& n : kNames)
    if (name == n.name) return n.dtype;
  return std::nullopt;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors, const Metadata& metadata) {
  const char* fn = "save_safetensors";
  std::set<std::string> seen;
  ojson header = ojson::object();
  if (!metadata.empty()) {
    ojson m = ojson::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    header[kMetadataKey] = std::move(m);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    TANDEM_CHECK(!name.empty(), ValueError, fn, path, ": tensor ", i, " has an empty name");
    TANDEM_CHECK(name != kMetadataKey, ValueError, fn, path, ": \"", kMetadataKey, "\" is reserved and cannot name a tensor");
    TANDEM_CHECK(seen.insert(name).second, ValueError, fn, path, ": duplicate tensor name '", name, "'");
    TANDEM_CHECK(t.defined(), ValueError, fn, path, ": tensor '", name, "' is undefined");
    TANDEM_CHECK(t.device() == kCPU, NotImplementedError, fn, path, ": tensor '", name, "' is not on the CPU");
    const uint64_t nbytes = static_cast<uint64_t>(t.nbytes());
    ojson shape = ojson::array();
    for (int64_t s : t.sizes()) shape.push_back(s);
    header[name] = ojson{{"dtype", safetensors_dtype_name(t.dtype())},
                         {"shape", std::move(shape)},
                         {"data_offsets", ojson::array({offset, offset + nbytes})}};
    offset += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const ojson::type_error& e) {  // names/metadata must be valid UTF-8
    throw ValueError(str_cat("[", fn, "] ", path, ": a tensor name or metadata string is not valid UTF-8 (", e.what(), ")"));
  }
  // Pad with spaces so the data buffer starts 8-byte aligned, like the reference writer.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t len_bytes[8];
  const uint64_t n = text.size();
  std::memcpy(len_bytes, &n, 8);  // little-endian host (static_assert above)

  AutoGradMode no_grad(false);  // contiguous copies below are plain data, not graph nodes
  atomic_write(path, fn, [&](FileWriter& w) {
    w.write(len_bytes, 8);
    w.write(text.data(), text.size());
    for (const auto& [name, t] : tensors) {
      if (t.numel() == 0) continue;
      Tensor c = t.contiguous();
      w.write(c.data_ptr(), static_cast<size_t>(c.nbytes()));
    }
  });
}

SafetensorsContents load_safetensors(const std::string& path) {
  FileReader f(path, "load_safetensors");
  const uint64_t size = f.size();
  if (size < 8) load_fail(path, str_cat("file is ", size, " bytes, too short for the 8-byte header length"));
  uint8_t len_bytes[8];
  f.read_at(len_bytes, 8, 0);
  uint64_t n;
  std::memcpy(&n, len_bytes, 8);
  if (n > kSafetensorsMaxHeader)
    load_fail(path, str_cat("header length ", n, " exceeds the limit of ", kSafetensorsMaxHeader, " bytes"));
  if (n > size - 8)
    load_fail(path, str_cat("header length ", n, " runs past the end of the file (file is ", size, " bytes)"));
  std::string text(static_cast<size_t>(n), '\0');
  f.read_at(text.data(), n, 8);
  ojson header = parse_header(path, text);

  SafetensorsContents out;
  std::vector<Entry> entries;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      const ojson& m = it.value();
      if (m.is_null()) continue;
      if (!m.is_object()) load_fail(path, str_cat("\"__metadata__\" is not an object (got ", brief(m), ")"));
      for (auto mt = m.begin(); mt != m.end(); ++mt) {
        if (!mt.value().is_string())
          load_fail(path, str_cat("\"__metadata__\" value of ", excerpt(mt.key()), " is not a string (got ",
                                  brief(mt.value()), ")"));
        out.metadata[mt.key()] = mt.value().get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, it.key(), it.value(), entries.size()));
  }

  // The ranges must tile [0, buffer size) exactly.
  const uint64_t data_start = 8 + n, buffer = size - data_start;
  for (const Entry& e : entries)
    if (e.end > buffer)
      load_fail(path, str_cat("tensor ", excerpt(e.name), ": data_offsets [", e.begin, ", ", e.end,
                              "] run past the end of the file (the data buffer is ", buffer, " bytes)"));
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.order) < std::tie(b.begin, b.end, b.order);
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered)
      load_fail(path, str_cat("tensor ", excerpt(e.name), ": data_offsets [", e.begin, ", ", e.end, "] overlap tensor ",
                              excerpt(prev->name), " [", prev->begin, ", ", prev->end, "]"));
    if (e.begin > covered)
      load_fail(path, str_cat("tensor ", excerpt(e.name), ": data_offsets [", e.begin, ", ", e.end, "] leave a gap of ",
                              e.begin - covered, " bytes after offset ", covered));
    covered = e.end;
    prev = &e;
  }
  if (covered != buffer)
    load_fail(path, str_cat("the data buffer is ", buffer, " bytes but the tensors cover only ", covered,
                            " (", buffer - covered, " trailing bytes)"));

  for (const Entry& e : entries) {
    Tensor t = empty_tensor(e.shape, e.dtype);
    if (e.end > e.begin) f.read_at(t.data_ptr(), e.end - e.begin, data_start + e.begin);
    if (e.dtype == kBool) {
      const auto* p = static_cast<const uint8_t*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); ++i)
        if (p[i] > 1)
          load_fail(path, str_cat("tensor ", excerpt(e.name), ": BOOL element ", i, " holds byte ",
                                  static_cast<int>(p[i]), " (file offset ", data_start + e.begin + i,
                                  "), expected 0 or 1"));
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  return out;
}

}  // namespace tandem::io
