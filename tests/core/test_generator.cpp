// Tests for the Philox4x32-10 generator (src/tandem/core/generator.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "tandem/core/error.h"
#include "tandem/core/generator.h"
#include "tandem/core/parallel.h"


namespace tandem {
namespace {

using Block = std::array<uint32_t, 4>;

// ---- Philox4x32-10 known-answer tests (Random123 kat_vectors, Salmon et al. 2011) ----

TEST(Philox, KnownAnswerZero) {
  EXPECT_EQ(philox4x32_10({0u, 0u, 0u, 0u}, {0u, 0u}), (Block{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, KnownAnswerAllOnes) {
  EXPECT_EQ(philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (Block{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(Philox, KnownAnswerPiDigits) {
  EXPECT_EQ(philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u}),
            (Block{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, IsConstexpr) {
  constexpr Block b = philox4x32_10({0u, 0u, 0u, 0u}, {0u, 0u});
  static_assert(b[0] == 0x6627e8d5u, "Philox4x32-10 KAT must hold at compile time");
  EXPECT_EQ(b[3], 0x9b00dbd8u);
}

// ---- stream layout ----

TEST(Generator, StreamIsPhiloxOfBlockCounterWithSplitSeedKey) {
  const uint64_t seed = 0x0123456789abcdefULL;
  Generator g(seed);
  const std::array<uint32_t, 2> key{0x89abcdefu, 0x01234567u};  // low word, high word
  for (uint32_t block = 0; block < 3; ++block) {
    const Block want = philox4x32_10({block, 0u, 0u, 0u}, key);
    for (int w = 0; w < 4; ++w) EXPECT_EQ(g.next_u32(), want[w]) << "block " << block << " word " << w;
  }
  EXPECT_EQ(g.offset(), 12u);
  // Block index 2^32 carries into the second counter word.
  g.set_offset(uint64_t{4} << 32);
  const Block hi = philox4x32_10({0u, 1u, 0u, 0u}, key);
  for (int w = 0; w < 4; ++w) EXPECT_EQ(g.next_u32(), hi[w]);
}

TEST(Generator, DefaultSeedGolden) {
  // Pinned output of the default seed: any change to the stream layout breaks saved
  // checkpoints' RNG state and must be deliberate.
  Generator g;
  EXPECT_EQ(g.seed(), 67280421310721ULL);
  EXPECT_EQ(g.seed(), Generator::kDefaultSeed);
  const uint32_t want[] = {0x64a3e0f6u, 0xd72e25abu, 0x0be1367bu, 0x53eccf2du, 0x252d372au, 0xd70d580du};
  for (uint32_t w : want) EXPECT_EQ(g.next_u32(), w);
}

TEST(Generator, Seed42DoubleAndNormalGolden) {
  Generator g(42);
  EXPECT_EQ(g.next_double(), 0x1.dfd524ee73abcp-2);
  EXPECT_EQ(g.next_double(), 0x1.5d0acf5c4afd4p-2);
  EXPECT_EQ(g.next_double(), 0x1.4ee9b3f7f36c8p-2);
  // Normals go through libm (log, cos): allow a few ulps for another libm.
  EXPECT_DOUBLE_EQ(g.next_normal(), -0x1.32f982e016d73p-1);
  EXPECT_DOUBLE_EQ(g.next_normal(), -0x1.a6066acabf574p-1);
  EXPECT_DOUBLE_EQ(g.next_normal(), 0x1.095174c569c04p-1);
}

TEST(Generator, WordCountsPerDraw) {
  Generator g(7);
  g.next_u32();
  EXPECT_EQ(g.offset(), 1u);
  g.next_float();
  EXPECT_EQ(g.offset(), 2u);
  g.next_u64();
  EXPECT_EQ(g.offset(), 4u);
  g.next_double();
  EXPECT_EQ(g.offset(), 6u);
  g.next_normal();
  EXPECT_EQ(g.offset(), 10u);
  EXPECT_EQ(g.reserve(100), 10u);
  EXPECT_EQ(g.offset(), 110u);
}

TEST(Generator, DerivedDrawsFromWords) {
  Generator a(99), b(99);
  for (int i = 0; i < 50; ++i) {
    const uint32_t lo = a.next_u32(), hi = a.next_u32();
    EXPECT_EQ(b.next_u64(), (static_cast<uint64_t>(hi) << 32) | lo);
  }
  for (int i = 0; i < 50; ++i) {
    const uint32_t w = a.next_u32();
    EXPECT_EQ(b.next_float(), static_cast<float>(w >> 8) * 0x1p-24f);
  }
  for (int i = 0; i < 50; ++i) {
    const uint64_t v = a.next_u64();
    EXPECT_EQ(b.next_double(), static_cast<double>(v >> 11) * 0x1p-53);
  }
}

// ---- reproducibility and state ----

TEST(Generator, SameSeedSameStreamDifferentSeedDifferent) {
  Generator a(1234), b(1234), c(1235);
  int same_as_c = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint32_t va = a.next_u32();
    EXPECT_EQ(va, b.next_u32());
    same_as_c += va == c.next_u32();
  }
  EXPECT_LT(same_as_c, 3);
}

TEST(Generator, ManualSeedRewinds) {
  Generator g(5);
  std::vector<uint32_t> first(20);
  for (auto& v : first) v = g.next_u32();
  g.next_normal();
  g.manual_seed(5);
  EXPECT_EQ(g.offset(), 0u);
  EXPECT_EQ(g.seed(), 5u);
  for (uint32_t v : first) EXPECT_EQ(g.next_u32(), v);
}

TEST(Generator, OffsetSaveRestore) {
  Generator g(2024);
  g.next_u32();  // unaligned position inside a block
  g.next_double();
  const uint64_t saved = g.offset();
  EXPECT_EQ(saved, 3u);
  std::vector<double> a(17);
  for (auto& v : a) v = g.next_normal();
  std::vector<float> fa(33);
  g.fill_uniform(fa.data(), 33, -1.0f, 1.0f);
  g.set_offset(saved);
  for (double v : a) EXPECT_EQ(g.next_normal(), v);
  std::vector<float> fb(33);
  g.fill_uniform(fb.data(), 33, -1.0f, 1.0f);
  EXPECT_EQ(fa, fb);
  // A fresh generator with the same (seed, offset) continues the same way.
  Generator h(0);
  h.manual_seed(2024);
  h.set_offset(saved);
  for (double v : a) EXPECT_EQ(h.next_normal(), v);
}

TEST(Generator, CopyCopiesState) {
  Generator g(77);
  g.next_u32();
  Generator c(g);
  EXPECT_EQ(c.seed(), 77u);
  EXPECT_EQ(c.offset(), 1u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c.next_u32(), g.next_u32());
  Generator d(1);
  d = g;
  EXPECT_EQ(d.offset(), g.offset());
  EXPECT_EQ(d.next_u64(), g.next_u64());
}

TEST(Generator, DefaultGeneratorAndFreeManualSeed) {
  manual_seed(314159);
  EXPECT_EQ(default_generator().seed(), 314159u);
  EXPECT_EQ(default_generator().offset(), 0u);
  Generator ref(314159);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(default_generator().next_u32(), ref.next_u32());
  EXPECT_EQ(&default_generator(), &default_generator());
  manual_seed(Generator::kDefaultSeed);
}

// ---- bulk fills ----

TEST(Generator, FillUniformFloatMatchesSequentialDraws) {
  Generator a(11), b(11);
  a.next_u32();  // start unaligned
  b.next_u32();
  std::vector<float> out(1000);
  a.fill_uniform(out.data(), 1000, -2.0f, 3.0f);
  EXPECT_EQ(a.offset(), 1001u);
  for (float v : out) EXPECT_EQ(v, std::fma(5.0f, b.next_float(), -2.0f));
}

TEST(Generator, FillUniformDoubleMatchesSequentialDraws) {
  Generator a(12), b(12);
  std::vector<double> out(999);
  a.fill_uniform(out.data(), 999, 10.0, 20.0);
  EXPECT_EQ(a.offset(), 2u * 999u);
  for (double v : out) EXPECT_EQ(v, std::fma(10.0, b.next_double(), 10.0));
}

TEST(Generator, FillNormalPairsShareUniforms) {
  Generator a(13), b(13);
  std::vector<double> out(7);
  a.fill_normal(out.data(), 7);
  EXPECT_EQ(a.offset(), 16u);  // 4 pairs (the last one half used)
  for (int i = 0; i < 7; i += 2) EXPECT_EQ(out[i], b.next_normal()) << i;
  // Odd elements are the sine partners: out[2p]^2 + out[2p+1]^2 = -2 ln(1 - u1).
  Generator c(13);
  for (int p = 0; p < 3; ++p) {
    const double u1 = c.next_double();
    c.next_double();
    EXPECT_NEAR(out[2 * p] * out[2 * p] + out[2 * p + 1] * out[2 * p + 1], -2.0 * std::log(1.0 - u1), 1e-12);
  }
}

TEST(Generator, FillNormalFloatIsRoundedDoubleFill) {
  Generator a(14), b(14);
  std::vector<float> f(101);
  std::vector<double> d(101);
  a.fill_normal(f.data(), 101, 0.5f, 2.0f);
  b.fill_normal(d.data(), 101, 0.5, 2.0);
  for (size_t i = 0; i < f.size(); ++i) EXPECT_EQ(f[i], static_cast<float>(d[i]));
  EXPECT_EQ(a.offset(), b.offset());
}

TEST(Generator, LargeFillIndependentOfThreadCountAndChunking) {
  // Large enough to be split into parallel chunks; compare against one-element draws.
  const int64_t n = 300001;
  Generator a(15), b(15);
  std::vector<float> u(n);
  a.fill_uniform(u.data(), n);
  for (int64_t i = 0; i < n; i += 997) {
    b.set_offset(static_cast<uint64_t>(i));
    ASSERT_EQ(u[i], b.next_float()) << i;
  }
  std::vector<double> z(n);
  a.fill_normal(z.data(), n);
  for (int64_t p = 0; 2 * p < n; p += 1009) {
    b.set_offset(static_cast<uint64_t>(n) + 4 * static_cast<uint64_t>(p));
    ASSERT_EQ(z[2 * p], b.next_normal()) << p;
  }
  const int saved = get_num_threads();
  std::vector<double> z1(n), z3(n);
  set_num_threads(1);
  Generator(16).fill_normal(z1.data(), n);
  set_num_threads(3);
  Generator(16).fill_normal(z3.data(), n);
  set_num_threads(saved);
  EXPECT_EQ(z1, z3);
}

TEST(Generator, UniformRangeAndMoments) {
  const int64_t n = 100000;
  Generator g(17);
  std::vector<float> f(n);
  g.fill_uniform(f.data(), n, -3.0f, 5.0f);
  double sum = 0, sq = 0;
  for (float v : f) {
    ASSERT_GE(v, -3.0f);
    ASSERT_LT(v, 5.0f);
    sum += v;
    sq += static_cast<double>(v) * v;
  }
  const double mean = sum / n, var = sq / n - mean * mean;
  // mean 1, variance 64/12; standard error of the mean is sqrt(64/12/n) ~ 0.0073.
  EXPECT_NEAR(mean, 1.0, 0.04);
  EXPECT_NEAR(var, 64.0 / 12.0, 0.1);

  std::vector<double> d(n);
  g.fill_uniform(d.data(), n);
  double dsum = 0;
  for (double v : d) {
    ASSERT_GE(v, 0.0);
    ASSERT_LT(v, 1.0);
    dsum += v;
  }
  EXPECT_NEAR(dsum / n, 0.5, 0.005);
}

TEST(Generator, UniformDegenerateAndTinyRanges) {
  Generator g(18);
  std::vector<float> f(1000);
  g.fill_uniform(f.data(), 1000, 2.0f, 2.0f);
  for (float v : f) EXPECT_EQ(v, 2.0f);
  // [1, next float above 1): every value must be exactly 1 (never the excluded bound).
  const float hi = std::nextafter(1.0f, 2.0f);
  g.fill_uniform(f.data(), 1000, 1.0f, hi);
  for (float v : f) EXPECT_EQ(v, 1.0f);
}

TEST(Generator, NormalMomentsAndShape) {
  const int64_t n = 100000;
  Generator g(19);
  std::vector<double> z(n);
  g.fill_normal(z.data(), n, 2.0, 3.0);
  double sum = 0, sq = 0;
  int64_t within1 = 0;
  for (double v : z) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
    within1 += std::fabs(v - 2.0) < 3.0;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 2.0, 0.05);   // standard error 0.0095
  EXPECT_NEAR(sd, 3.0, 0.05);     // standard error ~0.0067
  // P(|Z| < 1) = 0.6827 for a normal (a uniform with the same variance gives 0.577).
  EXPECT_NEAR(static_cast<double>(within1) / n, 0.6827, 0.01);

  // Sequential next_normal draws have the same distribution.
  double s1 = 0, s2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = g.next_normal();
    s1 += v;
    s2 += v * v;
  }
  EXPECT_NEAR(s1 / n, 0.0, 0.02);
  EXPECT_NEAR(s2 / n, 1.0, 0.03);
}

TEST(Generator, BadArgumentsRaiseValueError) {
  Generator g(20);
  float f[4];
  double d[4];
  EXPECT_THROW(g.fill_uniform(f, 4, 2.0f, 1.0f), ValueError);
  EXPECT_THROW(g.fill_uniform(f, -1), ValueError);
  EXPECT_THROW(g.fill_uniform(static_cast<float*>(nullptr), 4), ValueError);
  EXPECT_THROW(g.fill_uniform(d, 4, 0.0, std::numeric_limits<double>::infinity()), ValueError);
  EXPECT_THROW(g.fill_uniform(f, 4, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max()),
               ValueError);
  EXPECT_THROW(g.fill_normal(d, 4, 0.0, -1.0), ValueError);
  EXPECT_THROW(g.fill_normal(f, 4, std::nanf(""), 1.0f), ValueError);
  EXPECT_THROW(g.fill_normal(d, -2), ValueError);
  EXPECT_EQ(g.offset(), 0u);  // failed calls draw nothing
  g.fill_uniform(f, 0);       // n == 0 is fine and draws nothing
  g.fill_normal(static_cast<double*>(nullptr), 0);
  EXPECT_EQ(g.offset(), 0u);
}

TEST(Generator, ConcurrentDrawsPartitionTheStream) {
  // Threads share one generator: together they must draw each word exactly once.
  Generator g(21);
  constexpr int kThreads = 4, kPer = 20000;
  std::vector<std::vector<uint32_t>> got(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      for (int i = 0; i < kPer; ++i) got[t].push_back(g.next_u32());
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(g.offset(), static_cast<uint64_t>(kThreads) * kPer);
  std::vector<uint32_t> all, want;
  for (auto& v : got) all.insert(all.end(), v.begin(), v.end());
  Generator ref(21);
  for (int i = 0; i < kThreads * kPer; ++i) want.push_back(ref.next_u32());
  std::sort(all.begin(), all.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(all, want);
}

}  // namespace
}  // namespace tandem
