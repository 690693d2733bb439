#pragma once
// Reductions (sum, mean, max, var, norm, cumsum, ...).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
