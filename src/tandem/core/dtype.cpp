#include "tandem/core/dtype.h"

#include <array>
#include <atomic>

#include "tandem/core/error.h"

namespace tandem {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
  }
  return "?";
}

std::optional<DType> dtype_from_name(std::string_view n) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (dtype_name(static_cast<DType>(i)) == n) return static_cast<DType>(i);
  if (n == "float") return DType::Float32;
  if (n == "double") return DType::Float64;
  if (n == "half") return DType::Float16;
  if (n == "long") return DType::Int64;
  if (n == "int") return DType::Int32;
  if (n == "short") return DType::Int16;
  return std::nullopt;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  // Lattice from torch.promote_types, indexed in DType order.
  using D = DType;
  constexpr D b1 = D::Bool, u1 = D::UInt8, i1 = D::Int8, i2 = D::Int16, i4 = D::Int32,
              i8 = D::Int64, f2 = D::Float16, bf = D::BFloat16, f4 = D::Float32, f8 = D::Float64;
  static constexpr D table[kNumDTypes][kNumDTypes] = {
      /*        b1  u1  i1  i2  i4  i8  f2  bf  f4  f8 */
      /* b1 */ {b1, u1, i1, i2, i4, i8, f2, bf, f4, f8},
      /* u1 */ {u1, u1, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i1 */ {i1, i2, i1, i2, i4, i8, f2, bf, f4, f8},
      /* i2 */ {i2, i2, i2, i2, i4, i8, f2, bf, f4, f8},
      /* i4 */ {i4, i4, i4, i4, i4, i8, f2, bf, f4, f8},
      /* i8 */ {i8, i8, i8, i8, i8, i8, f2, bf, f4, f8},
      /* f2 */ {f2, f2, f2, f2, f2, f2, f2, f4, f4, f8},
      /* bf */ {bf, bf, bf, bf, bf, bf, f4, bf, f4, f8},
      /* f4 */ {f4, f4, f4, f4, f4, f4, f4, f4, f4, f8},
      /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8},
  };
  return table[static_cast<int>(a)][static_cast<int>(b)];
}

namespace {
std::atomic<DType> g_default_float{DType::Float32};
}
DType default_float_dtype() { return g_default_float.load(std::memory_order_relaxed); }
void set_default_float_dtype(DType t) {
  TANDEM_CHECK(t == DType::Float32 || t == DType::Float64, TypeError, "set_default_dtype",
               "got ", dtype_name(t), ", expected float32 or float64");
  g_default_float.store(t);
}

}  // namespace tandem
