#include "tandem/core/storage.h"

#include "tandem/core/capture_state.h"

namespace tandem {

StorageImpl::StorageImpl(size_t nbytes, Allocator* alloc)
    : data_(alloc->allocate(nbytes)),
      nbytes_(nbytes),
      device_(alloc->device()),
      allocator_(alloc),
      capture_id_(capture_state::current_capture_id()) {}

StorageImpl::StorageImpl(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter)
    : data_(data),
      nbytes_(nbytes),
      device_(device),
      deleter_(std::move(deleter)),
      capture_id_(capture_state::current_capture_id()) {}

StorageImpl::~StorageImpl() {
  if (allocator_) allocator_->deallocate(data_, nbytes_);
  else if (deleter_) deleter_(data_);
}

}  // namespace tandem
