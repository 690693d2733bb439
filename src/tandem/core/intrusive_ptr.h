#pragma once
// A small intrusive reference-counted pointer. Tensor and Storage handles are one
// pointer wide and one atomic increment to copy (cheaper than std::shared_ptr's
// control block, which matters for the per-op dispatch overhead).
#include <atomic>
#include <cstdint>
#include <utility>

namespace tandem {

/// Base for objects owned by IntrusivePtr. Starts with a count of 0.
class RefCounted {
 public:
  RefCounted() = default;
  RefCounted(const RefCounted&) = delete;
  RefCounted& operator=(const RefCounted&) = delete;
  virtual ~RefCounted() = default;
  int64_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <typename T> friend class IntrusivePtr;
  mutable std::atomic<int64_t> refcount_{0};
};

template <typename T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  explicit IntrusivePtr(T* p) : p_(p) { retain(); }
  IntrusivePtr(const IntrusivePtr& o) : p_(o.p_) { retain(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  template <typename U>
  IntrusivePtr(const IntrusivePtr<U>& o) : p_(o.get()) { retain(); }  // NOLINT
  ~IntrusivePtr() { release(); }
  IntrusivePtr& operator=(const IntrusivePtr& o) {
    if (p_ != o.p_) { IntrusivePtr tmp(o); std::swap(p_, tmp.p_); }
    return *this;
  }
  IntrusivePtr& operator=(IntrusivePtr&& o) noexcept {
    if (this != &o) { release(); p_ = std::exchange(o.p_, nullptr); }
    return *this;
  }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  int64_t use_count() const { return p_ ? p_->use_count() : 0; }
  void reset() { release(); p_ = nullptr; }
  bool operator==(const IntrusivePtr& o) const { return p_ == o.p_; }

  /// A new reference to *p when its count is above zero, else null: the lock step of a
  /// weak reference (autograd::AccumulateGrad's to its leaf). Once the count has reached
  /// zero the object is being destroyed and is never revived. The caller guarantees that
  /// p's memory stays valid during the call (the object's destructor waits on a mutex the
  /// caller holds).
  static IntrusivePtr try_retain(T* p) {
    IntrusivePtr r;
    int64_t c = p->refcount_.load(std::memory_order_relaxed);
    while (c > 0) {
      if (p->refcount_.compare_exchange_weak(c, c + 1, std::memory_order_relaxed)) {
        r.p_ = p;
        break;
      }
    }
    return r;
  }

  template <typename... Args>
  static IntrusivePtr make(Args&&... args) { return IntrusivePtr(new T(std::forward<Args>(args)...)); }

 private:
  void retain() { if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

}  // namespace tandem
