#pragma once
// Helpers shared by the tensor-core tests (tests/core/): loading the committed PyTorch
// expectations under tests/data/, naming error classes, checking error messages.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tandem/tandem.h"

namespace tandem::testing {

inline nlohmann::json load_data(const std::string& file) {
  std::ifstream in(std::string(TANDEM_TEST_DATA_DIR) + "/" + file);
  if (!in) throw std::runtime_error("cannot open test data " + file);
  return nlohmann::json::parse(in);
}

/// The most derived tandem error class name of `e` ("ShapeError", ...).
inline const char* error_name(const std::exception& e) {
  if (dynamic_cast<const ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const TypeError*>(&e)) return "TypeError";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  if (dynamic_cast<const IndexError*>(&e)) return "IndexError";
  if (dynamic_cast<const NotImplementedError*>(&e)) return "NotImplementedError";
  if (dynamic_cast<const RuntimeError*>(&e)) return "RuntimeError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return "std::exception";
}

inline std::string sanitize(std::string s) {
  for (char& ch : s)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

inline DimVector dims_of(const nlohmann::json& j) { return j.get<std::vector<int64_t>>(); }

}  // namespace tandem::testing

/// Runs `stmt`, expects it to throw exactly `ErrType` (checked by name, so a subclass
/// mismatch is reported) with a message that starts with "[op]" and contains every
/// string in the initializer list `needles`.
#define EXPECT_TANDEM_ERROR(stmt, ErrType, op, ...)                                                     \
  do {                                                                                                  \
    try {                                                                                               \
      (void)(stmt);                                                                                     \
      ADD_FAILURE() << #stmt " did not throw (expected " #ErrType ")";                                 \
    } catch (const std::exception& e_) {                                                                \
      EXPECT_STREQ(::tandem::testing::error_name(e_), #ErrType) << #stmt ": " << e_.what();             \
      std::string msg_ = e_.what();                                                                     \
      EXPECT_EQ(msg_.rfind(std::string("[") + (op) + "]", 0), 0u) << "message must start with [" << (op) \
                                                                   << "]: " << msg_;                    \
      for (const char* n_ : std::initializer_list<const char*>{__VA_ARGS__})                            \
        EXPECT_NE(msg_.find(n_), std::string::npos) << "message lacks '" << n_ << "': " << msg_;       \
    }                                                                                                   \
  } while (0)
