#include "tandem/io/checkpoint.h"

#include <nlohmann/json.hpp>

#include <cstdlib>

#include "tandem/io/json_guard.h"

namespace tandem::io {

namespace {

constexpr const char* kFormat = "checkpoint-1";
const std::string kModelPrefix = "model.";
const std::string kOptimPrefix = "optimizer.";

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

/// Runs f, re-raising a tandem error of the same kind with `where` in front, so a load
/// error names the file (the module/optimizer messages do not know it). The message is
/// clipped: those layers may quote names or lists taken from the (hostile) file.
template <typename F>
void with_context(const std::string& where, F&& f) {
  constexpr size_t kMax = 1000;
  try {
    f();
  } catch (const ShapeError& e) {
    throw ShapeError(where + clip(e.what(), kMax));
  } catch (const TypeError& e) {
    throw TypeError(where + clip(e.what(), kMax));
  } catch (const ValueError& e) {
    throw ValueError(where + clip(e.what(), kMax));
  } catch (const IndexError& e) {
    throw IndexError(where + clip(e.what(), kMax));
  }
}

}  // namespace

void save_checkpoint(const std::string& path, const nn::Module& model, const optim::Optimizer* optimizer,
                     const Metadata& metadata) {
  Metadata meta;
  for (const auto& [k, v] : metadata) {
    TANDEM_CHECK(!starts_with(k, "tandem."), ValueError, "save_checkpoint", "metadata key \"", k,
                 "\" uses the reserved prefix \"tandem.\"");
    meta[k] = v;
  }
  meta["tandem.format"] = kFormat;
  NamedTensors tensors;
  for (auto& [k, t] : model.state_dict()) tensors.emplace_back(kModelPrefix + k, t);
  if (optimizer) {
    optim::OptimizerStateDict sd = optimizer->state_dict();
    meta["tandem.optimizer"] = sd.optimizer;
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& g : sd.param_groups) groups.push_back({{"params", g.params}, {"options", g.options}});
    meta["tandem.param_groups"] = groups.dump();
    for (auto& [k, t] : sd.state) tensors.emplace_back(kOptimPrefix + k, t);
  }
  save_safetensors(path, tensors, meta);
}

Checkpoint read_checkpoint(const std::string& path) {
  SafetensorsContents file = load_safetensors(path);
  const std::string where = "[load_checkpoint] " + path + ": ";
  Checkpoint ck;
  auto fmt = file.metadata.find("tandem.format");
  if (fmt == file.metadata.end() || fmt->second != kFormat)
    throw RuntimeError(where + "not a tandem checkpoint (expected __metadata__ \"tandem.format\": \"" + kFormat +
                       "\", got " + (fmt == file.metadata.end() ? "none" : excerpt(fmt->second)) + ")");
  for (auto& [k, t] : file.tensors) {
    if (starts_with(k, kModelPrefix)) ck.model.emplace_back(k.substr(kModelPrefix.size()), t);
    else if (starts_with(k, kOptimPrefix)) ck.optimizer.state.emplace_back(k.substr(kOptimPrefix.size()), t);
    else throw RuntimeError(where + "unexpected tensor " + excerpt(k) + " (expected names starting with \"model.\" or \"optimizer.\")");
  }
  auto opt = file.metadata.find("tandem.optimizer");
  if (opt != file.metadata.end()) {
    ck.optimizer.optimizer = opt->second;
    auto pg = file.metadata.find("tandem.param_groups");
    if (pg == file.metadata.end()) throw RuntimeError(where + "\"tandem.optimizer\" without \"tandem.param_groups\"");
    if (size_t at = json_depth_violation(pg->second); at != std::string::npos)
      throw RuntimeError(where + "malformed \"tandem.param_groups\": nests deeper than " +
                         std::to_string(kJsonMaxDepth) + " levels (at character " + std::to_string(at) + ")");
    try {
      const nlohmann::json groups = nlohmann::json::parse(pg->second);
      if (!groups.is_array()) throw RuntimeError("not an array");
      for (const auto& g : groups) {
        optim::GroupStateDict gs;
        gs.params = g.at("params").get<std::vector<int64_t>>();
        gs.options = g.at("options").get<std::map<std::string, double>>();
        ck.optimizer.param_groups.push_back(std::move(gs));
      }
    } catch (const std::exception& e) {
      throw RuntimeError(where + "malformed \"tandem.param_groups\": " + clip(e.what()));
    }
  } else if (!ck.optimizer.state.empty()) {
    throw RuntimeError(where + "optimizer tensors without \"tandem.optimizer\" metadata");
  }
  for (auto& [k, v] : file.metadata)
    if (!starts_with(k, "tandem.")) ck.metadata[k] = v;
  return ck;
}

Metadata load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer* optimizer) {
  Checkpoint ck = read_checkpoint(path);
  const std::string where = "[load_checkpoint] " + path + ": ";
  if (optimizer && ck.optimizer.optimizer.empty())
    throw RuntimeError(where + "the file has no optimizer state (saved without an optimizer)");
  with_context(where, [&] { model.load_state_dict(ck.model, true); });
  if (optimizer) with_context(where, [&] { optimizer->load_state_dict(ck.optimizer); });
  return ck.metadata;
}

}  // namespace tandem::io
