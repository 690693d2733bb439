#pragma once
// Binary/ternary elementwise ops beyond add/sub/mul (div, pow, comparisons, logical, bitwise, where, lerp, addcmul).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
