#pragma once
// Training checkpoints: a module's state, an optimizer's state and free-form metadata in
// one safetensors file (see io/safetensors.h), so any safetensors tool can read it.
//
// Names in the file:
//   model.<state_dict key>                  the module's parameters and buffers
//   optimizer.state.<param index>.<name>    the optimizer's per-parameter state
//                                           (OptimizerStateDict::state, prefixed)
// "__metadata__" entries:
//   tandem.format          "checkpoint-1"
//   tandem.optimizer       the optimizer's name ("SGD", "Adam", ...), absent without one
//   tandem.param_groups    JSON: [{"params": [0, 1, ...], "options": {"lr": 0.1, ...}}, ...]
//   anything else          the caller's metadata (keys starting with "tandem." are reserved)
// Like PyTorch's torch.save({"model": m.state_dict(), "optimizer": o.state_dict(), ...}),
// in a format that holds only data (no code runs on load).
#include <string>

#include "tandem/io/safetensors.h"
#include "tandem/nn/module.h"
#include "tandem/optim/optimizer.h"

namespace tandem::io {

/// The parts of a checkpoint file, as load_checkpoint reads them.
struct Checkpoint {
  nn::NamedTensors model;               ///< the module's state_dict entries
  optim::OptimizerStateDict optimizer;  ///< optimizer.optimizer is empty when none was saved
  Metadata metadata;                    ///< the caller's entries (without "tandem.*")
};

/// Writes `model`'s state_dict, `optimizer`'s state_dict (when not null) and `metadata`
/// to `path` atomically (see save_safetensors: the old file stays intact until the new
/// one is complete, so an interrupted save never leaves a partial checkpoint).
/// ValueError for a metadata key starting with "tandem."; save_safetensors' errors.
void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer,
                     const Metadata& metadata = {});

/// Reads a checkpoint written by save_checkpoint. RuntimeError naming the file for
/// load_safetensors' errors, a missing or unknown "tandem.format", a tensor name outside
/// the layout above, or malformed "tandem.param_groups" JSON.
Checkpoint read_checkpoint(const std::string& path);

/// Reads `path` and loads it into `model` (strict load_state_dict) and, when not null,
/// `optimizer` (load_state_dict); returns the caller's metadata. Besides read_checkpoint's
/// errors: RuntimeError naming the file when an optimizer is given but the file has none;
/// the load_state_dict errors (missing/unexpected keys, shape or dtype mismatches,
/// another optimizer kind), prefixed with the file name. Nothing is modified on error
/// in the module unless its own load_state_dict partially applies (it checks first).
Metadata load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer);

}  // namespace tandem::io
