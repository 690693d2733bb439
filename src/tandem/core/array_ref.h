#pragma once
// IntArrayRef: a non-owning view of int64 values (sizes, strides, dims), constructible
// from a vector, an initializer list or a single value, like c10::IntArrayRef.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace tandem {

/// A contiguous run of int64_t owned elsewhere. Valid only while its source lives;
/// an initializer list source lives until the end of the full expression.
class IntArrayRef {
 public:
  constexpr IntArrayRef() = default;
  IntArrayRef(const std::vector<int64_t>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
  // The list lives until the end of the full expression, which is how IntArrayRef
  // arguments are used; the warning is about storing it longer.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr IntArrayRef(std::initializer_list<int64_t> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr IntArrayRef(const int64_t& single) : data_(&single), size_(1) {}  // NOLINT
  constexpr IntArrayRef(const int64_t* d, size_t n) : data_(d), size_(n) {}
  constexpr const int64_t* begin() const { return data_; }
  constexpr const int64_t* end() const { return data_ + size_; }
  constexpr const int64_t* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr int64_t operator[](size_t i) const { return data_[i]; }
  constexpr int64_t back() const { return data_[size_ - 1]; }
  std::vector<int64_t> vec() const { return {data_, data_ + size_}; }
  bool equals(IntArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (data_[i] != o.data_[i]) return false;
    return true;
  }

 private:
  const int64_t* data_ = nullptr;
  size_t size_ = 0;
};

/// Prints as "[2, 3]" (used in every shape error message).
inline std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}
inline std::ostream& operator<<(std::ostream& os, const std::vector<int64_t>& v) {
  return os << IntArrayRef(v);
}

using DimVector = std::vector<int64_t>;

/// Product of the values (numel of a shape); 1 for an empty list.
inline int64_t multiply_integers(IntArrayRef a) {
  int64_t p = 1;
  for (int64_t v : a) p *= v;
  return p;
}

}  // namespace tandem
