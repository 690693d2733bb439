#pragma once
// Random ops drawing from the global generator (rand, randn, randint, bernoulli, dropout masks).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
