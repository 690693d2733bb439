#pragma once
// Convolution and pooling (conv1d/2d, conv_transpose2d, max/avg/adaptive pools) through oneDNN.
#include "tandem/core/tensor.h"

namespace tandem {

}  // namespace tandem
