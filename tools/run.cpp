#include "run.h"

#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tandem/autograd/engine.h"
#include "tandem/dispatch/profiler.h"
#include "tandem/core/generator.h"
#include "tandem/io/checkpoint.h"
#include "tandem/io/file_util.h"
#include "tandem/nn/compiled.h"
#include "tandem/nn/models.h"
#include "tandem/onnx/onnx.h"
#include "tandem/ops/creation.h"
#include "tandem/runtime/executor.h"

namespace tandem::tools {

std::string run_usage() {
  return "usage: tandem run MODEL.onnx [--input FILE]... [--mode eager|compiled] [--profile]\n"
         "                  [--trace PATH] [--output-dir DIR]\n\n"
         "Runs an ONNX model (opsets 1-17 of the default domain; `tandem run --ops` lists the ops)\n"
         "on its inputs, bound by position to the graph inputs that are not initializers, and\n"
         "prints each output (name, dtype, shape, values).\n\n"
         "  --input FILE      a serialized TensorProto (.pb, as the ONNX test data) or a NumPy\n"
         "                    .npy file; repeat once per input, in order\n"
         "  --mode MODE       eager (default) or compiled (tandem::compile; outputs are the same)\n"
         "  --profile         print per-op times (eager) or per-node times of the program (compiled)\n"
         "  --trace PATH      with --mode compiled --profile: write a Chrome trace (Perfetto) JSON\n"
         "  --output-dir DIR  also write output_N.pb (TensorProto) files there\n"
         "  --ops             print the ONNX ops tandem converts and exit\n"
         "  --help            this text\n";
}

namespace {

[[noreturn]] void npy_error(const std::string& path, const std::string& what) {
  throw RuntimeError("[tandem run] " + path + ": not a valid .npy file: " + what);
}

// The value of `key` in the .npy header dict (a Python literal), as text.
std::string npy_field(const std::string& header, const std::string& key, const std::string& path) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos) npy_error(path, "header has no '" + key + "'");
  size_t colon = header.find(':', k);
  if (colon == std::string::npos) npy_error(path, "header field '" + key + "' has no value");
  size_t start = header.find_first_not_of(' ', colon + 1);
  if (start == std::string::npos) npy_error(path, "header field '" + key + "' has no value");
  char open = header[start];
  size_t end;
  if (open == '\'') end = header.find('\'', start + 1) + 1;
  else if (open == '(') end = header.find(')', start) + 1;
  else end = header.find_first_of(",}", start);
  if (end == std::string::npos || end == 0 || end <= start) npy_error(path, "header field '" + key + "' is malformed");
  return header.substr(start, end - start);
}

}  // namespace

Tensor load_npy(const std::string& path) {
  io::FileReader f(path, "tandem run");
  if (f.size() < 10) npy_error(path, "shorter than the 10-byte preamble");
  unsigned char pre[12] = {};
  f.read_at(pre, 8, 0);
  if (std::memcmp(pre, "\x93NUMPY", 6) != 0) npy_error(path, "bad magic (expected \\x93NUMPY)");
  const int major = pre[6];
  uint64_t hlen = 0, hstart = 0;
  if (major == 1) {
    f.read_at(pre + 8, 2, 8);
    hlen = pre[8] | (uint64_t(pre[9]) << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (f.size() < 12) npy_error(path, "shorter than the 12-byte preamble");
    f.read_at(pre + 8, 4, 8);
    hlen = pre[8] | (uint64_t(pre[9]) << 8) | (uint64_t(pre[10]) << 16) | (uint64_t(pre[11]) << 24);
    hstart = 12;
  } else {
    npy_error(path, "format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  }
  if (hlen > 65536 || hstart + hlen > f.size()) npy_error(path, "header length " + std::to_string(hlen) + " is out of range");
  std::string header(hlen, '\0');
  f.read_at(header.data(), hlen, hstart);
  std::string descr = npy_field(header, "descr", path);
  std::string fortran = npy_field(header, "fortran_order", path);
  std::string shape_s = npy_field(header, "shape", path);
  if (fortran != "False") npy_error(path, "Fortran-order arrays are not supported");
  struct D {
    const char* code;
    DType dtype;
  };
  static const D kTypes[] = {{"'<f4'", DType::Float32}, {"'<f8'", DType::Float64}, {"'<f2'", DType::Float16},
                             {"'<i8'", DType::Int64},   {"'<i4'", DType::Int32},   {"'<i2'", DType::Int16},
                             {"'|i1'", DType::Int8},    {"'|u1'", DType::UInt8},   {"'|b1'", DType::Bool}};
  std::optional<DType> dt;
  for (const auto& d : kTypes)
    if (descr == d.code) dt = d.dtype;
  if (!dt) npy_error(path, "dtype " + descr.substr(0, 20) + " is not supported (expected <f4 <f8 <f2 <i8 <i4 <i2 |i1 |u1 |b1)");
  if (shape_s.size() < 2 || shape_s.front() != '(' || shape_s.back() != ')') npy_error(path, "shape is not a tuple");
  std::vector<int64_t> shape;
  std::stringstream ss(shape_s.substr(1, shape_s.size() - 2));
  int64_t numel = 1;
  for (std::string part; std::getline(ss, part, ',');) {
    size_t a = part.find_first_not_of(' ');
    if (a == std::string::npos) continue;
    part = part.substr(a, part.find_last_not_of(' ') - a + 1);
    if (part.empty() || part.size() > 15 || part.find_first_not_of("0123456789") != std::string::npos)
      npy_error(path, "shape entry '" + part.substr(0, 20) + "' is not a non-negative integer");
    int64_t d = std::stoll(part);
    if (d != 0 && numel > (int64_t{1} << 40) / d) npy_error(path, "shape describes more than 2^40 elements");
    numel *= d;
    shape.push_back(d);
  }
  const uint64_t data_start = hstart + hlen;
  const uint64_t nbytes = uint64_t(numel) * uint64_t(element_size(*dt));
  if (f.size() - data_start != nbytes)
    npy_error(path, "shape needs " + std::to_string(nbytes) + " data bytes, the file holds " +
                        std::to_string(f.size() - data_start));
  Tensor t = empty(shape, *dt);
  if (nbytes) f.read_at(t.data_ptr(), nbytes, data_start);
  if (*dt == DType::Bool) {
    auto* b = static_cast<uint8_t*>(t.data_ptr());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
  }
  return t;
}

int run_main(const std::vector<std::string>& args) {
  std::string model_path, mode = "eager", trace, out_dir;
  std::vector<std::string> inputs;
  bool profile = false;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << run_usage();
        return 0;
      }
      if (a == "--ops") {
        for (const auto& op : onnx::supported_ops()) std::cout << op << "\n";
        return 0;
      }
      if (a == "--profile") {
        profile = true;
        continue;
      }
      if (a == "--input" || a == "--mode" || a == "--trace" || a == "--output-dir") {
        TANDEM_CHECK(i + 1 < args.size(), ValueError, "tandem run", a, " needs a value");
        const std::string& v = args[++i];
        if (a == "--input") inputs.push_back(v);
        else if (a == "--mode") mode = v;
        else if (a == "--trace") trace = v;
        else out_dir = v;
        continue;
      }
      TANDEM_CHECK(a.rfind("--", 0) != 0, ValueError, "tandem run", "unknown flag \"", a, "\" (see tandem run --help)");
      TANDEM_CHECK(model_path.empty(), ValueError, "tandem run", "one model expected, got \"", model_path, "\" and \"", a,
                   "\"");
      model_path = a;
    }
    TANDEM_CHECK(!model_path.empty(), ValueError, "tandem run", "no model given (see tandem run --help)");
    TANDEM_CHECK(mode == "eager" || mode == "compiled", ValueError, "tandem run", "--mode got \"", mode,
                 "\", expected eager or compiled");
    TANDEM_CHECK(trace.empty() || (profile && mode == "compiled"), ValueError, "tandem run",
                 "--trace needs --mode compiled --profile");
  } catch (const ValueError& e) {
    std::cerr << "tandem run: " << e.what() << "\n";
    return 2;
  }
  auto model = onnx::load_model(model_path);
  model->eval();
  std::vector<Tensor> xs;
  for (const auto& p : inputs) {
    bool npy = p.size() >= 4 && p.compare(p.size() - 4, 4, ".npy") == 0;
    xs.push_back(npy ? load_npy(p) : onnx::load_tensor(p));
  }
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> outs;
  if (mode == "eager") {
    std::unique_ptr<profiler::Profiler> prof;
    if (profile) prof = std::make_unique<profiler::Profiler>();
    outs = model->forward_list(xs);
    if (prof) {
      prof->stop();
      std::cout << "profile (eager, per op):\n" << prof->table() << "\n";
    }
  } else {
    jit::CompileOptions opts;
    opts.profile = profile;
    auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model), opts);
    (*cm)(xs);         // the first call captures the program
    outs = (*cm)(xs);  // the second one runs it
    if (cm->function().compiled_calls() == 0) {
      std::cout << "note: the model did not compile (graph break); it ran eagerly\n";
    } else if (profile) {
      runtime::Executor* ex = cm->last_executor();
      std::cout << "profile (compiled program, per node):\n" << ex->profile_table() << "\n";
      if (!trace.empty()) {
        const std::string json = ex->chrome_trace();
        io::atomic_write(trace, "tandem run", [&](io::FileWriter& w) { w.write(json.data(), json.size()); });
        std::cout << "trace: " << trace << "\n";
      }
    }
  }
  const auto& names = model->output_names();
  for (size_t i = 0; i < outs.size(); ++i) {
    std::cout << "output " << i << " '" << names[i] << "': " << dtype_name(outs[i].dtype()) << " " << outs[i].sizes()
              << "\n"
              << outs[i] << "\n";
    if (!out_dir.empty()) onnx::save_tensor(out_dir + "/output_" + std::to_string(i) + ".pb", outs[i], names[i]);
  }
  return 0;
}

std::string export_usage() {
  return "usage: tandem export --model mlp|cnn [--checkpoint PATH] --out FILE.onnx [--batch N]\n\n"
         "Writes a reference model of `tandem train` as an ONNX model (opset 13): parameters as\n"
         "initializers, input 'input_0' float32 [N, 1, 28, 28] (N = --batch, default 1), output\n"
         "'output_0' (the logits). Without --checkpoint the weights are the seed-0 initial ones.\n"
         "`tandem run FILE.onnx --input x.pb` runs it back.\n\n"
         "  --help   this text\n";
}

int export_main(const std::vector<std::string>& args) {
  std::string model = "mlp", checkpoint, out;
  int64_t batch = 1;
  try {
    for (size_t i = 0; i < args.size(); ++i) {
      const std::string& a = args[i];
      if (a == "--help" || a == "-h") {
        std::cout << export_usage();
        return 0;
      }
      TANDEM_CHECK(a == "--model" || a == "--checkpoint" || a == "--out" || a == "--batch", ValueError, "tandem export",
                   "unknown flag \"", a, "\" (see tandem export --help)");
      TANDEM_CHECK(i + 1 < args.size(), ValueError, "tandem export", a, " needs a value");
      const std::string& v = args[++i];
      if (a == "--model") model = v;
      else if (a == "--checkpoint") checkpoint = v;
      else if (a == "--out") out = v;
      else {
        TANDEM_CHECK(!v.empty() && v.size() < 7 && v.find_first_not_of("0123456789") == std::string::npos && std::stoll(v) > 0,
                     ValueError, "tandem export", "--batch got \"", v.substr(0, 20), "\", expected an integer in [1, 999999]");
        batch = std::stoll(v);
      }
    }
    TANDEM_CHECK(model == "mlp" || model == "cnn", ValueError, "tandem export", "--model got \"", model.substr(0, 40),
                 "\", expected mlp or cnn");
    TANDEM_CHECK(!out.empty(), ValueError, "tandem export", "--out FILE.onnx is required");
  } catch (const ValueError& e) {
    std::cerr << "tandem export: " << e.what() << "\n";
    return 2;
  }
  manual_seed(0);
  std::shared_ptr<nn::Module> m = model == "mlp" ? std::static_pointer_cast<nn::Module>(nn::models::fashion_mlp())
                                                 : std::static_pointer_cast<nn::Module>(nn::models::fashion_cnn());
  if (!checkpoint.empty()) io::load_checkpoint(checkpoint, *m, nullptr);
  onnx::export_model(m, {zeros({batch, 1, 28, 28})}, out);
  std::cout << "wrote " << out << " (" << model << ", input [" << batch << ", 1, 28, 28])\n";
  return 0;
}

}  // namespace tandem::tools
