#pragma once
// Reference models of the main job (`tandem train`, bench/): the Fashion-MNIST MLP and CNN
// of issue 5, built from nn layers with PyTorch's default initialisation.
#include <memory>

#include "tandem/nn/layers.h"

namespace tandem::nn::models {

/// 784-256-128-10 MLP with ReLU: Flatten, Linear(784, 256), ReLU, Linear(256, 128), ReLU,
/// Linear(128, 10). Input: float32 [N, 1, 28, 28] (or [N, 784]); output: logits [N, 10].
/// Parameters are drawn from the default generator (seed it with tandem::manual_seed first).
std::shared_ptr<Sequential> fashion_mlp();

/// The small CNN: Conv2d(1, 32, 3, padding 1), ReLU, MaxPool2d(2), Conv2d(32, 64, 3, padding 1),
/// ReLU, MaxPool2d(2), Flatten, Linear(3136, 128), ReLU, Linear(128, 10).
/// Input: float32 [N, 1, 28, 28]; output: logits [N, 10].
std::shared_ptr<Sequential> fashion_cnn();

}  // namespace tandem::nn::models
