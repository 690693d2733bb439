// ONNX import benchmark (issue 18): the models of Debian's ONNX backend test suite
// (libonnx-testdata 1.12, /usr/share/libonnx-testdata/data) through tandem's importer, 2
// threads, inference under no_grad.
//  - The largest model of the suite (model.onnx plus its first input set, in bytes, over
//    node/, pytorch-converted/, pytorch-operator/ and simple/): the time to load it and run it
//    the first time, cold (the first load in the process) and warm (median of 5 more).
//  - Every pytorch-converted model (one PyTorch module each, exported by PyTorch): load and
//    first-run times, then the median time per call eagerly and through
//    tandem::compile(model) (after its first, capturing call), and whether the compiled
//    outputs equal the eager ones bitwise ("compiled"), the call ran eagerly
//    ("eager fallback") or the case does not import ("unsupported: why").
//
// Usage: bench_onnx [--data DIR] [--seconds S]   (S: time per measurement, default 0.2)
// Output (stdout, read by bench/report.py onnx): a header line, then one TSV line per case:
//   case, bytes, load_ms, first_ms, eager_us, compile_ms, compiled_us, status
// where the largest model's line is named "largest:<dir>/<case>" and its load_ms/first_ms
// are the cold figures, eager_us/compiled_us the warm load + first-run time in us.
// Progress on stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "tandem/onnx/onnx.h"
#include "tandem/tandem.h"

namespace fs = std::filesystem;
using namespace tandem;

namespace {

using clk = std::chrono::steady_clock;

double seconds_since(clk::time_point t0) { return std::chrono::duration<double>(clk::now() - t0).count(); }

// The first input set of a case (test_data_set_0/input_N.pb in order).
std::vector<Tensor> load_inputs(const fs::path& dir) {
  std::vector<Tensor> ts;
  for (int i = 0;; ++i) {
    fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    ts.push_back(tandem::onnx::load_tensor(p.string()));
  }
  return ts;
}

int64_t case_bytes(const fs::path& dir) {
  int64_t b = static_cast<int64_t>(fs::file_size(dir / "model.onnx"));
  for (int i = 0;; ++i) {
    fs::path p = dir / "test_data_set_0" / ("input_" + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    b += static_cast<int64_t>(fs::file_size(p));
  }
  return b;
}

// Median over 5 repetitions of the mean time per call of f (us), each repetition calling f
// for about `budget` seconds (at least 3 calls).
template <typename F>
double median_us(F f, double budget) {
  std::vector<double> reps;
  for (int r = 0; r < 5; ++r) {
    int calls = 0;
    auto t0 = clk::now();
    double s = 0;
    do {
      f();
      ++calls;
      s = seconds_since(t0);
    } while (calls < 3 || s < budget / 5);
    reps.push_back(1e6 * s / calls);
  }
  std::sort(reps.begin(), reps.end());
  return reps[2];
}

bool bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].dtype() != b[i].dtype() || !a[i].sizes().equals(b[i].sizes())) return false;
    Tensor x = a[i].contiguous(), y = b[i].contiguous();
    if (std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.numel()) * element_size(x.dtype())) != 0)
      return false;
  }
  return true;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\t', ' ');
  if (s.size() > 240) s = s.substr(0, 237) + "...";
  return s;
}

// Load + first eager run of the model in `dir`; returns seconds.
double load_and_run(const fs::path& dir) {
  auto t0 = clk::now();
  auto model = tandem::onnx::load_model((dir / "model.onnx").string());
  model->eval();
  auto inputs = load_inputs(dir);
  autograd::NoGradGuard ng;
  auto out = model->forward_list(inputs);
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  fs::path root = "/usr/share/libonnx-testdata/data";
  double budget = 0.2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) {
      root = argv[++i];
    } else if (a == "--seconds" && i + 1 < argc) {
      budget = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_onnx [--data DIR] [--seconds S]\n");
      return 2;
    }
  }
  if (!fs::is_directory(root / "pytorch-converted")) {
    std::fprintf(stderr, "bench_onnx: no %s (apt-get install libonnx-testdata)\n", (root / "pytorch-converted").c_str());
    return 1;
  }
  std::printf("case\tbytes\tload_ms\tfirst_ms\teager_us\tcompile_ms\tcompiled_us\tstatus\n");

  // The largest model of the suite, by bytes of the model and its first input set.
  fs::path largest;
  int64_t largest_bytes = -1;
  for (const char* d : {"node", "pytorch-converted", "pytorch-operator", "simple"}) {
    if (!fs::is_directory(root / d)) continue;
    for (const auto& e : fs::directory_iterator(root / d)) {
      if (!fs::exists(e.path() / "model.onnx")) continue;
      const int64_t b = case_bytes(e.path());
      if (b > largest_bytes) largest_bytes = b, largest = e.path();
    }
  }
  if (!largest.empty()) {
    const std::string name = largest.parent_path().filename().string() + "/" + largest.filename().string();
    std::fprintf(stderr, "bench_onnx: largest model %s (%lld bytes)\n", name.c_str(), static_cast<long long>(largest_bytes));
    try {
      // Cold: the first load in this process (protobuf's descriptors, tandem's op tables).
      auto t0 = clk::now();
      auto model = tandem::onnx::load_model((largest / "model.onnx").string());
      model->eval();
      auto inputs = load_inputs(largest);
      const double load_s = seconds_since(t0);
      t0 = clk::now();
      {
        autograd::NoGradGuard ng;
        model->forward_list(inputs);
      }
      const double first_s = seconds_since(t0);
      std::vector<double> warm;
      for (int r = 0; r < 5; ++r) warm.push_back(load_and_run(largest));
      std::sort(warm.begin(), warm.end());
      std::printf("largest:%s\t%lld\t%.3f\t%.3f\t%.1f\t-\t-\twarm load + first run\n", name.c_str(),
                  static_cast<long long>(largest_bytes), 1e3 * load_s, 1e3 * first_s, 1e6 * warm[2]);
    } catch (const std::exception& e) {
      std::printf("largest:%s\t%lld\t-\t-\t-\t-\t-\tunsupported: %s\n", name.c_str(),
                  static_cast<long long>(largest_bytes), one_line(e.what()).c_str());
    }
  }

  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root / "pytorch-converted"))
    if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  for (const auto& dir : cases) {
    const std::string name = dir.filename().string();
    std::fprintf(stderr, "bench_onnx: %s\n", name.c_str());
    const long long bytes = static_cast<long long>(case_bytes(dir));
    try {
      auto t0 = clk::now();
      auto model = tandem::onnx::load_model((dir / "model.onnx").string());
      model->eval();
      const double load_s = seconds_since(t0);
      auto inputs = load_inputs(dir);
      autograd::NoGradGuard ng;
      t0 = clk::now();
      std::vector<Tensor> want = model->forward_list(inputs);
      const double first_s = seconds_since(t0);
      const double eager = median_us([&] { model->forward_list(inputs); }, budget);
      auto cm = tandem::compile(std::static_pointer_cast<nn::Module>(model));
      t0 = clk::now();
      std::vector<Tensor> got = (*cm)(inputs);
      const double compile_s = seconds_since(t0);
      const double compiled = median_us([&] { (*cm)(inputs); }, budget);
      const bool same = bitwise_equal(want, got) && bitwise_equal(want, (*cm)(inputs));
      const char* status = !same ? "DIFFERENT" : cm->function().compiled_calls() == 0 ? "eager fallback" : "compiled";
      std::printf("%s\t%lld\t%.3f\t%.3f\t%.2f\t%.3f\t%.2f\t%s\n", name.c_str(), bytes, 1e3 * load_s, 1e3 * first_s, eager,
                  1e3 * compile_s, compiled, status);
    } catch (const std::exception& e) {
      std::printf("%s\t%lld\t-\t-\t-\t-\t-\tunsupported: %s\n", name.c_str(), bytes, one_line(e.what()).c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
