#pragma once
// Joining, indexing, sorting and selection ops (cat, gather, scatter, index, sort, topk, unique).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
