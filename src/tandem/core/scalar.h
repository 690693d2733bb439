#pragma once
// Scalar: a C++ number passed to an op (alpha, fill value, clamp bound). It keeps its
// category (bool, integer, floating) because type promotion treats a Python/C++ float
// differently from an int (PyTorch result_type: scalars rank below tensors within a
// category, but a float scalar lifts an integer tensor to the default float dtype).
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "tandem/core/dtype.h"

namespace tandem {

/// A bool, int64 or double value with its category.
class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float };
  Scalar() : kind_(Kind::Int), i_(0) {}
  Scalar(bool b) : kind_(Kind::Bool), i_(b) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T v) : kind_(Kind::Int), i_(static_cast<int64_t>(v)) {}  // NOLINT
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T v) : kind_(Kind::Float), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT
  Scalar(BFloat16 v) : kind_(Kind::Float), d_(static_cast<float>(v)) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  /// The dtype a 0-d tensor made from this scalar gets (bool, int64 or the default float).
  DType dtype() const {
    return kind_ == Kind::Bool ? DType::Bool : kind_ == Kind::Int ? DType::Int64 : default_float_dtype();
  }
  double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }
  /// Converts to C++ type T with C++ conversion rules (float -> int truncates).
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_);
    else return static_cast<T>(to_double());
  }
  bool operator==(const Scalar& o) const {
    return kind_ == o.kind_ && (kind_ == Kind::Float ? (d_ == o.d_ || (d_ != d_ && o.d_ != o.d_)) : i_ == o.i_);
  }

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

inline std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.is_bool()) return os << (s.to_bool() ? "True" : "False");
  if (s.is_integral()) return os << s.to_int();
  return os << s.to_double();
}

}  // namespace tandem
