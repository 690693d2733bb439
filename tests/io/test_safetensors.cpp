// safetensors: round trips, the reference file, every corrupt-file check, atomic writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstring>

#include "support/temp_dir.h"
#include "tandem/tandem.h"

using namespace tandem;
using namespace tandem::io;
using tandem::test::read_bytes;
using tandem::test::TempDir;
using tandem::test::write_bytes;

namespace {

// The logical bytes of a tensor (row-major), for exact comparisons of any dtype.
std::string logical_bytes(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
}

void expect_same(const Tensor& got, const Tensor& want, const std::string& name) {
  ASSERT_TRUE(got.defined()) << name;
  EXPECT_EQ(got.dtype(), want.dtype()) << name;
  EXPECT_EQ(got.sizes().vec(), want.sizes().vec()) << name;
  EXPECT_TRUE(got.is_contiguous()) << name;
  EXPECT_EQ(logical_bytes(got), logical_bytes(want)) << name;
}

// A file: 8-byte length, the header text, then `data`.
std::string file_bytes(const std::string& header, const std::string& data) {
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

// Expects load_safetensors(path) to raise RuntimeError mentioning the path and `needle`.
void expect_load_error(const std::string& path, const std::string& needle) {
  try {
    load_safetensors(path);
    ADD_FAILURE() << "expected an error containing '" << needle << "'";
  } catch (const RuntimeError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("[load_safetensors]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

}  // namespace

TEST(Safetensors, DTypeNames) {
  for (DType d : {kBool, kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64})
    EXPECT_EQ(dtype_from_safetensors_name(safetensors_dtype_name(d)), d);
  EXPECT_STREQ(safetensors_dtype_name(kBFloat16), "BF16");
  EXPECT_STREQ(safetensors_dtype_name(kBool), "BOOL");
  EXPECT_FALSE(dtype_from_safetensors_name("U32").has_value());
  EXPECT_FALSE(dtype_from_safetensors_name("f32").has_value());
}

TEST(Safetensors, RoundTripEveryDtypeAndLayout) {
  TempDir dir;
  const std::string path = dir.file("all.safetensors");
  Tensor f32 = arange(12).to(kFloat32).mul(0.25).view({3, 4});
  NamedTensors in = {
      {"f32", f32},
      {"f64", arange(5).to(kFloat64).mul(-1.5)},
      {"f16", arange(6).to(kFloat16).view({2, 3})},
      {"bf16", arange(4).to(kBFloat16).mul(0.5)},
      {"i64", tensor({int64_t{-(int64_t{1} << 60)}, int64_t{0}, int64_t{7}})},
      {"i32", arange(6).to(kInt32).view({3, 2})},
      {"i16", arange(-3, 3).to(kInt16)},
      {"i8", arange(-128, 128, 51).to(kInt8)},
      {"u8", arange(0, 256, 37).to(kUInt8)},
      {"bool", tensor({true, false, false, true})},
      {"scalar", scalar_tensor(2.5, kFloat64)},
      {"empty", empty({0, 3}, kFloat32)},
      {"empty_i64", empty({4, 0}, kInt64)},
      {"transposed", f32.t()},
      {"strided", f32.slice(1, 0, 4, 2)},
      {"offset_view", f32[2]},
      {"expanded", arange(3).to(kFloat32).view({3, 1}).expand({3, 4})},
  };
  Metadata meta = {{"format", "pt"}, {"epoch", "3"}, {"unicode", "\xc3\xa9t\xc3\xa9"}};
  save_safetensors(path, in, meta);
  SafetensorsContents out = load_safetensors(path);
  ASSERT_EQ(out.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ(out.tensors[i].first, in[i].first) << "file order is save order";
    expect_same(out.tensors[i].second, in[i].second, in[i].first);
  }
  EXPECT_EQ(out.metadata, meta);
  ASSERT_TRUE(out.find("strided").has_value());
  EXPECT_EQ(out.find("strided")->sizes().vec(), (DimVector{3, 2}));
  EXPECT_FALSE(out.find("nope").has_value());
  // The loaded tensors own their memory: changing one does not touch the source.
  out.tensors[0].second.fill_(0);
  EXPECT_FLOAT_EQ(f32[1][1].item<float>(), 1.25f);
}

TEST(Safetensors, NoTensorsAndNoMetadata) {
  TempDir dir;
  save_safetensors(dir.file("e.safetensors"), {});
  SafetensorsContents c = load_safetensors(dir.file("e.safetensors"));
  EXPECT_TRUE(c.tensors.empty());
  EXPECT_TRUE(c.metadata.empty());
  EXPECT_EQ(read_bytes(dir.file("e.safetensors")), file_bytes("{}      ", ""));
}

TEST(Safetensors, HeaderLayoutMatchesTheReferenceWriter) {
  TempDir dir;
  save_safetensors(dir.file("x.safetensors"), {{"w", ones({2}, kFloat32)}}, {{"k", "v"}});
  std::string bytes = read_bytes(dir.file("x.safetensors"));
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u) << "data buffer must start 8-byte aligned";
  const std::string json = R"({"__metadata__":{"k":"v"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_EQ(bytes.size(), 8 + n + 8);
  EXPECT_EQ(bytes.substr(8, json.size()), json);
  EXPECT_EQ(bytes.substr(8 + json.size(), n - json.size()), std::string(n - json.size(), ' '));
}

// tests/data/io/reference.safetensors comes from tests/io/gen_safetensors_reference.py,
// written from the format description with Python's struct and json only.
TEST(Safetensors, ReadsAndReproducesTheReferenceFile) {
  const std::string ref = std::string(TANDEM_TEST_DATA_DIR) + "/io/reference.safetensors";
  SafetensorsContents c = load_safetensors(ref);
  EXPECT_EQ(c.metadata, (Metadata{{"format", "pt"}, {"note", "hand-written reference"}}));
  std::vector<std::string> names;
  for (const auto& [n, t] : c.tensors) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"a_f64", "b_i64", "c_f32", "d_i32", "k_empty", "l_scalar", "e_f16",
                                             "f_bf16", "g_i16", "h_i8", "i_u8", "j_bool"}));
  auto get = [&](const char* n) { return *c.find(n); };
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_DOUBLE_EQ(get("a_f64").view({6})[i].item<double>(), static_cast<double>(i) * 0.5 - 1.25);
  EXPECT_EQ(get("a_f64").sizes().vec(), (DimVector{2, 3}));
  EXPECT_EQ(get("b_i64")[0].item<int64_t>(), -(int64_t{1} << 40));
  EXPECT_EQ(get("b_i64")[2].item<int64_t>(), (int64_t{1} << 62) + 5);
  EXPECT_FLOAT_EQ(get("c_f32")[1][1].item<float>(), 0.25f);
  EXPECT_EQ(get("d_i32")[2].item<int64_t>(), 2147483647);
  EXPECT_EQ(get("d_i32")[3].item<int64_t>(), -2147483648LL);
  EXPECT_EQ(get("k_empty").sizes().vec(), (DimVector{0, 3}));
  EXPECT_EQ(get("l_scalar").dim(), 0);
  EXPECT_FLOAT_EQ(get("l_scalar").item<float>(), 3.5f);
  EXPECT_EQ(get("e_f16").dtype(), kFloat16);
  EXPECT_FLOAT_EQ(get("e_f16")[1].item<float>(), -2.5f);
  EXPECT_FLOAT_EQ(get("e_f16")[2].item<float>(), 65504.0f);
  EXPECT_EQ(get("f_bf16").dtype(), kBFloat16);
  EXPECT_FLOAT_EQ(get("f_bf16")[0].item<float>(), 1.5f);
  EXPECT_FLOAT_EQ(get("f_bf16")[1].item<float>(), -3.0f);
  EXPECT_EQ(get("g_i16")[0][0].item<int64_t>(), -300);
  EXPECT_EQ(get("h_i8")[0].item<int64_t>(), -128);
  EXPECT_EQ(get("i_u8")[1][1].item<int64_t>(), 255);
  EXPECT_EQ(get("j_bool").dtype(), kBool);
  EXPECT_TRUE(get("j_bool")[2].item<bool>());
  EXPECT_FALSE(get("j_bool")[1].item<bool>());
  // Writing the same tensors in the same order gives the same bytes.
  TempDir dir;
  save_safetensors(dir.file("copy.safetensors"), c.tensors, c.metadata);
  EXPECT_EQ(read_bytes(dir.file("copy.safetensors")), read_bytes(ref));
}

TEST(Safetensors, AcceptsUnpaddedHeadersNullMetadataAndExtraFields) {
  TempDir dir;
  const std::string p = dir.file("f.safetensors");
  float v[2] = {1.5f, -2.0f};
  write_bytes(p, file_bytes(R"({"__metadata__":null,"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}})",
                            std::string(reinterpret_cast<const char*>(v), 8)));
  SafetensorsContents c = load_safetensors(p);
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_FLOAT_EQ(c.tensors[0].second[1].item<float>(), -2.0f);
  EXPECT_TRUE(c.metadata.empty());
}

TEST(Safetensors, SaveRejectsBadArguments) {
  TempDir dir;
  const std::string p = dir.file("bad.safetensors");
  Tensor x = ones({2});
  EXPECT_THROW(save_safetensors(p, {{"a", x}, {"a", x}}), ValueError);
  EXPECT_THROW(save_safetensors(p, {{"", x}}), ValueError);
  EXPECT_THROW(save_safetensors(p, {{"__metadata__", x}}), ValueError);
  EXPECT_THROW(save_safetensors(p, {{"u", Tensor()}}), ValueError);
  EXPECT_THROW(save_safetensors(p, {{"bad\xff", x}}), ValueError);
  EXPECT_TRUE(dir.list().empty()) << "nothing written for rejected arguments";
}

struct CorruptCase {
  const char* name;
  std::string bytes;
  const char* needle;
};

TEST(Safetensors, RejectsCorruptFilesNamingFileAndProblem) {
  TempDir dir;
  const std::string f8(8, '\0');  // 8 bytes of data: two F32 zeros
  auto entry = [](const std::string& dtype, const std::string& shape, const std::string& offsets) {
    return R"({"dtype":")" + dtype + R"(","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
  };
  std::string huge_len(8, '\xff');
  std::string past_len(8, '\0');
  past_len[0] = 100;
  std::vector<CorruptCase> cases = {
      {"empty_file", "", "too short"},
      {"short_file", std::string("\x02\x00\x00", 3), "too short"},
      {"huge_header_length", huge_len + "{}", "exceeds the limit"},
      {"header_past_eof", past_len + "{}", "runs past the end of the file"},
      {"invalid_json", file_bytes(R"({"x": {"dtype": )", ""), "not valid JSON"},
      {"trailing_json_garbage", file_bytes(R"({} x)", ""), "not valid JSON"},
      {"not_an_object", file_bytes("[1, 2]", ""), "not a JSON object"},
      {"entry_not_object", file_bytes(R"({"x":3})", ""), "entry is not a JSON object"},
      {"missing_dtype", file_bytes(R"({"x":{"shape":[2],"data_offsets":[0,8]}})", f8), "missing field \"dtype\""},
      {"missing_shape", file_bytes(R"({"x":{"dtype":"F32","data_offsets":[0,8]}})", f8), "missing field \"shape\""},
      {"missing_offsets", file_bytes(R"({"x":{"dtype":"F32","shape":[2]}})", f8), "missing field \"data_offsets\""},
      {"dtype_not_string", file_bytes(R"({"x":{"dtype":7,"shape":[2],"data_offsets":[0,8]}})", f8),
       "\"dtype\" is not a string"},
      {"unknown_dtype", file_bytes(R"({"x":)" + entry("F7", "[2]", "[0,8]") + "}", f8), "unknown dtype \"F7\""},
      {"unsupported_dtype", file_bytes(R"({"x":)" + entry("U32", "[2]", "[0,8]") + "}", f8),
       "dtype \"U32\" is not supported"},
      {"shape_not_array", file_bytes(R"({"x":)" + entry("F32", "2", "[0,8]") + "}", f8), "\"shape\" is not an array"},
      {"negative_dim", file_bytes(R"({"x":)" + entry("F32", "[-2]", "[0,8]") + "}", f8), "shape[0] is negative"},
      {"fractional_dim", file_bytes(R"({"x":)" + entry("F32", "[2.5]", "[0,8]") + "}", f8),
       "shape[0] is not a non-negative integer"},
      {"shape_overflow", file_bytes(R"({"x":)" + entry("F32", "[4294967296,4294967296,4]", "[0,8]") + "}", f8),
       "too large"},
      {"size_mismatch", file_bytes(R"({"x":)" + entry("F32", "[3]", "[0,8]") + "}", f8), "need 12"},
      {"offsets_wrong_length", file_bytes(R"({"x":)" + entry("F32", "[2]", "[0,8,9]") + "}", f8),
       "not an array [begin, end]"},
      {"negative_offset", file_bytes(R"({"x":)" + entry("F32", "[0]", "[-1,-1]") + "}", ""),
       "data_offsets[0] is negative"},
      {"begin_after_end", file_bytes(R"({"x":)" + entry("F32", "[0]", "[8,0]") + "}", f8), "begin > end"},
      {"offsets_past_eof", file_bytes(R"({"x":)" + entry("F32", "[4]", "[0,16]") + "}", f8),
       "run past the end of the file"},
      {"overlap", file_bytes(R"({"x":)" + entry("F32", "[2]", "[0,8]") + R"(,"y":)" + entry("F32", "[1]", "[4,8]") + "}",
                             f8),
       "overlap"},
      {"gap", file_bytes(R"({"x":)" + entry("F32", "[1]", "[4,8]") + "}", f8), "gap of 4 bytes"},
      {"trailing_data", file_bytes(R"({"x":)" + entry("F32", "[1]", "[0,4]") + "}", f8), "4 trailing bytes"},
      {"duplicate_name",
       file_bytes(R"({"x":)" + entry("F32", "[1]", "[0,4]") + R"(,"x":)" + entry("F32", "[1]", "[4,8]") + "}", f8),
       "\"x\" more than once"},
      {"duplicate_field", file_bytes(R"({"x":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f8),
       "\"dtype\" more than once"},
      {"metadata_not_object", file_bytes(R"({"__metadata__":[1]})", ""), "\"__metadata__\" is not an object"},
      {"metadata_not_string", file_bytes(R"({"__metadata__":{"epoch":3}})", ""), "value of \"epoch\" is not a string"},
      {"bool_byte", file_bytes(R"({"b":)" + entry("BOOL", "[2]", "[0,2]") + "}", std::string("\x01\x02", 2)),
       "holds byte 2"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string p = dir.file(std::string(c.name) + ".safetensors");
    write_bytes(p, c.bytes);
    expect_load_error(p, c.needle);
  }
  expect_load_error(dir.file("missing.safetensors"), "cannot open");
  expect_load_error(dir.path(), "is a directory");
}

TEST(Safetensors, OverwriteReplacesTheFile) {
  TempDir dir;
  const std::string p = dir.file("m.safetensors");
  save_safetensors(p, {{"a", ones({3})}});
  save_safetensors(p, {{"b", zeros({2}, kInt64)}}, {{"v", "2"}});
  SafetensorsContents c = load_safetensors(p);
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].first, "b");
  EXPECT_EQ(c.metadata.at("v"), "2");
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"m.safetensors"})) << "no temporary file left";
}

// A write that fails halfway (the file size limit makes write() fail with EFBIG) must
// leave the old file intact and remove the temporary file.
TEST(Safetensors, FailedWriteKeepsTheOldFileAndRemovesTheTemporary) {
  TempDir dir;
  const std::string p = dir.file("ckpt.safetensors");
  save_safetensors(p, {{"old", arange(4).to(kFloat32)}});
  const std::string before = read_bytes(p);

  struct rlimit saved {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of the signal
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string msg;
  try {
    save_safetensors(p, {{"big", zeros({1 << 20}, kFloat32)}});  // 4 MB > 64 KB
  } catch (const RuntimeError& e) {
    threw = true;
    msg = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  signal(SIGXFSZ, old_handler);

  EXPECT_TRUE(threw);
  EXPECT_NE(msg.find(p), std::string::npos) << msg;
  EXPECT_NE(msg.find("write failed"), std::string::npos) << msg;
  EXPECT_EQ(read_bytes(p), before) << "the old checkpoint must survive";
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"ckpt.safetensors"})) << "temporary file must be removed";
  EXPECT_EQ(load_safetensors(p).tensors[0].first, "old");
}

TEST(Safetensors, FailedRenameRemovesTheTemporary) {
  TempDir dir;
  std::filesystem::create_directory(dir.file("target"));  // rename(file, dir) fails
  try {
    save_safetensors(dir.file("target"), {{"x", ones({2})}});
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot rename"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.list(), (std::vector<std::string>{"target"}));
  EXPECT_THROW(save_safetensors(dir.file("no/such/dir/x.safetensors"), {{"x", ones({2})}}), RuntimeError);
}
