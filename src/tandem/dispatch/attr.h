#pragma once
// Attribute values of an op call (everything that is not a tensor input): ints, floats,
// Scalars, int lists, strings, dtypes, or None. Stored positionally in schema order.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "tandem/core/array_ref.h"
#include "tandem/core/dtype.h"
#include "tandem/core/error.h"
#include "tandem/core/scalar.h"
#include "tandem/core/small_vector.h"

namespace tandem {

/// One attribute: None (std::monostate), bool, int64, double, Scalar, int list, string or DType.
using AttrValue = std::variant<std::monostate, bool, int64_t, double, Scalar, std::vector<int64_t>, std::string, DType>;

/// Builds an AttrValue from an optional (nullopt -> None).
template <typename T>
AttrValue opt_attr(const std::optional<T>& v) {
  if (v) return AttrValue(*v);
  return AttrValue(std::monostate{});
}

using Attrs = SmallVec<AttrValue, 4>;

/// Typed read access to the attributes of one call, with the op name for errors.
class AttrReader {
 public:
  AttrReader(const char* op, ArrayRef<AttrValue> attrs) : op_(op), attrs_(attrs) {}
  size_t size() const { return attrs_.size(); }
  bool is_none(size_t i) const { return i >= attrs_.size() || std::holds_alternative<std::monostate>(attrs_[i]); }
  int64_t i(size_t k) const { return get<int64_t>(k); }
  double f(size_t k) const {
    if (auto* s = std::get_if<Scalar>(&at(k))) return s->to_double();
    if (auto* n = std::get_if<int64_t>(&at(k))) return static_cast<double>(*n);
    return get<double>(k);
  }
  bool b(size_t k) const { return get<bool>(k); }
  const Scalar& scalar(size_t k) const { return get<Scalar>(k); }
  const std::vector<int64_t>& ints(size_t k) const { return get<std::vector<int64_t>>(k); }
  const std::string& str(size_t k) const { return get<std::string>(k); }
  DType dtype(size_t k) const { return get<DType>(k); }
  std::optional<int64_t> opt_i(size_t k) const { return is_none(k) ? std::nullopt : std::optional<int64_t>(i(k)); }
  std::optional<double> opt_f(size_t k) const { return is_none(k) ? std::nullopt : std::optional<double>(f(k)); }
  std::optional<DType> opt_dtype(size_t k) const { return is_none(k) ? std::nullopt : std::optional<DType>(dtype(k)); }
  std::optional<Scalar> opt_scalar(size_t k) const { return is_none(k) ? std::nullopt : std::optional<Scalar>(scalar(k)); }
  const AttrValue& at(size_t k) const {
    TANDEM_CHECK(k < attrs_.size(), ValueError, op_, "missing attribute #", k);
    return attrs_[k];
  }
  ArrayRef<AttrValue> all() const { return attrs_; }

 private:
  template <typename T>
  const T& get(size_t k) const {
    const T* p = std::get_if<T>(&at(k));
    TANDEM_CHECK(p != nullptr, TypeError, op_, "attribute #", k, " has the wrong kind");
    return *p;
  }
  const char* op_;
  ArrayRef<AttrValue> attrs_;
};

/// Prints an attribute (for graph dumps and error messages).
std::ostream& operator<<(std::ostream& os, const AttrValue& v);
/// Stable 64-bit hash of an attribute (meta cache keys, CSE).
uint64_t hash_attr(const AttrValue& v);

}  // namespace tandem
