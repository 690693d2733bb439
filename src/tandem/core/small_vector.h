#pragma once
// SmallVec<T, N>: a vector that keeps up to N elements inline (no heap allocation),
// and ArrayRef<T>: a non-owning view of contiguous elements. Used on the dispatch hot
// path, where every avoided allocation is measurable per op call.
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace tandem {

/// Non-owning view of contiguous T (from a vector, a SmallVec, an initializer list or one T).
template <typename T>
class ArrayRef {
 public:
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* d, size_t n) : data_(d), size_(n) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}  // NOLINT
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
  constexpr ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}  // NOLINT
#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}  // NOLINT
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T, size_t N>
class SmallVec {
 public:
  SmallVec() = default;
  SmallVec(std::initializer_list<T> l) { for (const auto& v : l) push_back(v); }
  SmallVec(const SmallVec& o) { for (const auto& v : o) push_back(v); }
  SmallVec(SmallVec&& o) noexcept { for (auto& v : o) push_back(std::move(v)); o.clear(); }
  SmallVec& operator=(const SmallVec& o) { if (this != &o) { clear(); for (const auto& v : o) push_back(v); } return *this; }
  SmallVec& operator=(SmallVec&& o) noexcept { if (this != &o) { clear(); for (auto& v : o) push_back(std::move(v)); o.clear(); } return *this; }
  ~SmallVec() { clear(); if (heap_) ::operator delete(heap_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return heap_ ? heap_ : reinterpret_cast<T*>(inline_); }
  const T* data() const { return heap_ ? heap_ : reinterpret_cast<const T*>(inline_); }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  operator ArrayRef<T>() const { return ArrayRef<T>(data(), size_); }  // NOLINT
  ArrayRef<T> ref() const { return ArrayRef<T>(data(), size_); }

  template <typename... Args>
  T& emplace_back(Args&&... args) {
    if (size_ == capacity_) grow();
    T* p = new (data() + size_) T(std::forward<Args>(args)...);
    ++size_;
    return *p;
  }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void pop_back() { data()[--size_].~T(); }
  void clear() { for (size_t i = 0; i < size_; ++i) data()[i].~T(); size_ = 0; }
  void resize(size_t n) { while (size_ > n) pop_back(); while (size_ < n) emplace_back(); }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }

 private:
  void grow() {
    size_t cap = capacity_ * 2;
    T* nh = static_cast<T*>(::operator new(cap * sizeof(T)));
    T* old = data();
    for (size_t i = 0; i < size_; ++i) { new (nh + i) T(std::move(old[i])); old[i].~T(); }
    if (heap_) ::operator delete(heap_);
    heap_ = nh;
    capacity_ = cap;
  }
  alignas(T) unsigned char inline_[N * sizeof(T)];
  T* heap_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace tandem
