#pragma once
// Neural-network ops (normalisation, softmax, losses, embedding, dropout, pad, interpolate).
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
