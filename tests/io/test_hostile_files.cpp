// Hostile safetensors and checkpoint files (generated here, not shipped): deeply nested
// JSON is refused before parsing, with the offset, and never printed; every message
// quotes only short excerpts of what the file holds. Also json_guard's helpers.
#include <gtest/gtest.h>

#include <cstring>

#include "support/temp_dir.h"
#include "tandem/io/json_guard.h"
#include "tandem/tandem.h"

namespace {

using namespace tandem;
using test::TempDir;
using test::write_bytes;

// A safetensors file: the 8-byte little-endian header length, the header, the data.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

}  // namespace

TEST(JsonGuard, DepthViolationSkipsStringsAndReportsTheOffset) {
  EXPECT_EQ(io::json_depth_violation("{}", 1), std::string::npos);
  EXPECT_EQ(io::json_depth_violation("{\"a\":[1]}", 2), std::string::npos);
  EXPECT_EQ(io::json_depth_violation("{\"a\":[1]}", 1), 5u);  // the '[' at offset 5
  // Brackets inside strings, escaped quotes included, do not count.
  EXPECT_EQ(io::json_depth_violation(R"({"[[[[\"[[[": 1})", 1), std::string::npos);
  EXPECT_EQ(io::json_depth_violation(R"(["\\", [[]]])", 2), 8u);  // the third [
  // Siblings do not add up: depth is nesting, not bracket count.
  EXPECT_EQ(io::json_depth_violation("[[],[],[],[]]", 2), std::string::npos);
  const std::string deep(100000, '[');
  EXPECT_EQ(io::json_depth_violation(deep), static_cast<size_t>(io::kJsonMaxDepth));
}

TEST(JsonGuard, ExcerptsAreShortQuotedAndEscaped) {
  EXPECT_EQ(io::excerpt("abc"), "\"abc\"");
  EXPECT_EQ(io::excerpt(std::string("a\"b\\c\n\xff", 7)), R"("a\"b\\c\x0a\xff")");
  const std::string big(1000000, 'x');
  const std::string e = io::excerpt(big, 10);
  EXPECT_EQ(e, "\"xxxxxxxxxx\"... (1000000 bytes)");
  EXPECT_EQ(io::clip(big, 5), "xxxxx... (1000000 bytes)");
  EXPECT_EQ(io::clip("short", 5), "short");
}

// The issue's file: 100,000 nested arrays crashed `tandem train --resume` (the error path
// printed the value recursively). Now: refused before parsing, naming the file offset.
TEST(HostileSafetensors, DeepNestingIsRefusedWithTheOffset) {
  TempDir dir;
  const std::vector<std::pair<const char*, std::string>> headers = {
      {"arrays", "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}"},
      {"objects", [] {
         std::string h;
         for (int i = 0; i < 100000; ++i) h += "{\"a\":";
         h += "1";
         h += std::string(100000, '}');
         return h;
       }()},
      {"unclosed", std::string(100000, '[')},
      {"in_metadata", "{\"__metadata__\":" + std::string(70, '[') + std::string(70, ']') + "}"},
  };
  for (const auto& [name, header] : headers) {
    SCOPED_TRACE(name);
    const std::string p = dir.file(std::string(name) + ".safetensors");
    write_bytes(p, file_bytes(header));
    const std::string msg = error_of([&] { io::load_safetensors(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find("deeper than 64 levels"), std::string::npos) << msg;
    EXPECT_LT(msg.size(), 400u) << msg;
  }
  // The offset is that of the 65th opening bracket in the file (8-byte length first).
  const std::string p = dir.file("arrays.safetensors");
  const std::string msg = error_of([&] { io::load_safetensors(p); });
  EXPECT_NE(msg.find("file offset " + std::to_string(8 + 5 + 63)), std::string::npos) << msg;
  // 64 levels are fine as far as nesting goes (the file is then refused for its content).
  write_bytes(p, file_bytes("{\"x\":" + std::string(63, '[') + std::string(63, ']') + "}"));
  const std::string ok_depth = error_of([&] { io::load_safetensors(p); });
  EXPECT_EQ(ok_depth.find("deeper than"), std::string::npos) << ok_depth;
  EXPECT_NE(ok_depth.find("entry is not a JSON object"), std::string::npos) << ok_depth;
  EXPECT_LT(ok_depth.size(), 400u) << ok_depth;
}

// Messages quote names and values from the file, but only short excerpts of them.
TEST(HostileSafetensors, MessagesQuoteOnlyShortExcerpts) {
  TempDir dir;
  const std::string long_name(1 << 20, 'n');
  const std::string long_str(1 << 20, 's');
  std::string long_array = "[";
  for (int i = 0; i < 100000; ++i) long_array += (i ? ",1" : "1");
  long_array += "]";
  std::string wide_deep;  // 60 levels, each with many siblings
  for (int i = 0; i < 60; ++i) wide_deep += "[1,2,3,4,5,6,7,8,";
  wide_deep += "0" + std::string(60, ']');
  const std::vector<std::pair<const char*, std::string>> headers = {
      {"long_name_not_object", "{\"" + long_name + "\":3}"},
      {"long_dtype", "{\"x\":{\"dtype\":\"" + long_str + "\",\"shape\":[],\"data_offsets\":[0,0]}}"},
      {"long_shape_array", "{\"x\":{\"dtype\":\"F32\",\"shape\":" + long_array + ",\"data_offsets\":[0,0]}}"},
      {"long_shape_dims", "{\"x\":{\"dtype\":\"F32\",\"shape\":" + long_array + ",\"data_offsets\":[0,4]}}"},
      {"entry_is_big_array", "{\"x\":" + long_array + "}"},
      {"entry_is_wide_and_deep", "{\"x\":" + wide_deep + "}"},
      {"offsets_long_string", "{\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":\"" + long_str + "\"}}"},
      {"metadata_long_value", "{\"__metadata__\":{\"" + long_name + "\":[\"" + long_str + "\"]}}"},
      {"duplicate_long_key", "{\"" + long_name + "\":1,\"" + long_name + "\":1}"},
      {"not_object", "\"" + long_str + "\""},
      {"bad_json_long_token", "{\"x\":\"" + long_str},
      // Found by fuzzing: a number beyond double's range raised nlohmann's out_of_range,
      // which escaped load_safetensors as a non-tandem exception.
      {"number_overflow", "{\"x\":{\"dtype\":\"F32\",\"shape\":[555e500000000],\"data_offsets\":[0,0]}}"},
  };
  for (const auto& [name, header] : headers) {
    SCOPED_TRACE(name);
    const std::string p = dir.file(std::string(name) + ".safetensors");
    write_bytes(p, file_bytes(header));
    const std::string msg = error_of([&] { io::load_safetensors(p); });
    EXPECT_NE(msg.find(p), std::string::npos) << msg.substr(0, 500);
    EXPECT_LT(msg.size(), 700u) << msg.substr(0, 1000);
  }
}

// A tandem checkpoint whose metadata is hostile: deep or long JSON in
// "tandem.param_groups", a long format string, a long tensor name.
TEST(HostileCheckpoint, MetadataIsBoundedAndChecked) {
  TempDir dir;
  const std::string p = dir.file("ck.safetensors");
  auto model = std::make_shared<nn::Linear>(3, 2);
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  io::save_checkpoint(p, *model, &opt);
  io::SafetensorsContents f = io::load_safetensors(p);

  auto write_with = [&](const std::string& key, const std::string& value) {
    io::Metadata m = f.metadata;
    m[key] = value;
    io::save_safetensors(p, f.tensors, m);
  };
  write_with("tandem.param_groups", std::string(100000, '[') + std::string(100000, ']'));
  std::string msg = error_of([&] { io::load_checkpoint(p, *model, &opt); });
  EXPECT_NE(msg.find("deeper than 64 levels"), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 400u) << msg;

  write_with("tandem.param_groups", "[{\"params\":[0,1],\"options\":{\"lr\":\"" + std::string(1 << 20, 'x') + "\"}}]");
  msg = error_of([&] { io::load_checkpoint(p, *model, &opt); });
  EXPECT_NE(msg.find("malformed \"tandem.param_groups\""), std::string::npos) << msg.substr(0, 500);
  EXPECT_LT(msg.size(), 700u) << msg.substr(0, 1000);

  write_with("tandem.format", std::string(1 << 20, 'f'));
  msg = error_of([&] { io::load_checkpoint(p, *model, &opt); });
  EXPECT_NE(msg.find("not a tandem checkpoint"), std::string::npos) << msg.substr(0, 500);
  EXPECT_LT(msg.size(), 700u) << msg.substr(0, 1000);

  write_with("tandem.optimizer", std::string(1 << 20, 'o'));
  msg = error_of([&] { io::load_checkpoint(p, *model, &opt); });
  EXPECT_NE(msg.find(p), std::string::npos) << msg.substr(0, 500);
  EXPECT_LT(msg.size(), 1500u) << msg.substr(0, 2000);

  io::NamedTensors t = f.tensors;
  t.emplace_back(std::string(1 << 20, 'k'), zeros({1}));
  io::save_safetensors(p, t, f.metadata);
  msg = error_of([&] { io::load_checkpoint(p, *model, &opt); });
  EXPECT_NE(msg.find("unexpected tensor"), std::string::npos) << msg.substr(0, 500);
  EXPECT_LT(msg.size(), 700u) << msg.substr(0, 1000);
}
