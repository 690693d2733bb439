#pragma once
// Tensor creation and conversion (PyTorch semantics): factories, clone/contiguous/to,
// copy_/fill_/zero_, and construction from C++ data.
#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem {

/// Uninitialised tensor of `sizes` (dtype default float32). ValueError on negative sizes.
Tensor empty(IntArrayRef sizes, TensorOptions opts = {});
Tensor zeros(IntArrayRef sizes, TensorOptions opts = {});
Tensor ones(IntArrayRef sizes, TensorOptions opts = {});
/// Tensor filled with `value`; dtype defaults to the value's (bool, int64 or float32).
Tensor full(IntArrayRef sizes, const Scalar& value, TensorOptions opts = {});
/// Values start, start+step, ... < end (torch.arange). Integer dtype (int64) when all
/// bounds are integers, else float32. ValueError for step 0 or a wrong-signed range.
Tensor arange(const Scalar& end, TensorOptions opts = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions opts = {});
/// `steps` values evenly spaced from start to end inclusive (torch.linspace).
Tensor linspace(double start, double end, int64_t steps, TensorOptions opts = {});
/// n x m identity (m defaults to n).
Tensor eye(int64_t n, std::optional<int64_t> m = std::nullopt, TensorOptions opts = {});

Tensor empty_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor zeros_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor ones_like(const Tensor& t, std::optional<TensorOptions> opts = std::nullopt);
Tensor full_like(const Tensor& t, const Scalar& value, std::optional<TensorOptions> opts = std::nullopt);

/// Copies `values` into a new tensor of `sizes` (product must equal values.size(),
/// ShapeError otherwise). The dtype is T's unless opts says otherwise.
template <typename T>
Tensor from_vector(const std::vector<T>& values, IntArrayRef sizes, TensorOptions opts = {});
/// 1-D tensor from values: tensor({1.f, 2.f}) is float32, tensor({1, 2}) int64 (like torch.tensor).
Tensor tensor(std::initializer_list<double> values, TensorOptions opts = {});
Tensor tensor(std::initializer_list<float> values, TensorOptions opts = {});
Tensor tensor(std::initializer_list<int64_t> values, TensorOptions opts = {});
Tensor tensor(std::initializer_list<int> values, TensorOptions opts = {});
Tensor tensor(std::initializer_list<bool> values, TensorOptions opts = {});
/// 2-D tensor from nested lists (rows must have equal length, ShapeError otherwise).
Tensor tensor(std::initializer_list<std::initializer_list<double>> rows, TensorOptions opts = {});
/// 0-d tensor holding `value` (dtype from the scalar unless opts says otherwise).
Tensor scalar_tensor(const Scalar& value, TensorOptions opts = {});
/// Wraps external memory without copying; `deleter` (may be empty) runs when the last
/// tensor using it dies. Strides default to contiguous.
Tensor from_blob(void* data, IntArrayRef sizes, DType dtype, std::function<void(void*)> deleter = {},
                 std::optional<DimVector> strides = std::nullopt);

/// Deep copy (torch.clone), contiguous.
Tensor clone(const Tensor& self);
Tensor contiguous(const Tensor& self);

}  // namespace tandem
