#pragma once
// Linear algebra (matmul, mm, bmm, addmm, linear, einsum) through oneDNN.
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
