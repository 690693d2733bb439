#pragma once
// Storage: a refcounted block of device memory shared by a tensor and its views.
// It also holds the version counter that every in-place write bumps: all tensors that
// share the storage share it (as PyTorch shares it across views and detach()), so
// autograd can detect that a tensor saved for backward was modified.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "tandem/core/allocator.h"
#include "tandem/core/device.h"
#include "tandem/core/intrusive_ptr.h"

namespace tandem {

/// Owner of one memory block. Created either by an Allocator or by borrowing memory
/// (from_blob) with a user deleter.
class StorageImpl : public RefCounted {
 public:
  /// Allocates `nbytes` from `alloc`.
  StorageImpl(size_t nbytes, Allocator* alloc);
  /// Borrows `data` (not freed by tandem unless `deleter` does so).
  StorageImpl(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);
  ~StorageImpl() override;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }
  /// Version counter: bumped by every in-place write through any tensor on this storage.
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }
  bool is_borrowed() const { return allocator_ == nullptr; }
  /// The capture (capture_state::current_capture_id) running on the creating thread when
  /// this storage was made; 0 if none.
  uint64_t capture_id() const { return capture_id_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::function<void(void*)> deleter_;
  std::atomic<uint64_t> version_{0};
  uint64_t capture_id_ = 0;
};

using Storage = IntrusivePtr<StorageImpl>;

}  // namespace tandem
