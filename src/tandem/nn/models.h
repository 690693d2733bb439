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

/// A multilayer perceptron: Linear(sizes[0], sizes[1]), ReLU, ..., Linear(sizes[n-2],
/// sizes[n-1]) (no ReLU after the last). Input: float32 [N, sizes[0]]; output [N, sizes.back()].
/// Parameters from the default generator. ValueError for fewer than 2 sizes or a size < 1.
std::shared_ptr<Sequential> mlp(const std::vector<int64_t>& sizes);

/// The small CNN: Conv2d(1, 32, 3, padding 1), ReLU, MaxPool2d(2), Conv2d(32, 64, 3, padding 1),
/// ReLU, MaxPool2d(2), Flatten, Linear(3136, 128), ReLU, Linear(128, 10).
/// Input: float32 [N, 1, 28, 28]; output: logits [N, 10].
std::shared_ptr<Sequential> fashion_cnn();

}  // namespace tandem::nn::models
