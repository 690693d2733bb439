#pragma once
// Seeded, reproducible random numbers: a counter-based Philox4x32-10 generator.
//
// Algorithm (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3",
// SC'11; the Random123 library's reference definition). Philox4x32-R maps a 128-bit
// counter c = (c0, c1, c2, c3) and a 64-bit key k = (k0, k1) to 128 random bits by R = 10
// rounds of
//     (hi0, lo0) = M0 * c0          (full 64-bit product of two 32-bit words)
//     (hi1, lo1) = M1 * c2
//     c = (hi1 ^ c1 ^ k0,  lo1,  hi0 ^ c3 ^ k1,  lo0)
// with the key bumped by the Weyl constants between rounds: k0 += W0, k1 += W1 (mod 2^32).
// Constants: M0 = 0xD2511F53, M1 = 0xCD9E8D57, W0 = 0x9E3779B9 (golden ratio),
// W1 = 0xBB67AE85 (sqrt(3) - 1). Output of the last round is the block.
//
// How tandem uses it. The key is the 64-bit seed split into k0 = low 32 bits and
// k1 = high 32 bits. The generator's stream is the sequence of 32-bit words
//     word(j) = philox(counter = (j / 4 low 32 bits, j / 4 high 32 bits, 0, 0), key)[j % 4]
// and offset() is j, the number of 32-bit words already drawn. Because a word depends
// only on (seed, j), state save/restore is exactly (seed, offset), and a bulk fill can
// compute element i from its own counter: the numbers do not depend on how many threads
// fill the buffer. Every draw consumes a fixed number of words:
//   next_u32: 1,  next_float: 1,  next_u64 / next_double: 2,  next_normal: 4.
// The integer and uniform streams are bit-identical on every platform. Normals go through
// std::log / std::sqrt / std::cos / std::sin; they are identical wherever libm is (glibc
// everywhere we build), and may differ in the last ulp on another libm. Affine maps
// (lo + (hi - lo) * u, mean + std * z) use std::fma so compiler contraction flags cannot
// change results.
#include <array>
#include <cstdint>
#include <mutex>

namespace tandem {

/// Philox4x32 multipliers and Weyl key increments (Salmon et al. 2011, Random123).
inline constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;

/// One Philox4x32-10 block: 128 random bits from a 128-bit counter and a 64-bit key.
/// Pure function; matches Random123's philox4x32_R(10, ctr, key) and its published
/// known-answer tests (e.g. counter 0, key 0 -> {0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
/// 0x9b00dbd8}).
constexpr std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> ctr,
                                                std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * ctr[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * ctr[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = {hi1 ^ ctr[1] ^ key[0], lo1, hi0 ^ ctr[3] ^ key[1], lo0};
  }
  return ctr;
}

/// A seeded Philox4x32-10 random generator (see the file comment for the stream layout).
///
/// State is (seed, offset): seed() picks the key, offset() counts the 32-bit words drawn
/// so far. Saving both and restoring them with manual_seed + set_offset reproduces the
/// rest of the stream exactly (checkpoints, compiled functions replaying a draw).
///
/// Thread-safe: every member locks an internal mutex, so a DataLoader worker and the
/// main thread may draw from the same generator. Bulk fills reserve their words under
/// the lock and then compute outside it, in parallel for large n, with results that do
/// not depend on the number of threads.
///
/// Copying copies the state (seed and offset); the copy is an independent generator.
class Generator {
 public:
  /// PyTorch's default CPU seed (c10::default_rng_seed_val).
  static constexpr uint64_t kDefaultSeed = 67280421310721ULL;

  /// A generator with key `seed` at offset 0.
  explicit Generator(uint64_t seed = kDefaultSeed);
  Generator(const Generator& other);
  Generator& operator=(const Generator& other);

  /// Re-keys the generator with `seed` and rewinds the offset to 0 (torch.manual_seed).
  void manual_seed(uint64_t seed);
  /// The current seed (the Philox key).
  uint64_t seed() const;
  /// Number of 32-bit words drawn since the last seeding (position in the stream).
  uint64_t offset() const;
  /// Moves to position `offset` in the stream (any value; need not be a multiple of 4).
  void set_offset(uint64_t offset);
  /// Reserves `n_words` 32-bit words for a caller that computes them itself (with
  /// philox4x32_10 and the layout in the file comment, e.g. a parallel kernel) and
  /// returns the offset of the first one; offset() advances by n_words.
  uint64_t reserve(uint64_t n_words);

  /// The next 32-bit word of the stream.
  uint32_t next_u32();
  /// The next 64 bits: the first word drawn is the low half, the second the high half.
  uint64_t next_u64();
  /// Uniform in [0, 1) with 24 random bits: (next_u32() >> 8) * 2^-24.
  float next_float();
  /// Uniform in [0, 1) with 53 random bits: (next_u64() >> 11) * 2^-53.
  double next_double();
  /// Standard normal N(0, 1) by Box-Muller: u1 = next_double(), u2 = next_double(),
  /// returns sqrt(-2 ln(1 - u1)) * cos(2 pi u2) (1 - u1 is in (0, 1], so log never sees
  /// 0). Consumes 4 words; the sine half of the pair is not cached, so (seed, offset)
  /// stays the whole state.
  double next_normal();

  /// Fills out[0..n) with uniform values in [lo, hi): out[i] = lo + (hi - lo) * u_i where
  /// u_i uses word offset() + i as next_float() does (so the result equals n calls of
  /// next_float() mapped to [lo, hi)); a value that rounds up to hi is replaced by the
  /// largest float below hi. Advances offset() by n.
  /// ValueError if n < 0, out is null with n > 0, lo or hi is not finite, lo > hi, or
  /// hi - lo overflows (PyTorch uniform_'s checks).
  void fill_uniform(float* out, int64_t n, float lo = 0.0f, float hi = 1.0f);
  /// As the float overload with 53-bit uniforms (next_double()); advances offset() by 2n.
  void fill_uniform(double* out, int64_t n, double lo = 0.0, double hi = 1.0);
  /// Fills out[0..n) with N(mean, std^2) values. Element pair (2p, 2p+1) uses words
  /// offset() + 4p .. + 4p + 3 as two next_double() uniforms u1, u2 and gets
  /// r cos(t), r sin(t) with r = sqrt(-2 ln(1 - u1)), t = 2 pi u2 (so out[2p] equals the
  /// p-th next_normal() draw); a last odd element uses 4 words for one cosine value.
  /// Computed in double, then scaled (mean + std * z, fused) and rounded to float.
  /// Advances offset() by 4 * ceil(n / 2).
  /// ValueError if n < 0, out is null with n > 0, std < 0, or mean/std not finite.
  void fill_normal(float* out, int64_t n, float mean = 0.0f, float std = 1.0f);
  /// As the float overload, in double throughout.
  void fill_normal(double* out, int64_t n, double mean = 0.0, double std = 1.0);

 private:
  uint32_t next_u32_locked();
  mutable std::mutex mu_;
  uint64_t seed_;
  uint64_t offset_ = 0;
  // Cache of the Philox block that holds the current word (index cached_block_).
  uint64_t cached_block_ = ~uint64_t{0};
  std::array<uint32_t, 4> cached_words_{};
};

/// The process-wide generator used by random ops when none is given (torch's default
/// CPU generator). Created on first use with Generator::kDefaultSeed.
Generator& default_generator();

/// Seeds the process-wide default generator and rewinds it (torch.manual_seed).
void manual_seed(uint64_t seed);

}  // namespace tandem
