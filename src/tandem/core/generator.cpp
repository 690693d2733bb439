// Philox4x32-10 generator: stream layout, draws and bulk fills (see generator.h).
#include "tandem/core/generator.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "tandem/core/error.h"
#include "tandem/core/parallel.h"

namespace tandem {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;  // rounds to the double nearest 2 pi

// Elements per work chunk of a bulk fill; chunks are independent (each computes its own
// counters), so splitting them over threads cannot change the numbers.
constexpr int64_t kChunk = 2048;
// Below this many elements a fill runs on the calling thread only.
constexpr int64_t kParallelMin = int64_t{1} << 16;

std::array<uint32_t, 2> key_of(uint64_t seed) {
  return {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
}

std::array<uint32_t, 4> block_at(uint64_t block, std::array<uint32_t, 2> key) {
  return philox4x32_10({static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}, key);
}

// Words start .. start + count - 1 of the stream keyed by `seed`.
void words_range(uint64_t seed, uint64_t start, int64_t count, uint32_t* out) {
  const auto key = key_of(seed);
  uint64_t j = start;
  int64_t i = 0;
  while (i < count) {
    const auto blk = block_at(j >> 2, key);
    for (unsigned w = static_cast<unsigned>(j & 3u); w < 4 && i < count; ++w, ++i, ++j) out[i] = blk[w];
  }
}

float to_float01(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
double to_double01(uint32_t lo, uint32_t hi) {
  const uint64_t v = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(v >> 11) * 0x1p-53;
}
// Radius of Box-Muller from a uniform in [0, 1): 1 - u is in (0, 1], so log is finite.
double bm_radius(double u1) { return std::sqrt(-2.0 * std::log(1.0 - u1)); }

// lo + (hi - lo) * u, kept inside [lo, hi) (equal to lo when lo == hi).
template <typename T>
T affine_uniform(T lo, T hi, T u) {
  T v = std::fma(hi - lo, u, lo);
  if (v >= hi) v = hi > lo ? std::nextafter(hi, lo) : lo;
  return v;
}

template <typename T>
void check_uniform_args(const T* out, int64_t n, T lo, T hi) {
  TANDEM_CHECK(n >= 0, ValueError, "Generator::fill_uniform", "got n=", n, ", expected n >= 0");
  TANDEM_CHECK(out != nullptr || n == 0, ValueError, "Generator::fill_uniform", "got a null output pointer for n=", n);
  TANDEM_CHECK(std::isfinite(lo) && std::isfinite(hi), ValueError, "Generator::fill_uniform",
               "got from=", lo, ", to=", hi, ", expected finite bounds");
  TANDEM_CHECK(lo <= hi, ValueError, "Generator::fill_uniform", "expects to return a [from, to) range, but got from=", lo,
               " > to=", hi);
  TANDEM_CHECK(std::isfinite(hi - lo), ValueError, "Generator::fill_uniform", "got from=", lo, ", to=", hi,
               ", expected to - from to be finite in the output dtype");
}

template <typename T>
void check_normal_args(const T* out, int64_t n, T mean, T std) {
  TANDEM_CHECK(n >= 0, ValueError, "Generator::fill_normal", "got n=", n, ", expected n >= 0");
  TANDEM_CHECK(out != nullptr || n == 0, ValueError, "Generator::fill_normal", "got a null output pointer for n=", n);
  TANDEM_CHECK(std::isfinite(mean) && std::isfinite(std), ValueError, "Generator::fill_normal", "got mean=", mean,
               ", std=", std, ", expected finite values");
  TANDEM_CHECK(std >= 0, ValueError, "Generator::fill_normal", "got std=", std, ", expected std >= 0.0");
}

// Runs body(chunk_begin, chunk_end) over [0, n) in chunks of kChunk elements, spread over
// threads by parallel_for when n is large. Each chunk derives its numbers from its own
// element indices only, so the split cannot change the result.
template <typename Body>
void for_chunks(int64_t n, const Body& body) {
  const int64_t nchunks = (n + kChunk - 1) / kChunk;
  parallel_for(0, nchunks, kParallelMin / kChunk, [&](int64_t cb, int64_t ce) {
    for (int64_t c = cb; c < ce; ++c) body(c * kChunk, std::min(n, (c + 1) * kChunk));
  });
}

template <typename T>
void uniform_fill_impl(uint64_t seed, uint64_t start, T* out, int64_t n, T lo, T hi) {
  constexpr int64_t kWords = std::is_same_v<T, float> ? 1 : 2;  // words per element
  for_chunks(n, [&](int64_t b, int64_t e) {
    uint32_t buf[kChunk * kWords];
    words_range(seed, start + static_cast<uint64_t>(b * kWords), (e - b) * kWords, buf);
    for (int64_t i = b; i < e; ++i) {
      const uint32_t* w = buf + (i - b) * kWords;
      T u;
      if constexpr (std::is_same_v<T, float>) u = to_float01(w[0]);
      else u = to_double01(w[0], w[1]);
      out[i] = affine_uniform(lo, hi, u);
    }
  });
}

template <typename T>
void normal_fill_impl(uint64_t seed, uint64_t start, T* out, int64_t n, T mean, T std) {
  static_assert(kChunk % 2 == 0, "chunks must hold whole Box-Muller pairs");
  const double m = static_cast<double>(mean), s = static_cast<double>(std);
  for_chunks(n, [&](int64_t b, int64_t e) {
    uint32_t buf[kChunk * 2];  // 4 words per pair of elements
    const int64_t pairs = (e - b + 1) / 2;
    words_range(seed, start + static_cast<uint64_t>(b * 2), pairs * 4, buf);
    for (int64_t p = 0; p < pairs; ++p) {
      const uint32_t* w = buf + 4 * p;
      const double r = bm_radius(to_double01(w[0], w[1]));
      const double t = kTwoPi * to_double01(w[2], w[3]);
      const int64_t i = b + 2 * p;
      out[i] = static_cast<T>(std::fma(s, r * std::cos(t), m));
      if (i + 1 < e) out[i + 1] = static_cast<T>(std::fma(s, r * std::sin(t), m));
    }
  });
}

}  // namespace

Generator::Generator(uint64_t seed) : seed_(seed) {}

Generator::Generator(const Generator& other) {
  std::lock_guard<std::mutex> lk(other.mu_);
  seed_ = other.seed_;
  offset_ = other.offset_;
}

Generator& Generator::operator=(const Generator& other) {
  if (this == &other) return *this;
  uint64_t s, o;
  {
    std::lock_guard<std::mutex> lk(other.mu_);
    s = other.seed_;
    o = other.offset_;
  }
  std::lock_guard<std::mutex> lk(mu_);
  seed_ = s;
  offset_ = o;
  cached_block_ = ~uint64_t{0};
  return *this;
}

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lk(mu_);
  seed_ = seed;
  offset_ = 0;
  cached_block_ = ~uint64_t{0};
}

uint64_t Generator::seed() const {
  std::lock_guard<std::mutex> lk(mu_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard<std::mutex> lk(mu_);
  return offset_;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard<std::mutex> lk(mu_);
  offset_ = offset;
}

uint64_t Generator::reserve(uint64_t n_words) {
  std::lock_guard<std::mutex> lk(mu_);
  const uint64_t start = offset_;
  offset_ += n_words;
  return start;
}

uint32_t Generator::next_u32_locked() {
  const uint64_t block = offset_ >> 2;
  if (block != cached_block_) {
    cached_words_ = block_at(block, key_of(seed_));
    cached_block_ = block;
  }
  return cached_words_[offset_++ & 3u];
}

uint32_t Generator::next_u32() {
  std::lock_guard<std::mutex> lk(mu_);
  return next_u32_locked();
}

uint64_t Generator::next_u64() {
  std::lock_guard<std::mutex> lk(mu_);
  const uint32_t lo = next_u32_locked();
  const uint32_t hi = next_u32_locked();
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

float Generator::next_float() {
  std::lock_guard<std::mutex> lk(mu_);
  return to_float01(next_u32_locked());
}

double Generator::next_double() {
  std::lock_guard<std::mutex> lk(mu_);
  const uint32_t lo = next_u32_locked();
  const uint32_t hi = next_u32_locked();
  return to_double01(lo, hi);
}

double Generator::next_normal() {
  std::lock_guard<std::mutex> lk(mu_);
  uint32_t w[4];
  for (auto& x : w) x = next_u32_locked();
  return bm_radius(to_double01(w[0], w[1])) * std::cos(kTwoPi * to_double01(w[2], w[3]));
}

void Generator::fill_uniform(float* out, int64_t n, float lo, float hi) {
  check_uniform_args(out, n, lo, hi);
  uint64_t seed, start;
  {
    std::lock_guard<std::mutex> lk(mu_);
    seed = seed_;
    start = offset_;
    offset_ += static_cast<uint64_t>(n);
  }
  uniform_fill_impl(seed, start, out, n, lo, hi);
}

void Generator::fill_uniform(double* out, int64_t n, double lo, double hi) {
  check_uniform_args(out, n, lo, hi);
  uint64_t seed, start;
  {
    std::lock_guard<std::mutex> lk(mu_);
    seed = seed_;
    start = offset_;
    offset_ += 2 * static_cast<uint64_t>(n);
  }
  uniform_fill_impl(seed, start, out, n, lo, hi);
}

void Generator::fill_normal(float* out, int64_t n, float mean, float std) {
  check_normal_args(out, n, mean, std);
  uint64_t seed, start;
  {
    std::lock_guard<std::mutex> lk(mu_);
    seed = seed_;
    start = offset_;
    offset_ += 4 * static_cast<uint64_t>((n + 1) / 2);
  }
  normal_fill_impl(seed, start, out, n, mean, std);
}

void Generator::fill_normal(double* out, int64_t n, double mean, double std) {
  check_normal_args(out, n, mean, std);
  uint64_t seed, start;
  {
    std::lock_guard<std::mutex> lk(mu_);
    seed = seed_;
    start = offset_;
    offset_ += 4 * static_cast<uint64_t>((n + 1) / 2);
  }
  normal_fill_impl(seed, start, out, n, mean, std);
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace tandem
