// Registry-driven oracle test: replays every case in tests/data/oracle/*.json (made by
// the generators in tests/oracle/ from PyTorch results) through the dispatcher by op
// name and compares outputs, dtypes and errors. One GoogleTest test per case.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/tensor_json.h"

using namespace tandem;
using nlohmann::json;

namespace {

const char* error_name(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const NotImplementedError*>(&e)) return "NotImplementedError";
  if (dynamic_cast<const RuntimeError*>(&e)) return "RuntimeError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return "std::exception";
}

class OracleCase : public ::testing::Test {
 public:
  explicit OracleCase(json c) : case_(std::move(c)) {}
  void TestBody() override {
    const std::string op_name = case_.at("op");
    const OpDef* op = find_op(op_name);
    ASSERT_NE(op, nullptr) << "op '" << op_name << "' is not registered";
    std::vector<Tensor> inputs;
    for (const auto& in : case_.at("inputs")) {
      if (in.is_null()) inputs.emplace_back();
      else if (in.contains("scalar")) inputs.push_back(wrap_scalar(std::get<Scalar>(oracle::attr_from_json(in))));
      else inputs.push_back(oracle::tensor_from_json(in));
    }
    std::vector<AttrValue> attrs;
    for (const auto& a : case_.value("attrs", json::array())) attrs.push_back(oracle::attr_from_json(a));
    if (case_.contains("error")) {
      const std::string want = case_["error"];
      try {
        dispatch(*op, inputs, attrs);
        FAIL() << "expected " << want << ", but the op succeeded";
      } catch (const std::exception& e) {
        EXPECT_EQ(error_name(e), want) << e.what();
        EXPECT_EQ(e.what()[0], '[') << "message must start with [op]: " << e.what();
      }
      return;
    }
    OpOutputs outs;
    try {
      outs = dispatch(*op, inputs, attrs);
    } catch (const std::exception& e) {
      FAIL() << "op raised " << error_name(e) << ": " << e.what();
    }
    const auto& expected = case_.at("expected");
    ASSERT_GE(outs.size(), expected.size());
    double rtol = case_.value("rtol", 1.3e-6), atol = case_.value("atol", 1e-5);
    for (size_t i = 0; i < expected.size(); ++i) {
      Tensor want = oracle::tensor_from_json(expected[i]);
      // Reduced floats: PyTorch rounds once; allow one ulp of the type.
      double r = rtol, a = atol;
      if (want.dtype() == kFloat16) { r = std::max(r, 1e-3); a = std::max(a, 1e-3); }
      if (want.dtype() == kBFloat16) { r = std::max(r, 8e-3); a = std::max(a, 8e-3); }
      std::string diff = oracle::compare_tensors(outs[i], want, r, a);
      EXPECT_TRUE(diff.empty()) << "output " << i << ": " << diff;
    }
  }

 private:
  json case_;
};

std::string sanitize(std::string s) {
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Registers one test per case before main runs (gtest_main calls RUN_ALL_TESTS).
const bool registered = [] {
  namespace fs = std::filesystem;
  fs::path dir = fs::path(TANDEM_TEST_DATA_DIR) / "oracle";
  if (!fs::exists(dir)) return false;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    json doc = json::parse(in);
    std::string suite = "Oracle_" + sanitize(f.stem().string());
    for (const auto& c : doc.at("cases")) {
      std::string name = sanitize(c.at("name").get<std::string>());
      ::testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [c]() -> ::testing::Test* { return new OracleCase(c); });
    }
  }
  return true;
}();

}  // namespace
