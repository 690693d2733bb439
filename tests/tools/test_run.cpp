// `tandem run`: an ONNX model from the backend test data run on .pb and .npy inputs,
// eagerly and compiled, with the outputs written back and compared; the .npy reader on
// valid and hostile files.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "run.h"
#include "support/cli.h"
#include "tandem/onnx/onnx.h"
#include "tandem/tandem.h"

namespace fs = std::filesystem;
using namespace tandem;

namespace {

using tandem_test::cli;

// A version-1 .npy file: magic, header dict padded with spaces to a multiple of 16, data.
std::string npy_bytes(const std::string& descr, const std::string& shape, const std::string& data,
                      const std::string& fortran = "False") {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 16 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

fs::path write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

const fs::path kCase = "/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d";

}  // namespace

TEST(RunCommand, RunsAnOnnxModelEagerAndCompiled) {
  if (!fs::exists(kCase)) GTEST_SKIP() << "libonnx-testdata is not installed";
  fs::path dir = fs::temp_directory_path() / ("tandem_run_" + std::to_string(::getpid()));
  fs::create_directories(dir / "eager");
  fs::create_directories(dir / "compiled");
  const std::string model = (kCase / "model.onnx").string();
  const std::string in = (kCase / "test_data_set_0" / "input_0.pb").string();
  auto [rc, out] = cli("run " + model + " --input " + in + " --output-dir " + (dir / "eager").string());
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("output 0 '3': float32 [2, 4, 5, 4]"), std::string::npos) << out;
  auto [rc2, out2] = cli("run " + model + " --input " + in + " --mode compiled --profile --trace " +
                         (dir / "trace.json").string() + " --output-dir " + (dir / "compiled").string());
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("conv2d"), std::string::npos) << out2;  // the per-node profile
  EXPECT_TRUE(fs::exists(dir / "trace.json"));
  Tensor eager = onnx::load_tensor((dir / "eager" / "output_0.pb").string());
  Tensor compiled = onnx::load_tensor((dir / "compiled" / "output_0.pb").string());
  Tensor want = onnx::load_tensor((kCase / "test_data_set_0" / "output_0.pb").string());
  EXPECT_TRUE(equal(eager, compiled));
  EXPECT_TRUE(allclose(eager, want, 1e-3, 1e-6));
  // The same input as .npy.
  Tensor x = onnx::load_tensor(in).contiguous();
  std::string shape = "(";
  for (int64_t s : x.sizes()) shape += std::to_string(s) + ", ";
  shape += ")";
  fs::path npy = write_file(dir / "x.npy", npy_bytes("<f4", shape, std::string(static_cast<const char*>(x.data_ptr()), x.nbytes())));
  auto [rc3, out3] = cli("run " + model + " --input " + npy.string() + " --output-dir " + dir.string());
  ASSERT_EQ(rc3, 0) << out3;
  EXPECT_TRUE(equal(onnx::load_tensor((dir / "output_0.pb").string()), eager));
  // Usage errors: exit status 2; a bad model path: 1, naming it.
  EXPECT_EQ(cli("run " + model + " --mode fast").first, 2);
  EXPECT_EQ(cli("run").first, 2);
  auto [rc4, out4] = cli("run " + (dir / "missing.onnx").string());
  EXPECT_EQ(rc4, 1);
  EXPECT_NE(out4.find("missing.onnx"), std::string::npos) << out4;
  auto [rc5, out5] = cli("run " + model);  // no input given
  EXPECT_EQ(rc5, 1);
  EXPECT_NE(out5.find("got 0 inputs, expected 1"), std::string::npos) << out5;
  fs::remove_all(dir);
}

TEST(RunCommand, NpyReaderChecksEveryField) {
  fs::path dir = fs::temp_directory_path() / ("tandem_npy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string i64(16, '\0');
  i64[0] = 7;
  i64[8] = static_cast<char>(0xfe);
  for (int k = 9; k < 16; ++k) i64[k] = static_cast<char>(0xff);
  Tensor t = tools::load_npy(write_file(dir / "ok.npy", npy_bytes("<i8", "(2,)", i64)).string());
  EXPECT_TRUE(equal(t, tensor({int64_t{7}, int64_t{-2}})));
  Tensor s = tools::load_npy(write_file(dir / "scalar.npy", npy_bytes("<f8", "()", std::string(8, '\0'))).string());
  EXPECT_EQ(s.dim(), 0);
  auto error_of = [&](const std::string& name, const std::string& bytes) -> std::string {
    try {
      tools::load_npy(write_file(dir / name, bytes).string());
    } catch (const RuntimeError& e) {
      return e.what();
    }
    return "NO ERROR";
  };
  auto has = [](const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; };
  EXPECT_TRUE(has(error_of("magic.npy", "NOTNUMPYATALL"), "bad magic"));
  EXPECT_TRUE(has(error_of("short.npy", npy_bytes("<i8", "(3,)", i64)), "shape needs 24 data bytes, the file holds 16"));
  EXPECT_TRUE(has(error_of("fortran.npy", npy_bytes("<i8", "(2,)", i64, "True")), "Fortran"));
  EXPECT_TRUE(has(error_of("dtype.npy", npy_bytes(">i8", "(2,)", i64)), "dtype"));
  EXPECT_TRUE(has(error_of("shape.npy", npy_bytes("<i8", "(-2,)", i64)), "not a non-negative integer"));
  EXPECT_TRUE(has(error_of("huge.npy", npy_bytes("<i8", "(1000000000, 1000000000)", i64)), "more than 2^40"));
  std::string cut = npy_bytes("<i8", "(2,)", i64).substr(0, 9);
  EXPECT_TRUE(has(error_of("cut.npy", cut), "cut.npy"));
  EXPECT_TRUE(has(error_of("trunc_header.npy", npy_bytes("<i8", "(2,)", i64).substr(0, 30)), "header length"));
  fs::remove_all(dir);
}

TEST(RunCommand, ExportThenRun) {
  fs::path dir = fs::temp_directory_path() / ("tandem_export_cli_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string model = (dir / "cnn.onnx").string();
  auto [rc, out] = cli("export --model cnn --batch 2 --out " + model);
  ASSERT_EQ(rc, 0) << out;
  std::string zeros8(2 * 28 * 28 * 4, '\0');
  fs::path x = write_file(dir / "x.npy", npy_bytes("<f4", "(2, 1, 28, 28)", zeros8));
  auto [rc2, out2] = cli("run " + model + " --input " + x.string() + " --mode compiled");
  ASSERT_EQ(rc2, 0) << out2;
  EXPECT_NE(out2.find("output 0 'output_0': float32 [2, 10]"), std::string::npos) << out2;
  EXPECT_EQ(cli("export --model resnet --out " + model).first, 2);
  EXPECT_EQ(cli("export --model mlp").first, 2);
  fs::remove_all(dir);
}
