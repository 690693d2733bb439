#pragma once
// Unary elementwise ops (neg, exp, sigmoid, clamp, isnan, ...).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
