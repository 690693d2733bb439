// read_idx: valid files of every type (plain and gzip'd), each corrupt case, real data.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>

#include "dataset/idx_files.h"
#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::test;
using tandem::data::read_idx;

namespace {

const std::string kFashion = "/usr/share/datasets/fashion-mnist";

// Expects read_idx(path) to fail naming the file, "offset <offset>" and `needle`.
void expect_idx_error(const std::string& path, uint64_t offset, const std::string& needle) {
  try {
    read_idx(path);
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[read_idx] " + path + ": offset " + std::to_string(offset) + ": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

}  // namespace

TEST(Idx, ReadsPlainAndGzipUint8) {
  TempDir dir;
  std::vector<uint8_t> vals(2 * 3 * 4);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<uint8_t>(i * 11);
  const std::string bytes = idx_u8({2, 3, 4}, vals);
  write_bytes(dir.file("a-idx3-ubyte"), bytes);
  write_gz(dir.file("a-idx3-ubyte.gz"), bytes);
  for (const char* name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
    SCOPED_TRACE(name);
    Tensor t = read_idx(dir.file(name));
    EXPECT_EQ(t.dtype(), kUInt8);
    EXPECT_EQ(t.sizes().vec(), (DimVector{2, 3, 4}));
    EXPECT_TRUE(t.is_contiguous());
    ASSERT_EQ(std::memcmp(t.data_ptr(), vals.data(), vals.size()), 0);
    EXPECT_EQ(t[1][2][3].item<int64_t>(), (23 * 11) % 256);
  }
  // Content decides, not the name: gzip data without ".gz" reads too.
  write_gz(dir.file("gz-without-suffix"), bytes);
  EXPECT_EQ(read_idx(dir.file("gz-without-suffix")).sizes().vec(), (DimVector{2, 3, 4}));
}

TEST(Idx, ConvertsEveryTypeFromBigEndian) {
  TempDir dir;
  auto f32_bits = [](float f) { uint32_t u; std::memcpy(&u, &f, 4); return uint64_t{u}; };
  auto f64_bits = [](double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; };
  // int8
  write_bytes(dir.file("i8"), idx_header(0x09, {3}) + std::string("\x80\x00\x7f", 3));
  Tensor i8 = read_idx(dir.file("i8"));
  EXPECT_EQ(i8.dtype(), kInt8);
  EXPECT_EQ(i8[0].item<int64_t>(), -128);
  EXPECT_EQ(i8[2].item<int64_t>(), 127);
  // int16
  write_gz(dir.file("i16.gz"), idx_header(0x0B, {2}) + be_bytes(0xFED4, 2) + be_bytes(0x0102, 2));
  Tensor i16 = read_idx(dir.file("i16.gz"));
  EXPECT_EQ(i16.dtype(), kInt16);
  EXPECT_EQ(i16[0].item<int64_t>(), -300);
  EXPECT_EQ(i16[1].item<int64_t>(), 258);
  // int32, 2-D
  write_bytes(dir.file("i32"), idx_header(0x0C, {2, 1}) + be_bytes(0x80000000u, 4) + be_bytes(123456789, 4));
  Tensor i32 = read_idx(dir.file("i32"));
  EXPECT_EQ(i32.dtype(), kInt32);
  EXPECT_EQ(i32.sizes().vec(), (DimVector{2, 1}));
  EXPECT_EQ(i32[0][0].item<int64_t>(), -2147483648LL);
  EXPECT_EQ(i32[1][0].item<int64_t>(), 123456789);
  // float32, float64
  write_bytes(dir.file("f32"), idx_header(0x0D, {2}) + be_bytes(f32_bits(1.5f), 4) + be_bytes(f32_bits(-0.125f), 4));
  Tensor f32 = read_idx(dir.file("f32"));
  EXPECT_EQ(f32.dtype(), kFloat32);
  EXPECT_FLOAT_EQ(f32[1].item<float>(), -0.125f);
  write_gz(dir.file("f64.gz"), idx_header(0x0E, {1, 1, 1, 1}) + be_bytes(f64_bits(3.25e100), 8));
  Tensor f64 = read_idx(dir.file("f64.gz"));
  EXPECT_EQ(f64.dtype(), kFloat64);
  EXPECT_EQ(f64.dim(), 4);
  EXPECT_DOUBLE_EQ(f64.view({1})[0].item<double>(), 3.25e100);
}

TEST(Idx, RejectsCorruptFilesNamingFileAndOffset) {
  TempDir dir;
  const std::string ok = idx_u8({2, 3}, {1, 2, 3, 4, 5, 6});
  struct Case {
    const char* name;
    std::string bytes;
    uint64_t offset;
    const char* needle;
  };
  std::vector<Case> cases = {
      {"empty", "", 0, "ends inside the 4-byte magic number"},
      {"short_magic", std::string("\0\0", 2), 2, "ends inside the 4-byte magic number"},
      {"bad_magic", "\x1f\x01\x08\x01" + be_bytes(1, 4) + "x", 0, "bad magic bytes 0x1F 0x01"},
      {"bad_type", std::string("\0\0\x07\x01", 4) + be_bytes(1, 4) + "x", 2, "unknown element type code 0x07"},
      {"zero_dims", std::string("\0\0\x08\x00", 4), 3, "number of dimensions is 0"},
      {"too_many_dims", idx_header(0x08, {1, 1, 1, 1, 1}) + "x", 3, "number of dimensions is 5"},
      {"truncated_header", ok.substr(0, 9), 9, "ends inside the header"},
      {"zero_dim", idx_header(0x08, {2, 0}), 8, "dimension 1 is 0"},
      {"overflowing_dims", idx_header(0x0E, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 2}), 4, "too large"},
      {"truncated_data", ok.substr(0, ok.size() - 2), ok.size() - 2, "data is truncated"},
      {"no_data", idx_header(0x0C, {4}), 8, "need 16 bytes after the 8-byte header, found 0"},
      {"trailing_bytes", ok + "zz", ok.size(), "unexpected trailing bytes"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    write_bytes(dir.file(c.name), c.bytes);
    expect_idx_error(dir.file(c.name), c.offset, c.needle);
    write_gz(dir.file(std::string(c.name) + ".gz"), c.bytes);  // same offsets in the decompressed stream
    expect_idx_error(dir.file(std::string(c.name) + ".gz"), c.offset, c.needle);
  }
}

TEST(Idx, HugeClaimedSizesFailFastWithoutAllocatingThem) {
  TempDir dir;
  // Claims 65535 * 65535 * 4 float64 = 137 GB (over the 4 GiB limit) but holds 8 bytes.
  write_gz(dir.file("huge.gz"), idx_header(0x0E, {65535, 65535, 4}) + std::string(8, '\0'));
  auto t0 = std::chrono::steady_clock::now();
  expect_idx_error(dir.file("huge.gz"), 4, "more than the limit of 4294967296");
  // Plain file: the same claim, refused by the same limit.
  write_bytes(dir.file("huge"), idx_header(0x0E, {65535, 65535, 4}) + std::string(8, '\0'));
  expect_idx_error(dir.file("huge"), 4, "more than the limit");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// A gzip bomb's header: 1 GB claimed (under the limit) in a file of a few dozen bytes,
// which deflate (at most 1032:1) cannot expand that far. Refused before inflating.
TEST(Idx, ClaimsBeyondTheBestGzipRatioAreRefusedBeforeDecompressing) {
  TempDir dir;
  write_gz(dir.file("bomb.gz"), idx_header(0x08, {1000, 1000, 1000}) + std::string(4096, '\0'));
  const auto compressed = std::filesystem::file_size(dir.file("bomb.gz"));
  ASSERT_LT(compressed, 1000u);
  auto t0 = std::chrono::steady_clock::now();
  expect_idx_error(dir.file("bomb.gz"), 4,
                   "but a gzip file of " + std::to_string(compressed) + " bytes decompresses to at most " +
                       std::to_string(compressed * 1032));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  // A real highly compressible file within the ratio still loads: 1 MB of zeros.
  write_gz(dir.file("zeros.gz"), idx_header(0x08, {1024, 1024}) + std::string(1 << 20, '\0'));
  ASSERT_LT(std::filesystem::file_size(dir.file("zeros.gz")) * 1032, (1u << 20) * 8u) << "compresses well";
  EXPECT_EQ(read_idx(dir.file("zeros.gz")).numel(), 1 << 20);
}

// A damaged gzip trailer says what is damaged: the CRC-32 of the data, or its length.
TEST(Idx, GzipTrailerChecksNameTheDamage) {
  TempDir dir;
  std::vector<uint8_t> vals(300);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<uint8_t>(i * 7);
  write_gz(dir.file("good.gz"), idx_u8({300}, vals));
  const std::string gz = read_bytes(dir.file("good.gz"));
  ASSERT_GE(gz.size(), 8u);
  std::string crc = gz, len = gz;
  crc[gz.size() - 8] = static_cast<char>(crc[gz.size() - 8] ^ 1);  // CRC-32: first 4 trailer bytes
  len[gz.size() - 4] = static_cast<char>(len[gz.size() - 4] ^ 1);  // ISIZE: last 4
  write_bytes(dir.file("crc.gz"), crc);
  write_bytes(dir.file("len.gz"), len);
  // (The offset is where zlib noticed, which depends on its buffering: not checked.)
  for (const auto& [file, needle] : {std::pair{"crc.gz", "the gzip CRC-32 check failed: the compressed data is damaged"},
                                     std::pair{"len.gz", "the gzip length check failed"}}) {
    try {
      read_idx(dir.file(file));
      ADD_FAILURE() << "expected an error for " << file;
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("[read_idx] " + dir.file(file) + ": offset "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
}

TEST(Idx, RejectsCorruptAndTruncatedGzipStreams) {
  TempDir dir;
  std::vector<uint8_t> vals(4096);
  for (size_t i = 0; i < vals.size(); ++i) vals[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  write_gz(dir.file("good.gz"), idx_u8({4096}, vals));
  const std::string gz = read_bytes(dir.file("good.gz"));
  // Cut in the middle of the deflate stream.
  write_bytes(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
  try {
    read_idx(dir.file("cut.gz"));
    ADD_FAILURE() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("cut.gz") + ": offset "), std::string::npos) << e.what();
  }
  // Flip bytes inside the compressed data (the CRC check or the inflater catches it).
  std::string bad = gz;
  for (size_t i = 20; i < 40; ++i) bad[i] = static_cast<char>(bad[i] ^ 0x5a);
  write_bytes(dir.file("flipped.gz"), bad);
  try {
    read_idx(dir.file("flipped.gz"));
    ADD_FAILURE() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("flipped.gz") + ": offset "), std::string::npos) << e.what();
  }
}

TEST(Idx, MissingFileAndDirectory) {
  TempDir dir;
  EXPECT_THROW(
      {
        try {
          read_idx(dir.file("nope.gz"));
        } catch (const RuntimeError& e) {
          EXPECT_NE(std::string(e.what()).find("nope.gz: cannot open"), std::string::npos) << e.what();
          throw;
        }
      },
      RuntimeError);
  try {
    read_idx(dir.path());
    ADD_FAILURE() << "expected an error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.path() + ": cannot open: is a directory"), std::string::npos) << e.what();
  }
}

TEST(Idx, RealFashionMnistFiles) {
  if (!std::filesystem::exists(kFashion + "/train-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << kFashion << " is missing (Debian package dataset-fashion-mnist)";
  Tensor labels = read_idx(kFashion + "/train-labels-idx1-ubyte.gz");
  EXPECT_EQ(labels.dtype(), kUInt8);
  EXPECT_EQ(labels.sizes().vec(), (DimVector{60000}));
  std::vector<int> counts(256, 0);
  for (int64_t i = 0; i < labels.numel(); ++i) ++counts[labels.data_ptr<uint8_t>()[i]];
  for (int c = 0; c < 10; ++c) EXPECT_EQ(counts[c], 6000) << "class " << c;
  Tensor images = read_idx(kFashion + "/t10k-images-idx3-ubyte.gz");
  EXPECT_EQ(images.dtype(), kUInt8);
  EXPECT_EQ(images.sizes().vec(), (DimVector{10000, 28, 28}));
  EXPECT_EQ(read_idx(kFashion + "/t10k-labels-idx1-ubyte.gz").sizes().vec(), (DimVector{10000}));
  EXPECT_EQ(read_idx(kFashion + "/train-images-idx3-ubyte.gz").sizes().vec(), (DimVector{60000, 28, 28}));
}
