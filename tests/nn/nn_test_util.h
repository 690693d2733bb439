#pragma once
// Small helpers shared by the nn tests.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "support/tensor_json.h"
#include "tandem/tandem.h"

namespace tandem::nn::testing {

/// Runs `fn`, expects it to throw ErrT whose message starts with '[' and contains every
/// string of `parts`.
template <typename ErrT, typename Fn>
void expect_error(Fn&& fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const ErrT& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.substr(0, 1), "[") << "message must start with [op]: " << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
  }
}

/// Summary statistics of a tensor's values.
struct Stats {
  double min = 0, max = 0, mean = 0, std = 0;
  size_t n = 0;
};
inline Stats stats(const Tensor& t) {
  auto v = oracle::to_doubles(t.detach());
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  s.min = s.max = v[0];
  double sum = 0;
  for (double x : v) {
    s.min = std::min(s.min, x);
    s.max = std::max(s.max, x);
    sum += x;
  }
  s.mean = sum / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(ss / static_cast<double>(v.size()));
  return s;
}

/// True when every element of a equals the one of b (same shape).
inline bool same_values(const Tensor& a, const Tensor& b) {
  return oracle::compare_tensors(a.detach(), b.detach(), 0, 0).empty();
}

}  // namespace tandem::nn::testing
