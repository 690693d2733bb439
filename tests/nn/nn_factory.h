#pragma once
// Test-only factory: builds a tandem nn layer from the (type, args) of a case in
// tests/data/nn_modules.json (tests/oracle/gen_nn_modules.py), where args are torch.nn's
// constructor keyword arguments. Kept in the tests: the library has no by-name registry of
// layers.
#include <nlohmann/json.hpp>

#include <string>

#include "tandem/tandem.h"

namespace tandem::nn::testing {

/// The layer `type` (torch.nn class name) built from torch-named keyword arguments.
/// Throws std::runtime_error for an unknown type or argument.
ModulePtr make_module(const std::string& type, const nlohmann::json& args);

/// Runs a layer as the generator does and returns its outputs: ModuleList and ModuleDict
/// apply their children in order; everything else is module(inputs) (Bilinear takes two
/// inputs; MaxPool with return_indices returns values and indices).
std::vector<Tensor> run_module(const std::string& type, Module& m, const std::vector<Tensor>& inputs);

}  // namespace tandem::nn::testing
