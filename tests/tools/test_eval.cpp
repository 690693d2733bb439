// `tandem eval` and `tandem predict`: the numbers agree with training's own evaluation,
// eager and compiled print identical reports, predictions from an IDX file match those of
// the same images taken from the data set, and bad arguments are refused by name. Also the
// top-level program: --version, demo --help, unknown arguments refused.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "eval.h"
#include "support/cli.h"
#include "support/fashion_data.h"
#include "tandem/tandem.h"
#include "train.h"

namespace {

using namespace tandem;
namespace fs = std::filesystem;
using test::scratch;


/// One short training run shared by the tests: 1 epoch on 1024 examples, evaluated on 300.
const tools::TrainResult& trained() {
  static tools::TrainResult r = [] {
    tools::TrainConfig c = tools::parse_train_args({"--epochs", "1", "--train-limit", "1024", "--test-limit", "300",
                                                    "--batch-size", "64", "--progress", "none", "--out",
                                                    scratch().file("run")});
    std::ostringstream log;
    return tools::run_training(c, log);
  }();
  return r;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// The text after the first line (the header names the mode).
std::string body(const std::string& s) { return s.substr(s.find('\n') + 1); }

TEST(Eval, MatchesTrainingsEvaluationAndCompiledPrintsTheSame) {
  REQUIRE_DATA();
  const auto& run = trained();
  ASSERT_EQ(run.history.size(), 1u);
  tools::EvalConfig c = tools::parse_eval_args({"--checkpoint", run.checkpoint, "--test-limit", "300"});
  std::ostringstream eager_out, compiled_out;
  tools::EvalResult e = tools::run_eval(c, eager_out);
  EXPECT_EQ(e.model, "mlp");
  EXPECT_EQ(e.dataset, "fashion-mnist");
  EXPECT_EQ(e.examples, 300);
  // Same examples and weights as the training run's last evaluation (batch 1000 there too).
  EXPECT_EQ(e.accuracy, run.history[0].test_accuracy);
  EXPECT_NEAR(e.loss, run.history[0].test_loss, 1e-9);
  int64_t total = 0, diag = 0;
  for (size_t i = 0; i < e.confusion.size(); ++i)
    for (size_t j = 0; j < e.confusion.size(); ++j) {
      total += e.confusion[i][j];
      if (i == j) diag += e.confusion[i][j];
    }
  EXPECT_EQ(total, 300);
  EXPECT_EQ(static_cast<double>(diag) / 300.0, e.accuracy);
  const std::string text = eager_out.str();
  EXPECT_NE(text.find("test loss "), std::string::npos) << text;
  EXPECT_NE(text.find("per-class accuracy:"), std::string::npos) << text;
  EXPECT_NE(text.find("Ankle boot"), std::string::npos) << text;
  EXPECT_NE(text.find("confusion matrix (rows: true class, columns: predicted class):"), std::string::npos) << text;
  // The picture: beside the checkpoint, one cell per pair, the counts written in.
  EXPECT_EQ(e.svg, fs::path(run.checkpoint).parent_path() / "confusion.svg");
  const std::string svg = read_file(e.svg);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  size_t cells = 0;
  for (size_t p = svg.find("<rect x="); p != std::string::npos; p = svg.find("<rect x=", p + 1)) ++cells;
  EXPECT_EQ(cells, 100u);
  EXPECT_NE(svg.find(">" + std::to_string(e.confusion[0][0]) + "</text>"), std::string::npos);

  c.mode = "compiled";
  tools::EvalResult ec = tools::run_eval(c, compiled_out);
  EXPECT_NE(compiled_out.str().find("compiled mode"), std::string::npos) << compiled_out.str();
  EXPECT_EQ(body(eager_out.str()), body(compiled_out.str()));
  EXPECT_EQ(e.loss, ec.loss);
  EXPECT_EQ(e.confusion, ec.confusion);
}

// The CNN's compiled programs fuse conv + ReLU + pool: still the same numbers, printed.
TEST(Eval, CnnCompiledPrintsTheSameAsEager) {
  REQUIRE_DATA();
  std::ostringstream log;
  auto r = tools::run_training(
      tools::parse_train_args({"--model", "cnn", "--optimizer", "adam", "--epochs", "1", "--train-limit", "256",
                               "--test-limit", "100", "--progress", "none", "--out", scratch().file("cnn")}),
      log);
  tools::EvalConfig c = tools::parse_eval_args({"--checkpoint", r.checkpoint, "--test-limit", "300", "--batch-size", "128"});
  std::ostringstream eager_out, compiled_out;
  auto e = tools::run_eval(c, eager_out);
  EXPECT_EQ(e.model, "cnn");
  c.mode = "compiled";
  tools::run_eval(c, compiled_out);
  EXPECT_EQ(body(eager_out.str()), body(compiled_out.str()));
  std::ostringstream pe, pc;
  tools::PredictConfig p = tools::parse_predict_args({"--checkpoint", r.checkpoint, "--index", "0,1,2,3,4"});
  tools::run_predict(p, pe);
  p.mode = "compiled";
  tools::run_predict(p, pc);
  EXPECT_EQ(pe.str(), pc.str());
}

TEST(Eval, BadArgumentsAndFilesAreRefusedByName) {
  auto parse_error = [](std::vector<std::string> args) {
    try {
      tools::parse_eval_args(args);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(parse_error({}).find("--checkpoint PATH is required"), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--bogus"}).find("unknown argument \"--bogus\""), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "extra"}).find("unknown argument \"extra\""), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--mode", "jit"}).find("--mode got \"jit\""), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--batch-size", "99999999999999999999"}).find("too large"),
            std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint"}).find("--checkpoint needs a value"), std::string::npos);
  std::ostringstream out;
  tools::EvalConfig c;
  c.checkpoint = scratch().file("none.safetensors");
  try {
    tools::run_eval(c, out);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(c.checkpoint + ": no such file"), std::string::npos) << e.what();
  }
  // A checkpoint without tandem train's metadata must say which flag is missing.
  REQUIRE_DATA();
  manual_seed(0);
  auto m = nn::models::fashion_mlp();
  c.checkpoint = scratch().file("bare.safetensors");
  io::save_checkpoint(c.checkpoint, *m, nullptr, {});
  try {
    tools::run_eval(c, out);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("pass --model"), std::string::npos) << e.what();
  }
  c.model = "cnn";  // the wrong model: the loader names the file and the keys
  c.dataset = "fashion-mnist";
  try {
    tools::run_eval(c, out);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(c.checkpoint), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing keys"), std::string::npos) << e.what();
  }
  c.model = "mlp";
  c.test_limit = 50;
  EXPECT_EQ(tools::run_eval(c, out).examples, 50);
}

/// An IDX file (uint8, dims `sizes`) holding `bytes`.
void write_idx(const std::string& path, const std::vector<uint32_t>& sizes, const std::string& bytes, uint8_t type = 0x08) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(sizes.size())};
  for (uint32_t s : sizes)
    for (int k = 3; k >= 0; --k) h.push_back(static_cast<char>((s >> (8 * k)) & 0xff));
  test::write_bytes(path, h + bytes);
}

TEST(Predict, IndexAndIdxFileAgreeAndModesPrintTheSame) {
  REQUIRE_DATA();
  const auto& run = trained();
  std::ostringstream eager_out, compiled_out;
  tools::PredictConfig c = tools::parse_predict_args({"--checkpoint", run.checkpoint, "--index", "0,5,7"});
  auto p = tools::run_predict(c, eager_out);
  ASSERT_EQ(p.size(), 3u);
  data::datasets::FashionMNIST test_set(data::datasets::FashionMNIST::kDefaultRoot, false);
  const auto& names = data::datasets::FashionMNIST::classes();
  const int64_t idx[] = {0, 5, 7};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(p[i].source, "test[" + std::to_string(idx[i]) + "]");
    EXPECT_EQ(p[i].target, test_set.targets()[idx[i]].item<int64_t>());
    EXPECT_EQ(p[i].name, names[static_cast<size_t>(p[i].predicted)]);
    EXPECT_GT(p[i].probability, 0.1);
    EXPECT_LE(p[i].probability, 1.0);
    EXPECT_NE(eager_out.str().find(p[i].name + " (class " + std::to_string(p[i].predicted)), std::string::npos);
  }
  // 1024 training examples, 1 epoch: most of these three are right (a real model).
  EXPECT_GE((p[0].predicted == p[0].target) + (p[1].predicted == p[1].target) + (p[2].predicted == p[2].target), 2)
      << eager_out.str();
  c.mode = "compiled";
  auto pc = tools::run_predict(c, compiled_out);
  EXPECT_EQ(eager_out.str(), compiled_out.str());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(p[i].probability, pc[i].probability);

  // The same images as an IDX file (gzip not needed: read_idx reads both).
  const Tensor raw = test_set.images().contiguous();
  std::string bytes;
  for (int64_t i : idx) bytes.append(reinterpret_cast<const char*>(raw[i].contiguous().data_ptr<uint8_t>()), 784);
  const std::string file = scratch().file("three.idx");
  write_idx(file, {3, 28, 28}, bytes);
  tools::PredictConfig f = tools::parse_predict_args({"--checkpoint", run.checkpoint, "--images", file});
  std::ostringstream file_out;
  auto pf = tools::run_predict(f, file_out);
  ASSERT_EQ(pf.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(pf[i].source, file + "[" + std::to_string(i) + "]");
    EXPECT_EQ(pf[i].predicted, p[i].predicted);
    EXPECT_NEAR(pf[i].probability, p[i].probability, 1e-5);
    EXPECT_EQ(pf[i].target, -1);
  }
  // The data set's own gzip'd file (10000 images, predicted in batches of 1000).
  f.images = std::string(data::datasets::FashionMNIST::kDefaultRoot) + "/t10k-images-idx3-ubyte.gz";
  auto all = tools::run_predict(f, file_out);
  ASSERT_EQ(all.size(), 10000u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(all[static_cast<size_t>(idx[i])].predicted, p[i].predicted) << i;
  // One image [28, 28] is accepted too.
  write_idx(file, {28, 28}, bytes.substr(0, 784));
  f.images = file;
  EXPECT_EQ(tools::run_predict(f, file_out).size(), 1u);
}

TEST(Predict, BadInputsAreRefusedByName) {
  auto parse_error = [](std::vector<std::string> args) {
    try {
      tools::parse_predict_args(args);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(parse_error({"--checkpoint", "x"}).find("either --index LIST or --images FILE"), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "1", "--images", "f"}).find("either --index"),
            std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "1,a"}).find("--index got \"a\""), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "-1"}).find("--index got \"-1\""), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "1,"}).find("comma-separated"), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "1", "--index", ""}).find("comma-separated"), std::string::npos);
  EXPECT_NE(parse_error({"--index", "1"}).find("--checkpoint PATH is required"), std::string::npos);
  EXPECT_NE(parse_error({"--checkpoint", "x", "--index", "1", "-v"}).find("unknown argument \"-v\""), std::string::npos);
  REQUIRE_DATA();
  const auto& run = trained();
  std::ostringstream out;
  tools::PredictConfig c = tools::parse_predict_args({"--checkpoint", run.checkpoint, "--index", "3,10000"});
  try {
    tools::run_predict(c, out);
    ADD_FAILURE() << "no error";
  } catch (const IndexError& e) {
    EXPECT_NE(std::string(e.what()).find("--index 10000 is outside the test split's 10000 examples"), std::string::npos)
        << e.what();
  }
  // Images of another size or type: the file is named.
  const std::string file = scratch().file("bad.idx");
  write_idx(file, {2, 27, 27}, std::string(2 * 27 * 27, '\0'));
  c = tools::parse_predict_args({"--checkpoint", run.checkpoint, "--images", file});
  try {
    tools::run_predict(c, out);
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(file + ": expected uint8 images [N, 28, 28]"), std::string::npos) << e.what();
  }
  write_idx(file, {1, 28, 28}, std::string(784 * 4, '\0'), 0x0D);
  EXPECT_THROW(tools::run_predict(c, out), RuntimeError);
}

using tandem_test::cli;

TEST(Cli, VersionHelpAndUnknownArguments) {
  auto [rc, out] = cli("--version");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind("tandem ", 0), 0u) << out;
  EXPECT_NE(out.find('.'), std::string::npos) << out;
  std::tie(rc, out) = cli("demo --help");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind("usage: tandem demo", 0), 0u) << out;
  std::tie(rc, out) = cli("demo --fast");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown argument \"--fast\""), std::string::npos) << out;
  for (const char* cmd : {"train", "eval", "predict", "dump"}) {
    std::tie(rc, out) = cli(std::string(cmd) + " --no-such-flag");
    EXPECT_EQ(rc, 2) << cmd << ": " << out;
    EXPECT_NE(out.find("--no-such-flag"), std::string::npos) << cmd << ": " << out;
    std::tie(rc, out) = cli(std::string(cmd) + " --help");
    EXPECT_EQ(rc, 0) << cmd;
    EXPECT_EQ(out.rfind(std::string("usage: tandem ") + cmd, 0), 0u) << out;
  }
  std::tie(rc, out) = cli("--version extra");
  EXPECT_EQ(rc, 2);
  std::tie(rc, out) = cli("frobnicate");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("unknown command 'frobnicate'"), std::string::npos) << out;
  std::tie(rc, out) = cli("--help");
  EXPECT_NE(out.find("predict"), std::string::npos) << out;
}

TEST(Cli, DivergingTrainingExitsWithStatus1AndSaysWhy) {
  REQUIRE_DATA();
  const std::string dir = scratch().file("cli-diverge");
  auto [rc, out] = cli("train --lr 1e6 --epochs 2 --train-limit 512 --test-limit 100 --progress none --out " + dir);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("tandem train: stopped: the training loss is "), std::string::npos) << out;
  EXPECT_NE(out.find("summary: no epoch completed"), std::string::npos) << out;
}

}  // namespace
