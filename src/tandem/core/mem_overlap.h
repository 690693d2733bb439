#pragma once
// Memory overlap of tensors, after PyTorch's ATen/MemoryOverlap.h, but decided exactly
// from the geometry (PyTorch answers "too hard" for non-dense layouts and lets those
// through; tandem enumerates them instead, so an in-place op never writes through a
// layout whose result would depend on the order of the writes).
#include <cstdint>

#include "tandem/core/tensor.h"

namespace tandem {

/// Whether two distinct positions of a tensor with this geometry (element strides, any
/// sign) address the same element: a stride-0 dim of size > 1 (expand), or windows that
/// overlap (unfold with step < size, as_strided). Exact: dense and "sorted-stride"
/// layouts are answered from the strides alone; other layouts are enumerated (time
/// O(numel), memory at most one bit per element of the spanned range or 8 bytes per
/// element, whichever is smaller).
bool has_internal_overlap(IntArrayRef sizes, IntArrayRef strides);
/// has_internal_overlap of t's geometry.
bool has_internal_overlap(const Tensor& t);

/// Whether a geometry with non-negative strides fills one block of numel consecutive
/// elements exactly once: contiguous or a permutation of it (transposed, channels last);
/// the strides of size-1 dims do not matter (PyTorch's is_non_overlapping_and_dense).
/// Empty strides mean contiguous.
bool is_non_overlapping_and_dense(IntArrayRef sizes, IntArrayRef strides);

/// How two tensors share memory (PyTorch's MemOverlapStatus, without TooHard).
enum class MemOverlapStatus {
  No,       ///< no byte is shared (or either tensor is empty)
  Full,     ///< the same elements at the same positions: same storage, byte offset and element
            ///< size, and `b` broadcast to `a`'s shape has `a`'s strides (size-1 dims ignored)
  Partial,  ///< some bytes are shared, but not as Full
};
/// The overlap of `a` and `b`. Exact (enumerates non-dense layouts, as has_internal_overlap).
MemOverlapStatus get_overlap_status(const Tensor& a, const Tensor& b);

}  // namespace tandem
