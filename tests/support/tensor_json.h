#pragma once
// Builds tandem tensors from the oracle JSON encoding (tests/oracle/oracle_lib.py) and
// compares results. Test-only code.
#include <nlohmann/json.hpp>

#include <string>

#include "tandem/tandem.h"

namespace tandem::oracle {

/// Decodes one JSON number or "nan"/"inf"/"-inf" string.
double json_number(const nlohmann::json& v);
/// Builds a tensor with the logical values, shape, dtype and memory layout of `spec`.
Tensor tensor_from_json(const nlohmann::json& spec);
/// Decodes an attribute (see oracle_lib.attr).
AttrValue attr_from_json(const nlohmann::json& spec);
/// Empty string when `got` matches `want` (shape, dtype, values within rtol/atol, NaN
/// equal to NaN); otherwise a description of the first mismatch.
std::string compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol);
/// Reads every element as double (row-major logical order).
std::vector<double> to_doubles(const Tensor& t);

}  // namespace tandem::oracle
