#pragma once
// Element types (PyTorch's ScalarType subset), their names and sizes, and the type
// promotion lattice of torch.promote_types / torch.result_type.
#include <cstdint>
#include <optional>
#include <string_view>

#include "tandem/core/error.h"
#include "tandem/core/half.h"

namespace tandem {

/// Element type of a tensor. Order is by promotion category, not PyTorch's enum values.
enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
};
inline constexpr int kNumDTypes = 10;

inline constexpr DType kBool = DType::Bool;
inline constexpr DType kUInt8 = DType::UInt8;
inline constexpr DType kInt8 = DType::Int8;
inline constexpr DType kInt16 = DType::Int16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;

/// Bytes per element.
constexpr int64_t element_size(DType t) {
  switch (t) {
    case DType::Bool: case DType::UInt8: case DType::Int8: return 1;
    case DType::Int16: case DType::Float16: case DType::BFloat16: return 2;
    case DType::Int32: case DType::Float32: return 4;
    case DType::Int64: case DType::Float64: return 8;
  }
  return 0;
}
constexpr bool is_floating_point(DType t) { return t >= DType::Float16; }
constexpr bool is_integral(DType t, bool include_bool = false) {
  return (t >= DType::UInt8 && t <= DType::Int64) || (include_bool && t == DType::Bool);
}
/// True for the reduced-precision types computed in float32 and rounded back.
constexpr bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
constexpr bool is_signed(DType t) { return t != DType::Bool && t != DType::UInt8; }

/// PyTorch spelling without the "torch." prefix: "float32", "int64", "bool", ...
std::string_view dtype_name(DType t);
/// Parses dtype_name()'s output and PyTorch aliases ("float", "double", "long", "half").
std::optional<DType> dtype_from_name(std::string_view name);

/// torch.promote_types: the smallest type both a and b convert to without losing
/// category (bool < integer < floating). uint8 with int8 gives int16; float16 with
/// bfloat16 gives float32.
DType promote_types(DType a, DType b);

/// PyTorch's canCast: whether a result of dtype `from` may be written into a tensor of
/// dtype `to` by an in-place op (no floating -> integral, no non-bool -> bool).
constexpr bool can_cast(DType from, DType to) {
  if (is_floating_point(from) && !is_floating_point(to)) return false;
  if (from != DType::Bool && to == DType::Bool) return false;
  return true;
}

/// The default floating dtype (float32, like torch.get_default_dtype()).
DType default_float_dtype();
void set_default_float_dtype(DType t);

/// Maps a C++ element type to its DType.
template <typename T> struct dtype_of;
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::UInt8; };
template <> struct dtype_of<int8_t> { static constexpr DType value = DType::Int8; };
template <> struct dtype_of<int16_t> { static constexpr DType value = DType::Int16; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::Int32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<Half> { static constexpr DType value = DType::Float16; };
template <> struct dtype_of<BFloat16> { static constexpr DType value = DType::BFloat16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::Float64; };
template <typename T> inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace tandem

/// Calls `__VA_ARGS__` (a lambda body using `scalar_t`) with scalar_t bound to the
/// C++ type of `dtype`. Covers all ten dtypes.
#define TANDEM_DISPATCH_CASE(enumv, T, ...) \
  case ::tandem::DType::enumv: { using scalar_t = T; return __VA_ARGS__(); }
#define TANDEM_DISPATCH_ALL_TYPES(dtype, name, ...)                                   \
  [&] {                                                                                \
    switch (dtype) {                                                                   \
      TANDEM_DISPATCH_CASE(Bool, bool, __VA_ARGS__)                                    \
      TANDEM_DISPATCH_CASE(UInt8, uint8_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int8, int8_t, __VA_ARGS__)                                  \
      TANDEM_DISPATCH_CASE(Int16, int16_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int32, int32_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Int64, int64_t, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Float16, ::tandem::Half, __VA_ARGS__)                       \
      TANDEM_DISPATCH_CASE(BFloat16, ::tandem::BFloat16, __VA_ARGS__)                  \
      TANDEM_DISPATCH_CASE(Float32, float, __VA_ARGS__)                                \
      TANDEM_DISPATCH_CASE(Float64, double, __VA_ARGS__)                               \
    }                                                                                  \
    throw ::tandem::TypeError(::tandem::str_cat("[", name, "] unsupported dtype"));   \
  }()
