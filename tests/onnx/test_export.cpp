// ONNX export: reference models and a conv/batch-norm/pool stack exported, checked by
// Debian's python3-onnx checker (an oracle, never used at run time), and imported back
// with tandem's importer: the outputs equal the original module's.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tandem/autograd/engine.h"
#include "tandem/nn/layers.h"
#include "tandem/nn/models.h"
#include "tandem/onnx/onnx.h"
#include "tandem/tandem.h"

namespace fs = std::filesystem;
using namespace tandem;

namespace {

// python3-onnx's checker (full_check: also shape inference) on `path`; 0 when valid.
// As the Python suite runs (python/CMakeLists.txt): no site (-S), so no machine-local .pth
// file runs, with only Debian's package directory on the path; bytecode caches in a
// directory of our own, so the interpreter compiles the packaged sources instead of opening
// the unpackaged .pyc files beside them (deps-check traces what tests open).
int onnx_checker(const std::string& path) {
  const fs::path cache = fs::temp_directory_path() / ("tandem_pycache_" + std::to_string(::getpid()));
  const std::string cmd = "env PYTHONPATH=/usr/lib/python3/dist-packages PYTHONPYCACHEPREFIX='" + cache.string() +
                          "' /usr/bin/python3 -S -c \"import onnx, sys; "
                          "onnx.checker.check_model(onnx.load(sys.argv[1]), full_check=True)\" '" + path + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::error_code ec;
  fs::remove_all(cache, ec);
  return rc;
}

void round_trip(const nn::ModulePtr& m, const Tensor& x, const std::string& name) {
  fs::path path = fs::temp_directory_path() / ("tandem_export_" + name + "_" + std::to_string(::getpid()) + ".onnx");
  m->eval();
  tandem::onnx::export_model(m, {x}, path.string());
  EXPECT_EQ(onnx_checker(path.string()), 0) << name;
  auto back = tandem::onnx::load_model(path.string());
  autograd::NoGradGuard ng;
  Tensor want = (*m)(x);
  Tensor got = (*back)(x);
  EXPECT_TRUE(allclose(got, want, 1e-5, 1e-6)) << name;
  // Parameters and floating buffers came back as float initializers, which the importer
  // makes parameters (running statistics included: ONNX does not tell them apart).
  size_t floats = m->parameters().size();
  for (const auto& b : m->buffers()) floats += b.is_floating_point() ? 1 : 0;
  EXPECT_EQ(back->parameters().size(), floats) << name;
  fs::remove(path);
}

}  // namespace

TEST(OnnxExport, ReferenceModelsRoundTrip) {
  manual_seed(3);
  round_trip(nn::models::fashion_mlp(), randn({4, 1, 28, 28}), "mlp");
  round_trip(nn::models::fashion_cnn(), randn({2, 1, 28, 28}), "cnn");
}

TEST(OnnxExport, ConvBatchNormPoolRoundTrip) {
  manual_seed(5);
  auto m = std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Conv2d>(3, 4, std::vector<int64_t>{3}), std::make_shared<nn::BatchNorm2d>(4), std::make_shared<nn::ReLU>(),
      std::make_shared<nn::AvgPool2d>(std::vector<int64_t>{2}), std::make_shared<nn::Flatten>(),
      std::make_shared<nn::Linear>(4 * 3 * 3, 5), std::make_shared<nn::LogSoftmax>(1)});
  // Non-trivial running statistics: a few training-mode calls.
  for (int i = 0; i < 3; ++i) (*m)(randn({8, 3, 8, 8}));
  round_trip(m, randn({2, 3, 8, 8}), "conv_bn_pool");
}

TEST(OnnxExport, UnmappedOpsRaiseNamingTheOp) {
  struct Cumsum : nn::Module {
    Tensor forward(const Tensor& x) override { return cumsum(x, 0); }
  };
  auto m = std::make_shared<Cumsum>();
  try {
    tandem::onnx::export_model(m, {ones({3})}, (fs::temp_directory_path() / "never.onnx").string());
    FAIL() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("'cumsum'"), std::string::npos) << e.what();
  }
}
