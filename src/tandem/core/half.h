#pragma once
// IEEE 754 binary16 (float16) and bfloat16 storage types with exact conversions.
// float -> half/bfloat16 rounds to nearest, ties to even; NaN stays NaN (half: the
// canonical quiet NaN 0x7e00 with the sign, as PyTorch; bfloat16: quiet, sign and payload kept),
// overflow goes to inf, values below the smallest subnormal round to signed zero.
// Arithmetic is done in float32 (as PyTorch CPU does) and rounded back.
#include <bit>
#include <cstdint>

namespace tandem {

/// Converts an IEEE binary32 value to binary16 bits, round-to-nearest-even.
constexpr uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN: canonical quiet NaN, sign kept (as PyTorch)
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to >= 65520 -> inf
  if (abs >= 0x38800000u) {  // normal half (>= 2^-14)
    uint32_t mant_round = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
    return static_cast<uint16_t>(sign | ((mant_round - 0x38000000u) >> 13));
  }
  if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25: rounds to zero
  // Subnormal half: value = m * 2^-24. Shift the full significand into place.
  uint32_t e = abs >> 23;                       // biased exponent, 102..112
  uint32_t m = (abs & 0x7fffffu) | 0x800000u;   // 24-bit significand
  uint32_t shift = 126u - e;                    // 14..24
  uint32_t q = m >> shift;
  uint32_t rem = m & ((1u << shift) - 1u);
  uint32_t half_point = 1u << (shift - 1u);
  if (rem > half_point || (rem == half_point && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

/// Converts binary16 bits to an exact binary32 value.
constexpr float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t out;
  if (exp == 0x1fu) {
    out = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    out = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    out = sign;
  } else {  // subnormal: normalise
    uint32_t e = 113u;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    out = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(out);
}

/// Converts binary32 to bfloat16 bits (top 16 bits), round-to-nearest-even; NaN stays quiet NaN.
constexpr uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

constexpr float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

/// 16-bit IEEE half-precision value (dtype float16).
struct Half {
  uint16_t bits = 0;
  constexpr Half() = default;
  constexpr Half(float f) : bits(float_to_half_bits(f)) {}  // NOLINT: implicit like PyTorch's at::Half
  static constexpr Half from_bits(uint16_t b) { Half h; h.bits = b; return h; }
  constexpr operator float() const { return half_bits_to_float(bits); }  // NOLINT
};

/// Brain floating point: float32's exponent with a 7-bit mantissa (dtype bfloat16).
struct BFloat16 {
  uint16_t bits = 0;
  constexpr BFloat16() = default;
  constexpr BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}  // NOLINT
  static constexpr BFloat16 from_bits(uint16_t b) { BFloat16 h; h.bits = b; return h; }
  constexpr operator float() const { return bfloat16_bits_to_float(bits); }  // NOLINT
};

}  // namespace tandem
