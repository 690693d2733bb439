#pragma once
// Parameter initialisation (torch.nn.init). All functions fill `t` in place without
// recording autograd, draw from the global generator, and return t. Fan-in/fan-out
// follow PyTorch: for a weight [out, in, *kernel], fan_in = in * prod(kernel), fan_out =
// out * prod(kernel). ValueError for tensors with fewer than 2 dims where a fan is needed.
#include <string>

#include "tandem/core/tensor.h"

namespace tandem::nn::init {

/// Recommended gain for a nonlinearity ("linear", "conv2d", "sigmoid", "tanh" 5/3,
/// "relu" sqrt(2), "leaky_relu" sqrt(2 / (1 + slope^2)), "selu" 3/4).
double calculate_gain(const std::string& nonlinearity, double param = 0.01);
/// (fan_in, fan_out) of a weight tensor.
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);

Tensor uniform_(Tensor t, double a = 0.0, double b = 1.0);
Tensor normal_(Tensor t, double mean = 0.0, double std = 1.0);
Tensor constant_(Tensor t, const Scalar& value);
Tensor zeros_(Tensor t);
Tensor ones_(Tensor t);
/// U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio 2010).
Tensor xavier_uniform_(Tensor t, double gain = 1.0);
/// N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_normal_(Tensor t, double gain = 1.0);
/// U(-b, b) with b = gain * sqrt(3 / fan) and gain = calculate_gain(nonlinearity, a)
/// (He et al. 2015); mode "fan_in" or "fan_out".
Tensor kaiming_uniform_(Tensor t, double a = 0.0, const std::string& mode = "fan_in",
                        const std::string& nonlinearity = "leaky_relu");
Tensor kaiming_normal_(Tensor t, double a = 0.0, const std::string& mode = "fan_in",
                       const std::string& nonlinearity = "leaky_relu");
/// A (semi-)orthogonal matrix from the QR decomposition of a normal matrix, scaled by
/// gain (Saxe et al. 2013); tensors with > 2 dims are flattened to [size(0), rest].
Tensor orthogonal_(Tensor t, double gain = 1.0);
/// N(mean, std^2) truncated to [a, b] (by rejection).
Tensor trunc_normal_(Tensor t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0);

}  // namespace tandem::nn::init
