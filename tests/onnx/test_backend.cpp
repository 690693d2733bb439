// The ONNX backend test suite (Debian's libonnx-testdata, ONNX 1.12) through tandem's
// importer: every case under /usr/share/libonnx-testdata/data/{node,pytorch-converted,
// pytorch-operator,simple}/<case>/ (model.onnx, test_data_set_0/{input,output}_N.pb) runs
// eagerly with the stock runner's pass criterion (same output count and dtype, shapes
// equal, |got - want| <= 1e-7 + 1e-3 * |want|, NaN equals NaN), then through
// tandem::compile (no_grad), whose outputs must equal the eager ones bitwise. The suite
// stores bfloat16 data as UINT16; those files are read as bfloat16 where the model declares
// BFLOAT16. Sequence and optional inputs/outputs (SequenceProto / OptionalProto files, as
// the model declares them) are compared element by element; such models run eagerly only
// (forward_values; compiled mode takes tensors).
//
// tests/onnx/expected_pass.txt lists the cases that pass (one "dir/case" a line): one of
// them failing is a regression and fails the test. Cases that pass but are not listed are
// printed (add them). The per-case results go to onnx_backend_report.md beside the test
// binary (build/tests/); TANDEM_ONNX_REPORT=PATH writes it there instead (docs/
// onnx-conformance.md is such a report), TANDEM_ONNX_UPDATE=PATH writes the passing list.
#include <gtest/gtest.h>
#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/nn/compiled.h"
#include "tandem/onnx/onnx.h"
#include "tandem/ops/creation.h"

namespace fs = std::filesystem;
using namespace tandem;

namespace {

const char* kRoot = "/usr/share/libonnx-testdata/data";
const char* kDirs[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

struct Result {
  std::string status;  // pass, fail, unsupported
  std::string detail;
  std::string compiled;  // "bitwise", "eager fallback", "differs", "error", ""
  std::vector<std::string> ops;
};

// Max abs error when `got` fails the criterion, or a message; "" when close.
std::string compare(const Tensor& got, const Tensor& want) {
  if (got.dtype() != want.dtype())
    return str_cat("dtype ", dtype_name(got.dtype()), ", expected ", dtype_name(want.dtype()));
  if (got.sizes().vec() != want.sizes().vec()) {
    std::ostringstream os;
    os << "shape " << got.sizes() << ", expected " << want.sizes();
    return os.str();
  }
  Tensor a = got.to(DType::Float64).contiguous(), b = want.to(DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pb = b.data_ptr<double>();
  double worst = 0;
  bool bad = false;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = pa[i], y = pb[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    double err = std::fabs(x - y);
    if (!(err <= 1e-7 + 1e-3 * std::fabs(y))) {
      bad = true;
      worst = std::isnan(err) ? err : std::max(worst, err);
    }
  }
  return bad ? str_cat("max abs error ", worst) : "";
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec()) return false;
  if (a.numel() == 0) return true;  // no bytes (and maybe no buffer: memcmp wants non-null pointers)
  Tensor x = a.contiguous(), y = b.contiguous();
  return std::memcmp(x.data_ptr(), y.data_ptr(), x.nbytes()) == 0;
}

// The types the model declares for its non-initializer inputs or its outputs.
std::vector<::onnx::TypeProto> declared_types(const fs::path& model, bool outputs) {
  ::onnx::ModelProto m;
  std::ifstream f(model, std::ios::binary);
  std::vector<::onnx::TypeProto> types;
  if (!m.ParseFromIstream(&f)) return types;
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  const auto& list = outputs ? m.graph().output() : m.graph().input();
  for (const auto& v : list)
    if (outputs || !inits.count(v.name())) types.push_back(v.type());
  return types;
}

Tensor tensor_of(const ::onnx::TensorProto& tp, const std::string& label) {
  return tandem::onnx::load_tensor_from_bytes(tp.SerializeAsString(), label);
}

tandem::onnx::Value sequence_of(const ::onnx::SequenceProto& sp, const std::string& label) {
  if (sp.elem_type() != ::onnx::SequenceProto::TENSOR && sp.tensor_values_size() == 0 &&
      sp.elem_type() != ::onnx::SequenceProto::UNDEFINED)
    throw NotImplementedError(label + ": sequences of non-tensors are not supported");
  std::vector<Tensor> ts;
  for (const auto& tp : sp.tensor_values()) ts.push_back(tensor_of(tp, label));
  return tandem::onnx::Value::sequence(std::move(ts));
}

// Reads input_N.pb / output_N.pb as the model declares position N: a SequenceProto, an
// OptionalProto or a TensorProto. The suite stores bfloat16 data as UINT16 (ONNX 1.12's
// test generator): such a file is read as bfloat16 where the model declares BFLOAT16.
std::vector<tandem::onnx::Value> load_set(const fs::path& dir, const char* kind,
                                          const std::vector<::onnx::TypeProto>& declared) {
  using tandem::onnx::Value;
  std::vector<Value> vs;
  for (int i = 0;; ++i) {
    fs::path p = dir / (std::string(kind) + "_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    std::ifstream f(p, std::ios::binary);
    const ::onnx::TypeProto* ty = static_cast<size_t>(i) < declared.size() ? &declared[i] : nullptr;
    if (ty && ty->has_sequence_type()) {
      ::onnx::SequenceProto sp;
      if (!sp.ParseFromIstream(&f)) throw RuntimeError(p.string() + ": not a SequenceProto");
      vs.push_back(sequence_of(sp, p.string()));
      continue;
    }
    if (ty && ty->has_optional_type()) {
      ::onnx::OptionalProto op;
      if (!op.ParseFromIstream(&f)) throw RuntimeError(p.string() + ": not an OptionalProto");
      if (op.has_tensor_value()) vs.push_back(Value::tensor(tensor_of(op.tensor_value(), p.string())));
      else if (op.has_sequence_value()) vs.push_back(sequence_of(op.sequence_value(), p.string()));
      else vs.push_back(Value::none());
      continue;
    }
    ::onnx::TensorProto tp;
    if (!tp.ParseFromIstream(&f)) throw RuntimeError(p.string() + ": not a TensorProto");
    if (ty && ty->tensor_type().elem_type() == ::onnx::TensorProto::BFLOAT16 &&
        tp.data_type() == ::onnx::TensorProto::UINT16)
      tp.set_data_type(::onnx::TensorProto::BFLOAT16);
    vs.push_back(Value::tensor(tensor_of(tp, p.string())));
  }
  return vs;
}

// compare() for values: same kind, same length, each tensor close.
std::string compare_values(const tandem::onnx::Value& got, const tandem::onnx::Value& want) {
  using K = tandem::onnx::Value::Kind;
  if (got.kind != want.kind) return str_cat("a ", got.kind_name(), ", expected a ", want.kind_name());
  if (got.kind == K::Tensor) return compare(got.t, want.t);
  if (got.kind == K::None) return "";
  if (got.seq.size() != want.seq.size())
    return str_cat("a sequence of ", got.seq.size(), " tensors, expected ", want.seq.size());
  for (size_t i = 0; i < got.seq.size(); ++i) {
    std::string why = compare(got.seq[i], want.seq[i]);
    if (!why.empty()) return str_cat("element ", i, ": ", why);
  }
  return "";
}

Result run_case(const fs::path& dir) {
  using tandem::onnx::Value;
  Result r;
  std::shared_ptr<tandem::onnx::OnnxModel> model;
  std::vector<Value> inputs, want, got;
  try {
    model = tandem::onnx::load_model((dir / "model.onnx").string());
    r.ops = model->op_types();
    inputs = load_set(dir / "test_data_set_0", "input", declared_types(dir / "model.onnx", false));
    want = load_set(dir / "test_data_set_0", "output", declared_types(dir / "model.onnx", true));
    model->eval();
    {
      autograd::NoGradGuard ng;
      got = model->forward_values(inputs);
    }
  } catch (const NotImplementedError& e) {
    return {"unsupported", e.what(), "", r.ops};
  } catch (const TypeError& e) {
    std::string m = e.what();
    if (m.find("has no tandem dtype") != std::string::npos) return {"unsupported", m, "", r.ops};
    return {"fail", m, "", r.ops};
  } catch (const std::exception& e) {
    return {"fail", e.what(), "", r.ops};
  }
  if (got.size() != want.size()) return {"fail", str_cat(got.size(), " outputs, expected ", want.size()), "", r.ops};
  for (size_t i = 0; i < got.size(); ++i) {
    std::string why = compare_values(got[i], want[i]);
    if (!why.empty()) return {"fail", str_cat("output ", i, ": ", why), "", r.ops};
  }
  r.status = "pass";
  // Compiled mode takes and returns tensors: a model with sequence or optional graph
  // inputs or outputs runs eagerly only (forward_values).
  std::vector<Tensor> tin;
  for (const auto& v : inputs) {
    if (v.kind != Value::Kind::Tensor) break;
    tin.push_back(v.t);
  }
  bool tensors_only = tin.size() == inputs.size();
  for (const auto& v : got) tensors_only = tensors_only && v.kind == Value::Kind::Tensor;
  if (!tensors_only) {
    r.compiled = "eager fallback";
    r.detail = "sequence or optional graph inputs/outputs: eager only (forward_values)";
    return r;
  }
  // Compiled mode: the same outputs, bit for bit, where the program compiles.
  try {
    autograd::NoGradGuard ng;
    auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
    std::vector<Tensor> c1 = (*cm)(tin);
    std::vector<Tensor> c2 = (*cm)(tin);  // a replay of the cached program
    bool same = c1.size() == got.size() && c2.size() == got.size();
    for (size_t i = 0; same && i < got.size(); ++i)
      same = bitwise_equal(c1[i], got[i].t) && bitwise_equal(c2[i], got[i].t);
    if (!same) r.compiled = "differs";
    else if (cm->function().compiled_calls() == 0) r.compiled = "eager fallback";
    else r.compiled = "bitwise";
  } catch (const std::exception& e) {
    r.compiled = "error";
    r.detail = e.what();
  }
  return r;
}

std::string one_line(std::string s) {
  for (char& ch : s)
    if (ch == '\n' || ch == '|') ch = ' ';
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

}  // namespace

TEST(OnnxBackend, SuiteHasNoRegressions) {
  if (!fs::exists(kRoot)) GTEST_SKIP() << kRoot << " is missing (apt-get install libonnx-testdata)";
  std::set<std::string> expected;
  {
    std::ifstream f(std::string(TANDEM_ONNX_TEST_DIR) + "/expected_pass.txt");
    ASSERT_TRUE(f) << "tests/onnx/expected_pass.txt is missing";
    std::string line;
    while (std::getline(f, line))
      if (!line.empty() && line[0] != '#') expected.insert(line);
  }
  std::map<std::string, Result> results;
  for (const char* d : kDirs) {
    std::vector<fs::path> cases;
    for (const auto& e : fs::directory_iterator(fs::path(kRoot) / d))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
    std::sort(cases.begin(), cases.end());
    const char* only = std::getenv("TANDEM_ONNX_CASE");  // substrings, comma-separated: run the matching cases only
    for (const auto& c : cases) {
      std::string name = std::string(d) + "/" + c.filename().string();
      if (only) {
        bool match = false;
        std::stringstream ss(only);
        for (std::string part; std::getline(ss, part, ',');) match = match || name.find(part) != std::string::npos;
        if (!match) continue;
      }
      results[name] = run_case(c);
      if (only) std::printf("%s: %s %s %s\n", name.c_str(), results[name].status.c_str(),
                            results[name].compiled.c_str(), results[name].detail.c_str());
    }
  }
  // Counts per directory; regressions; new passes.
  std::map<std::string, std::map<std::string, int>> counts;
  std::map<std::string, int> compiled_counts;
  std::vector<std::string> regressions, new_passes, differs;
  for (const auto& [name, r] : results) {
    std::string dir = name.substr(0, name.find('/'));
    ++counts[dir][r.status];
    ++counts["all"][r.status];
    if (r.status == "pass") ++compiled_counts[r.compiled];
    if (expected.count(name) && r.status != "pass") regressions.push_back(name + ": " + r.status + ": " + r.detail);
    if (expected.count(name) && r.status == "pass" && r.compiled == "differs") differs.push_back(name);
    if (!expected.count(name) && r.status == "pass") new_passes.push_back(name);
  }
  for (const auto& name : expected)
    if (!results.count(name)) regressions.push_back(name + ": case not found");
  std::ostringstream rep;
  rep << "# ONNX backend test suite: tandem's results\n\n"
      << "Generated by tests/onnx/test_backend.cpp (libonnx-testdata 1.12; pass: same output count, dtype and "
         "shape, rtol 1e-3, atol 1e-7, NaN equals NaN). Compiled: outputs of tandem::compile under no_grad "
         "compared bitwise with eager.\n\n| directory | pass | fail | unsupported | total |\n|---|---|---|---|---|\n";
  for (auto& [dir, m] : counts)
    rep << "| " << dir << " | " << m["pass"] << " | " << m["fail"] << " | " << m["unsupported"] << " | "
        << (m["pass"] + m["fail"] + m["unsupported"]) << " |\n";
  rep << "\nCompiled mode on the passing cases:";
  for (auto& [k, v] : compiled_counts) rep << " " << k << " " << v << ";";
  rep << "\n\n| case | ops | result | compiled | detail |\n|---|---|---|---|---|\n";
  for (const auto& [name, r] : results) {
    std::string ops;
    for (const auto& o : r.ops) ops += (ops.empty() ? "" : " ") + o;
    rep << "| " << name << " | " << ops << " | " << r.status << " | " << r.compiled << " | " << one_line(r.detail)
        << " |\n";
  }
  const char* rp = std::getenv("TANDEM_ONNX_REPORT");
  // Default: beside the test binary (build/tests/), wherever it is run from.
  const fs::path def = fs::read_symlink("/proc/self/exe").parent_path() / "onnx_backend_report.md";
  std::ofstream(rp ? fs::path(rp) : def) << rep.str();
  if (const char* up = std::getenv("TANDEM_ONNX_UPDATE")) {
    std::ofstream f(up);
    f << "# ONNX backend cases expected to pass (tests/onnx/test_backend.cpp); regenerate with\n"
         "# TANDEM_ONNX_UPDATE=tests/onnx/expected_pass.txt build/tests/test_onnx --gtest_filter=OnnxBackend.*\n";
    for (const auto& [name, r] : results)
      if (r.status == "pass") f << name << "\n";
  }
  for (auto& [dir, m] : counts)
    std::printf("onnx backend %-18s pass %4d  fail %4d  unsupported %4d\n", dir.c_str(), m["pass"], m["fail"],
                m["unsupported"]);
  for (const auto& n : new_passes) std::printf("newly passing (add to expected_pass.txt): %s\n", n.c_str());
  for (const auto& n : regressions) ADD_FAILURE() << "regression: " << n;
  for (const auto& n : differs) ADD_FAILURE() << "compiled outputs differ from eager: " << n;
}
