// `tandem train`: flag parsing, reproducibility, resume == uninterrupted, outputs, error
// messages, Ctrl-C safety, and a short end-to-end run that must learn.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/bitwise.h"
#include "support/fashion_data.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"
#include "train.h"

namespace {

using namespace tandem;
using tools::TrainConfig;
namespace fs = std::filesystem;
using test::scratch;

std::string tmpdir(const std::string& name) { return scratch().file(name); }

TrainConfig small_config(const std::string& out, int64_t epochs) {
  TrainConfig c = tools::parse_train_args({"--epochs", std::to_string(epochs), "--train-limit", "1536", "--test-limit",
                                           "500", "--batch-size", "64", "--progress", "none", "--out", out});
  return c;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(TrainArgs, DefaultsFollowTheIssueRecipe) {
  TrainConfig c = tools::parse_train_args({});
  EXPECT_EQ(c.model, "mlp");
  EXPECT_EQ(c.optimizer, "sgd");
  EXPECT_DOUBLE_EQ(c.lr, 0.05);
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
  EXPECT_EQ(c.batch_size, 128);
  // Without --out each run gets a new runs/N (chosen when it starts), the checkpoint in it.
  EXPECT_EQ(c.out, "");
  EXPECT_EQ(c.checkpoint, "");
  EXPECT_EQ(c.lr_schedule, "none");
  EXPECT_EQ(c.on_nonfinite, "stop");
  TrainConfig a = tools::parse_train_args({"--optimizer=adamw", "--model", "cnn", "--out", "x"});
  EXPECT_DOUBLE_EQ(a.lr, 1e-3);
  EXPECT_DOUBLE_EQ(a.weight_decay, 0.01);
  EXPECT_EQ(a.model, "cnn");
  EXPECT_EQ(a.checkpoint, "x/checkpoint.safetensors");
}

TEST(TrainArgs, BadFlagsNameTheFlag) {
  auto expect_error = [](std::vector<std::string> args, const std::string& needle) {
    try {
      tools::parse_train_args(args);
      ADD_FAILURE() << "no error for " << args[0];
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({"--epoch", "3"}, "unknown flag \"--epoch\"");
  expect_error({"--epochs"}, "--epochs needs a value");
  expect_error({"--epochs", "0"}, "--epochs got \"0\"");
  expect_error({"--lr", "fast"}, "--lr got \"fast\"");
  expect_error({"--lr", "nan"}, "--lr got \"nan\"");
  expect_error({"--lr", "-1e-3"}, "--lr got");
  expect_error({"--model", "resnet"}, "expected one of mlp | cnn");
  expect_error({"--batch-size", "12x"}, "--batch-size got \"12x\"");
  expect_error({"--resume=yes"}, "--resume takes no value");
  expect_error({"--dataset", "mnist"}, "--dataset mnist needs --data");
  expect_error({"--lr-schedule", "linear"}, "--lr-schedule got \"linear\", expected one of none | step | cosine | onecycle");
  expect_error({"--lr-step-size", "0"}, "--lr-step-size got \"0\"");
  expect_error({"--lr-pct-start", "1"}, "--lr-pct-start got \"1\"");
  expect_error({"--on-nonfinite", "ignore"}, "--on-nonfinite got \"ignore\"");
  expect_error({"--out", ""}, "--out got an empty path");
  expect_error({"stray"}, "unknown flag \"stray\"");
  // --threads beyond set_num_threads' range: 2^32 + 1 was silently cut to 1 thread,
  // 2^31 silently ignored, and 100000 crashed in OpenMP.
  expect_error({"--threads", "4294967297"}, "--threads got \"4294967297\", which is too large; expected an integer in [1, 4096]");
  expect_error({"--threads", "2147483648"}, "--threads got \"2147483648\"");
  expect_error({"--threads", "100000"}, "--threads got \"100000\"");
  EXPECT_EQ(tools::parse_train_args({"--threads", "4096"}).threads, 4096);
  EXPECT_NE(tools::train_usage().find("--weight-decay"), std::string::npos);
}

TEST(Train, MissingDataNamesDirectoryAndPackage) {
  TrainConfig c = small_config(tmpdir("missing"), 1);
  c.data_dir = "/nonexistent/fashion";
  std::ostringstream out;
  try {
    tools::run_training(c, out);
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/fashion does not exist"), std::string::npos) << e.what();
    // --data names the user's own directory: no hint to install the Debian package.
    EXPECT_EQ(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

TEST(Train, CorruptDataGivesTheReadersError) {
  REQUIRE_DATA();
  // A copy of the dataset whose training images are cut in half.
  const std::string dir = tmpdir("corrupt");
  fs::create_directories(dir);
  const std::string root = data::datasets::FashionMNIST::kDefaultRoot;
  for (const char* f : {"train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    fs::copy_file(root + "/" + f, dir + "/" + f);
  const std::string images = test::read_bytes(root + "/train-images-idx3-ubyte.gz");
  test::write_bytes(dir + "/train-images-idx3-ubyte.gz", images.substr(0, images.size() / 2));
  TrainConfig c = small_config(tmpdir("corrupt-out"), 1);
  c.data_dir = dir;
  std::ostringstream out;
  try {
    tools::run_training(c, out);
    FAIL() << "trained on a truncated file";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("train-images-idx3-ubyte.gz"), std::string::npos) << e.what();
  }
}

TEST(Train, LearnsAndWritesOutputs) {
  REQUIRE_DATA();
  const std::string out = tmpdir("learn");
  TrainConfig c = small_config(out, 2);
  std::ostringstream log;
  tools::TrainResult r = tools::run_training(c, log);
  ASSERT_EQ(r.history.size(), 2u);
  // 1,536 examples, 2 epochs: chance is 10% and loss ln(10) = 2.30.
  EXPECT_LT(r.history[1].train_loss, 1.0) << log.str();
  EXPECT_GT(r.history[1].test_accuracy, 0.65) << log.str();
  EXPECT_LT(r.history[1].train_loss, r.history[0].train_loss);
  const std::string csv = read_file(r.metrics_csv);
  EXPECT_EQ(csv.rfind("epoch,train_loss,test_loss,test_accuracy,lr,seconds,samples_per_second\n1,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n2,"), std::string::npos);
  const std::string svg = read_file(r.curves_svg);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '\n') > 10, true);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  // The checkpoint holds the model and the optimizer's momentum buffers.
  io::Checkpoint ck = io::read_checkpoint(r.checkpoint);
  EXPECT_EQ(ck.model.size(), 6u);
  EXPECT_EQ(ck.optimizer.optimizer, "SGD");
  EXPECT_EQ(ck.optimizer.state.size(), 6u);
  EXPECT_EQ(ck.metadata.at("train.epoch"), "2");
  EXPECT_NE(log.str().find("epoch 2/2: train loss"), std::string::npos) << log.str();
}

TEST(Train, SameSeedSameMetricsAndResumeEqualsUninterrupted) {
  REQUIRE_DATA();
  std::ostringstream log;
  const std::string a = tmpdir("a"), b = tmpdir("b");
  TrainConfig ca = small_config(a, 2);
  ca.optimizer = "adam";
  ca.lr = 1e-3;
  auto ra = tools::run_training(ca, log);
  // Same run, interrupted after epoch 1 and resumed.
  TrainConfig cb = ca;
  cb.out = b;
  cb.checkpoint = b + "/checkpoint.safetensors";
  cb.epochs = 1;
  tools::run_training(cb, log);
  cb.epochs = 2;
  cb.resume = true;
  auto rb = tools::run_training(cb, log);
  ASSERT_EQ(ra.history.size(), 2u);
  ASSERT_EQ(rb.history.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ra.history[i].train_loss, rb.history[i].train_loss) << "epoch " << i + 1;
    EXPECT_EQ(ra.history[i].test_loss, rb.history[i].test_loss) << "epoch " << i + 1;
    EXPECT_EQ(ra.history[i].test_accuracy, rb.history[i].test_accuracy) << "epoch " << i + 1;
  }
  // Final weights and optimizer state bitwise equal.
  io::Checkpoint ka = io::read_checkpoint(ra.checkpoint), kb = io::read_checkpoint(rb.checkpoint);
  ASSERT_EQ(ka.model.size(), kb.model.size());
  for (size_t i = 0; i < ka.model.size(); ++i) EXPECT_EQ(oracle::compare_tensors(ka.model[i].second, kb.model[i].second, 0, 0), "") << ka.model[i].first;
  ASSERT_EQ(ka.optimizer.state.size(), kb.optimizer.state.size());
  for (size_t i = 0; i < ka.optimizer.state.size(); ++i)
    EXPECT_EQ(oracle::compare_tensors(ka.optimizer.state[i].second, kb.optimizer.state[i].second, 0, 0), "")
        << ka.optimizer.state[i].first;
  // Same seed again from scratch: identical metrics.
  TrainConfig cc = ca;
  cc.out = tmpdir("c");
  cc.checkpoint = cc.out + "/checkpoint.safetensors";
  auto rc = tools::run_training(cc, log);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(ra.history[i].train_loss, rc.history[i].train_loss);
  // Another seed: other numbers (the seed is really used).
  cc.seed = 7;
  cc.out = tmpdir("d");
  cc.checkpoint = cc.out + "/checkpoint.safetensors";
  auto rd = tools::run_training(cc, log);
  EXPECT_NE(ra.history[0].train_loss, rd.history[0].train_loss);
}

TEST(Train, ResumeChecksSettings) {
  REQUIRE_DATA();
  std::ostringstream log;
  const std::string out = tmpdir("settings");
  TrainConfig c = small_config(out, 1);
  c.resume = true;
  EXPECT_THROW(tools::run_training(c, log), RuntimeError);  // no checkpoint yet
  c.resume = false;
  tools::run_training(c, log);
  c.resume = true;
  c.epochs = 2;
  c.lr = 0.01;
  c.given.insert("lr");  // as if typed: a flag given on --resume must agree with the checkpoint
  try {
    tools::run_training(c, log);
    FAIL() << "resumed with another --lr";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("--lr"), std::string::npos) << e.what();
  }
  // A corrupt checkpoint gives the reader's error, naming the file.
  { std::ofstream(c.checkpoint, std::ios::trunc) << "garbage"; }
  c.lr = 0.05;
  try {
    tools::run_training(c, log);
    FAIL() << "loaded a corrupt checkpoint";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(c.checkpoint), std::string::npos) << e.what();
  }
}

std::string run_error(const TrainConfig& c, std::ostream& log) {
  try {
    tools::run_training(c, log);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// A checkpoint of another model or optimizer is reported as that setting (it used to fail
// on the state dict's key names), numbers print as given ("0.05", not 17 digits) yet
// checkpoints that stored 17 digits still resume, and metadata not written by tandem
// train is rejected naming the file.
TEST(Train, ResumeNamesTheMismatchedSetting) {
  REQUIRE_DATA();
  std::ostringstream log;
  const std::string out = tmpdir("mismatch");
  TrainConfig c = small_config(out, 1);
  c.train_limit = 256;
  c.test_limit = 100;
  tools::run_training(c, log);
  TrainConfig r = c;
  r.resume = true;
  r.epochs = 2;
  r.given.insert({"model", "optimizer", "lr"});  // as if typed on the command line
  r.model = "cnn";
  std::string msg = run_error(r, log);
  EXPECT_NE(msg.find("was made with --model mlp, this run has --model cnn"), std::string::npos) << msg;
  r.model = "mlp";
  r.optimizer = "adam";
  r.lr = 1e-3;
  msg = run_error(r, log);
  EXPECT_NE(msg.find("was made with --optimizer sgd, this run has --optimizer adam"), std::string::npos) << msg;
  r.optimizer = "sgd";
  r.lr = 0.1;
  msg = run_error(r, log);
  EXPECT_NE(msg.find("was made with --lr 0.05, this run has --lr 0.1"), std::string::npos) << msg;

  // The same checkpoint with 17-digit numbers (as written before) resumes.
  io::SafetensorsContents f = io::load_safetensors(c.checkpoint);
  f.metadata["train.lr"] = "0.050000000000000003";
  f.metadata["train.momentum"] = "0.90000000000000002";
  io::save_safetensors(c.checkpoint, f.tensors, f.metadata);
  r.lr = 0.05;
  auto res = tools::run_training(r, log);
  EXPECT_EQ(res.history.size(), 2u);

  // Not written by tandem train; a damaged history.
  f.metadata.erase("train.epoch");
  io::save_safetensors(c.checkpoint, f.tensors, f.metadata);
  msg = run_error(r, log);
  EXPECT_NE(msg.find(c.checkpoint + " was not written by tandem train"), std::string::npos) << msg;
  f.metadata["train.epoch"] = "1";
  f.metadata["train.history"] = "[[1, 2.0,";
  io::save_safetensors(c.checkpoint, f.tensors, f.metadata);
  msg = run_error(r, log);
  EXPECT_NE(msg.find("malformed train.epoch / train.history"), std::string::npos) << msg;
  EXPECT_NE(msg.find(c.checkpoint), std::string::npos) << msg;
}

// Output places that cannot be used are reported, naming the flag, before any training
// (a --checkpoint naming a directory used to fail only at the end of the first epoch).
TEST(Train, UnusableOutputPlacesFailBeforeTraining) {
  REQUIRE_DATA();
  const std::string dir = tmpdir("places");
  fs::create_directories(dir);
  { std::ofstream(dir + "/file") << "x"; }
  TrainConfig c = small_config(dir + "/file/sub", 1);
  std::ostringstream log;
  std::string msg = run_error(c, log);
  EXPECT_NE(msg.find("--out: cannot create the directory " + dir + "/file/sub"), std::string::npos) << msg;
  c = small_config(dir + "/out", 1);
  c.checkpoint = dir;
  msg = run_error(c, log);
  EXPECT_NE(msg.find("--checkpoint " + dir + " is a directory"), std::string::npos) << msg;
  c.checkpoint = dir + "/file/ck.safetensors";
  msg = run_error(c, log);
  EXPECT_NE(msg.find("--checkpoint: cannot create the directory " + dir + "/file"), std::string::npos) << msg;
  EXPECT_EQ(log.str().find("epoch 1/"), std::string::npos) << log.str();
}

TEST(Train, CompiledModeTrainsAndEvaluatesLikeEagerBitwise) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("eager"), 2);
  auto re = tools::run_training(c, log);
  c.mode = "compiled";
  c.out = tmpdir("compiled");
  c.checkpoint = c.out + "/checkpoint.safetensors";
  auto rc = tools::run_training(c, log);
  ASSERT_EQ(re.history.size(), 2u);
  ASSERT_EQ(rc.history.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {  // forward + backward compiled: the same losses, bit for bit
    EXPECT_EQ(re.history[e].train_loss, rc.history[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(re.history[e].test_accuracy, rc.history[e].test_accuracy) << "epoch " << e + 1;
    EXPECT_EQ(re.history[e].test_loss, rc.history[e].test_loss) << "epoch " << e + 1;
  }
  // ... and the same trained parameters.
  io::Checkpoint ke = io::read_checkpoint(re.checkpoint), kc = io::read_checkpoint(rc.checkpoint);
  ASSERT_EQ(ke.model.size(), kc.model.size());
  for (size_t k = 0; k < ke.model.size(); ++k) {
    EXPECT_EQ(ke.model[k].first, kc.model[k].first);
    EXPECT_TRUE(tandem_test::bitwise_equal(ke.model[k].second, kc.model[k].second)) << ke.model[k].first;
  }
  // The whole step ran as a program (not eagerly), and the log says how.
  EXPECT_NE(log.str().find("compiled mode: training step "), std::string::npos) << log.str();
  EXPECT_EQ(log.str().find("graph break"), std::string::npos) << log.str();
}

// --resume in compiled mode (Adam: its state comes from the checkpoint, so the first step
// is captured at once) continues exactly as an uninterrupted eager run.
TEST(Train, CompiledModeResumesLikeEagerBitwise) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("resume-eager"), 2);
  c.optimizer = "adam";
  c.lr = 1e-3;
  auto re = tools::run_training(c, log);
  c.mode = "compiled";
  c.out = tmpdir("resume-compiled");
  c.checkpoint = c.out + "/checkpoint.safetensors";
  c.epochs = 1;
  tools::run_training(c, log);
  c.epochs = 2;
  c.resume = true;
  std::ostringstream resumed;
  auto rc = tools::run_training(c, resumed);
  ASSERT_EQ(rc.history.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(re.history[e].train_loss, rc.history[e].train_loss) << "epoch " << e + 1;
    EXPECT_EQ(re.history[e].test_loss, rc.history[e].test_loss) << "epoch " << e + 1;
  }
  io::Checkpoint ke = io::read_checkpoint(re.checkpoint), kc = io::read_checkpoint(rc.checkpoint);
  ASSERT_EQ(ke.optimizer.state.size(), kc.optimizer.state.size());
  for (size_t k = 0; k < ke.optimizer.state.size(); ++k)
    EXPECT_TRUE(tandem_test::bitwise_equal(ke.optimizer.state[k].second, kc.optimizer.state[k].second))
        << ke.optimizer.state[k].first;
  EXPECT_NE(resumed.str().find("compiled mode: training step "), std::string::npos) << resumed.str();
}

// Ctrl-C during the second epoch: exit status 130, and the checkpoint of epoch 1 loads.
TEST(Train, CtrlCLeavesLastCheckpointIntact) {
  REQUIRE_DATA();
  const std::string out = tmpdir("sigint");
  const std::string ck = out + "/checkpoint.safetensors";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: a run long enough to interrupt (the parent waits for the first checkpoint).
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    execl(TANDEM_CLI_PATH, TANDEM_CLI_PATH, "train", "--epochs", "50", "--train-limit", "3000", "--test-limit", "200",
          "--threads", "1", "--progress", "none", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(ck) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(fs::exists(ck)) << "no checkpoint within 120 s";
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  io::Checkpoint c = io::read_checkpoint(ck);
  EXPECT_GE(std::stoi(c.metadata.at("train.epoch")), 1);
  EXPECT_LT(std::stoi(c.metadata.at("train.epoch")), 50);
  EXPECT_TRUE(fs::exists(out + "/metrics.csv"));
}

// Ctrl-C before the first epoch ends: no checkpoint exists, so the run must not suggest
// --resume (which would fail) nor print a checkpoint path.
TEST(Train, CtrlCBeforeTheFirstEpochPointsAtNoCheckpoint) {
  REQUIRE_DATA();
  const std::string out = tmpdir("sigint-early");
  fs::create_directories(out);
  const std::string log_path = out + "/stdout.txt";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    execl(TANDEM_CLI_PATH, TANDEM_CLI_PATH, "train", "--epochs", "3", "--test-limit", "200", "--threads", "1",
          "--progress", "none", "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // The header line is printed once the SIGINT handler is installed.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (read_file(log_path).find("training mlp") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  kill(pid, SIGINT);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const std::string text = read_file(log_path);
  EXPECT_FALSE(fs::exists(out + "/checkpoint.safetensors")) << text;
  EXPECT_NE(text.find("no checkpoint written"), std::string::npos) << text;
  EXPECT_EQ(text.find("--resume"), std::string::npos) << text;
  EXPECT_NE(text.find("checkpoint: none"), std::string::npos) << text;
}


// ---- issue 11: numbered run directories, summary, schedules, resume from the checkpoint's
// settings, per-epoch outputs, non-finite losses, the curves picture ----

TEST(Train, NewRunDirNumbersRunsWithoutReplacingAny) {
  const std::string root = tmpdir("numbered");
  EXPECT_EQ(tools::new_run_dir(root), root + "/1");
  EXPECT_EQ(tools::new_run_dir(root), root + "/2");
  fs::create_directories(root + "/7");
  fs::create_directories(root + "/notes");
  fs::create_directories(root + "/08x");
  EXPECT_EQ(tools::new_run_dir(root), root + "/8");
  EXPECT_TRUE(fs::is_directory(root + "/8"));
  { std::ofstream(tmpdir("numbered-file")) << "x"; }
  EXPECT_THROW(tools::new_run_dir(tmpdir("numbered-file")), RuntimeError);
}

/// Runs `c` with the current directory set to `dir` (the default runs/ is relative).
tools::TrainResult run_in(const std::string& dir, const TrainConfig& c, std::ostream& log) {
  const fs::path old = fs::current_path();
  fs::create_directories(dir);
  fs::current_path(dir);
  try {
    auto r = tools::run_training(c, log);
    fs::current_path(old);
    return r;
  } catch (...) {
    fs::current_path(old);
    throw;
  }
}

TEST(Train, RunsWithoutOutGetNumberedDirectoriesAndASummary) {
  REQUIRE_DATA();
  const std::string cwd = tmpdir("cwd");
  TrainConfig c = tools::parse_train_args({"--epochs", "2", "--train-limit", "256", "--test-limit", "100",
                                           "--batch-size", "64", "--progress", "none"});
  std::ostringstream log1, log2;
  auto r1 = run_in(cwd, c, log1);
  auto r2 = run_in(cwd, c, log2);
  EXPECT_EQ(r1.out, "runs/1");
  EXPECT_EQ(r2.out, "runs/2");
  EXPECT_EQ(log1.str().rfind("run directory: runs/1\n", 0), 0u) << log1.str();
  EXPECT_TRUE(fs::exists(cwd + "/runs/1/checkpoint.safetensors"));
  EXPECT_TRUE(fs::exists(cwd + "/runs/2/metrics.csv"));
  // The last line: final and best accuracy, wall time.
  std::string text = log1.str();
  text.pop_back();
  const std::string last = text.substr(text.rfind('\n') + 1);
  const auto& h = r1.history;
  ASSERT_EQ(h.size(), 2u);
  const auto& best = h[1].test_accuracy > h[0].test_accuracy ? h[1] : h[0];  // the first best
  char expect[200];
  std::snprintf(expect, sizeof expect, "summary: final test accuracy %.2f%% (epoch 2), best %.2f%% (epoch %d), wall time ",
                100 * h[1].test_accuracy, 100 * best.test_accuracy, static_cast<int>(best.epoch));
  EXPECT_EQ(last.rfind(expect, 0), 0u) << last;
  EXPECT_NE(last.find("evaluation included"), std::string::npos) << last;
  EXPECT_GE(r1.wall_seconds, h[0].seconds + h[1].seconds);
}

TEST(Train, LrSchedulesFollowPyTorch) {
  REQUIRE_DATA();
  std::ostringstream log;
  auto run = [&](std::vector<std::string> extra, const std::string& name) {
    std::vector<std::string> args = {"--epochs", "3", "--train-limit", "256", "--test-limit", "100", "--batch-size",
                                     "64", "--progress", "none", "--out", tmpdir(name)};
    args.insert(args.end(), extra.begin(), extra.end());
    return tools::run_training(tools::parse_train_args(args), log);
  };
  // StepLR(step_size=1, gamma=0.5): 0.05, 0.025, 0.0125 (the lr each epoch trained with).
  auto s = run({"--lr-schedule", "step", "--lr-step-size", "1", "--lr-gamma", "0.5"}, "step");
  ASSERT_EQ(s.history.size(), 3u);
  EXPECT_DOUBLE_EQ(s.history[0].lr, 0.05);
  EXPECT_DOUBLE_EQ(s.history[1].lr, 0.025);
  EXPECT_DOUBLE_EQ(s.history[2].lr, 0.0125);
  // CosineAnnealingLR(T_max=3 by default = epochs, eta_min=0.01): eta_min + (lr - eta_min)(1 + cos(pi e / 3)) / 2.
  auto c = run({"--lr-schedule", "cosine", "--lr-min", "0.01"}, "cosine");
  EXPECT_DOUBLE_EQ(c.history[0].lr, 0.05);
  EXPECT_NEAR(c.history[1].lr, 0.01 + 0.04 * (1 + std::cos(M_PI / 3)) / 2, 1e-12);
  EXPECT_NEAR(c.history[2].lr, 0.01 + 0.04 * (1 + std::cos(2 * M_PI / 3)) / 2, 1e-12);
  // OneCycleLR(max_lr=0.1): starts at max_lr / 25; the peak is inside the run.
  auto o = run({"--lr-schedule", "onecycle", "--lr-max", "0.1"}, "onecycle");
  EXPECT_DOUBLE_EQ(o.history[0].lr, 0.1 / 25);
  EXPECT_GT(o.history[1].lr, o.history[0].lr);
  EXPECT_LT(o.history[1].lr, 0.1);
  // Parameters of another schedule, and a 1cycle that cannot fit the epochs, are refused.
  TrainConfig bad = tools::parse_train_args({"--lr-step-size", "2", "--out", tmpdir("bad-sched")});
  std::string msg = run_error(bad, log);
  EXPECT_NE(msg.find("--lr-step-size does not apply to --lr-schedule none"), std::string::npos) << msg;
  bad = tools::parse_train_args({"--lr-schedule", "onecycle", "--lr-t-max", "2", "--epochs", "3", "--out",
                                 tmpdir("bad-sched")});
  msg = run_error(bad, log);
  EXPECT_NE(msg.find("runs past the onecycle schedule of 2 epochs"), std::string::npos) << msg;
}

TEST(Train, ResumeTakesTheCheckpointsSettings) {
  REQUIRE_DATA();
  std::ostringstream log;
  const std::string dir = tmpdir("resume-settings");
  const std::vector<std::string> flags = {"--optimizer", "adam", "--lr", "0.002", "--batch-size", "32",
                                          "--train-limit", "256", "--test-limit", "100", "--progress", "none",
                                          "--lr-schedule", "cosine", "--lr-t-max", "4", "--seed", "3"};
  // Uninterrupted: 3 epochs.
  auto full_args = flags;
  full_args.insert(full_args.end(), {"--epochs", "3", "--out", tmpdir("resume-full")});
  auto full = tools::run_training(tools::parse_train_args(full_args), log);
  // 1 epoch, then --resume naming only the directory and the new total.
  auto first_args = flags;
  first_args.insert(first_args.end(), {"--epochs", "1", "--out", dir});
  tools::run_training(tools::parse_train_args(first_args), log);
  std::ostringstream rlog;
  auto resumed = tools::run_training(tools::parse_train_args({"--resume", "--out", dir, "--epochs", "3", "--progress", "none"}), rlog);
  EXPECT_NE(rlog.str().find("adam lr 0.002 (cosine schedule), batch 32"), std::string::npos) << rlog.str();
  ASSERT_EQ(resumed.history.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(resumed.history[i].train_loss, full.history[i].train_loss) << i;
    EXPECT_EQ(resumed.history[i].lr, full.history[i].lr) << i;
  }
  // A flag given that differs is still refused by name; one that agrees is fine.
  std::string msg = run_error(tools::parse_train_args({"--resume", "--out", dir, "--batch-size", "64"}), log);
  EXPECT_NE(msg.find("was made with --batch-size 32, this run has --batch-size 64"), std::string::npos) << msg;
  msg = run_error(tools::parse_train_args({"--resume", "--out", dir, "--lr-schedule", "step"}), log);
  EXPECT_NE(msg.find("was made with --lr-schedule cosine"), std::string::npos) << msg;
  // Resuming a finished run (--epochs from the checkpoint: 3) evaluates and says so.
  std::ostringstream flog;
  auto fin = tools::run_training(tools::parse_train_args({"--resume", "--out", dir, "--optimizer", "adam"}), flog);
  EXPECT_TRUE(fin.evaluated_only);
  EXPECT_EQ(fin.history.size(), 3u);
  EXPECT_NE(flog.str().find("the run is finished: the checkpoint is at epoch 3 and --epochs is 3; evaluating it"),
            std::string::npos)
      << flog.str();
  EXPECT_EQ(fin.final_test_accuracy, full.history[2].test_accuracy);
  EXPECT_NE(flog.str().find("summary: finished run evaluated, test accuracy"), std::string::npos) << flog.str();
  // --resume without a place to resume from.
  msg = run_error(tools::parse_train_args({"--resume"}), log);
  EXPECT_NE(msg.find("--resume needs the run to continue: --out DIR"), std::string::npos) << msg;
}

TEST(Train, MetricsAndCurvesAreWrittenEveryEpochAndTheTitleSaysWhat) {
  REQUIRE_DATA();
  const std::string out = tmpdir("per-epoch");
  // Killed outright (SIGKILL, no handler runs) after epoch 1's checkpoint: the files of
  // the finished epochs are there and complete.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    execl(TANDEM_CLI_PATH, TANDEM_CLI_PATH, "train", "--epochs", "50", "--train-limit", "2000", "--test-limit", "200",
          "--batch-size", "100", "--threads", "1", "--progress", "none", "--out", out.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  // curves.svg is the last file written after an epoch.
  while (!fs::exists(out + "/curves.svg") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  const std::string csv = read_file(out + "/metrics.csv");
  ASSERT_EQ(csv.rfind("epoch,train_loss,", 0), 0u) << csv;
  EXPECT_NE(csv.find("\n1,"), std::string::npos) << csv;
  const std::string svg = read_file(out + "/curves.svg");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_NE(svg.find("sgd lr 0.05, batch size 100, subset: 2000 train / 200 test examples"), std::string::npos);
}

TEST(Train, CheckpointAmongTheRunsOutputsAndUnwritableOutAreRefusedAtStart) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("own"), 1);
  for (const char* own : {"metrics.csv", "curves.svg"}) {
    c.checkpoint = tmpdir("own") + "/./" + own;
    const std::string msg = run_error(c, log);
    EXPECT_NE(msg.find("is the run's own output file"), std::string::npos) << msg;
  }
  // /proc/self is a directory nobody (not even root) can create files in: the probe file
  // finds that before training.
  c = small_config("/proc/self", 1);
  c.checkpoint = tmpdir("own") + "/ck.safetensors";
  const std::string msg = run_error(c, log);
  EXPECT_NE(msg.find("--out: cannot write to the directory /proc/self"), std::string::npos) << msg;
  EXPECT_EQ(log.str().find("epoch 1/"), std::string::npos) << log.str();
}

TEST(Train, NonFiniteLossStopsOrWarns) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("diverge"), 2);
  c.lr = 1e6;
  c.given.insert("lr");
  auto r = tools::run_training(c, log);
  ASSERT_FALSE(r.stopped.empty()) << log.str();
  EXPECT_NE(r.stopped.find("the training loss is "), std::string::npos) << r.stopped;
  EXPECT_NE(r.stopped.find("at epoch 1, batch "), std::string::npos) << r.stopped;
  EXPECT_NE(log.str().find("stopped: the training loss is"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("--on-nonfinite warn"), std::string::npos) << log.str();
  EXPECT_TRUE(r.history.empty());
  EXPECT_FALSE(fs::exists(c.checkpoint));  // no checkpoint of a diverged model

  std::ostringstream wlog;
  c.on_nonfinite = "warn";
  c.out = tmpdir("diverge-warn");
  c.checkpoint = c.out + "/checkpoint.safetensors";
  r = tools::run_training(c, wlog);
  EXPECT_TRUE(r.stopped.empty());
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_FALSE(std::isfinite(r.history[1].train_loss));
  EXPECT_NE(wlog.str().find("warning: the training loss is"), std::string::npos) << wlog.str();
  const std::string svg = read_file(r.curves_svg);
  EXPECT_NE(svg.find("train loss nan"), std::string::npos) << svg;  // the marker's label
  // No coordinate is nan or inf.
  for (const char* bad : {"=\"nan", "=\"-nan", "=\"inf", "=\"-inf", ",nan", ",inf", ",-nan", ",-inf", " nan,", " inf,"})
    EXPECT_EQ(svg.find(bad), std::string::npos) << bad;
}

std::string attr_after(const std::string& svg, const std::string& anchor, const std::string& attr) {
  size_t p = svg.find(anchor);
  if (p == std::string::npos) return "";
  size_t tag = svg.rfind('<', p);
  size_t a = svg.find(attr + "=\"", tag);
  return a == std::string::npos ? "" : svg.substr(a + attr.size() + 2, svg.find('"', a + attr.size() + 2) - a - attr.size() - 2);
}

TEST(Curves, OneEpochIsVisibleAndTheLegendStaysOffTheCurves) {
  tools::EpochMetrics m{1, 0.8, 0.7, 0.75, 0.05, 1, 100};
  const std::string svg = tools::curves_svg({m}, "t");
  // One point per series, drawn larger and in the middle of the panel (x 60..435).
  size_t circles = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++circles;
  EXPECT_EQ(circles, 3u);
  EXPECT_EQ(attr_after(svg, "<circle", "cx"), "247.5");
  EXPECT_EQ(attr_after(svg, "<circle", "r"), "5");
  // The legend lies above the plot area (the first <rect> after the title is the frame).
  const double frame_top = std::stod(attr_after(svg, "<rect x=\"60\"", "y"));
  const double legend_y = std::stod(attr_after(svg, ">train loss</text>", "y"));
  EXPECT_LT(legend_y, frame_top);
  // Every point is inside the frame, below the legend.
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1))
    EXPECT_GT(std::stod(attr_after(svg.substr(p), "<circle", "cy")), frame_top);
  // A nan between finite epochs: two points, a gap (no polyline through it), a marker.
  std::vector<tools::EpochMetrics> h = {m, m, m};
  h[1].epoch = 2;
  h[2].epoch = 3;
  h[1].train_loss = std::nan("");
  h[2].train_loss = INFINITY;
  const std::string g = tools::curves_svg(h, "t");
  EXPECT_NE(g.find("train loss nan"), std::string::npos);
  EXPECT_NE(g.find("train loss inf"), std::string::npos);
  EXPECT_EQ(g.find("nan,"), std::string::npos);
  EXPECT_EQ(g.find("inf,"), std::string::npos);
  // A huge finite loss alone (1e33: +-0.5 vanishes in doubles there) still gets a range.
  h[0].train_loss = 6e33;
  const std::string big = tools::curves_svg(h, "t");
  for (const char* bad : {"=\"nan", "=\"-nan", "=\"inf", "=\"-inf", ",nan", ",inf", ",-nan", ",-inf"})
    EXPECT_EQ(big.find(bad), std::string::npos) << bad << "\n" << big;
  const double cy = std::stod(attr_after(big, "<circle", "cy"));
  EXPECT_GT(cy, frame_top);
  EXPECT_LT(cy, 400);
  const std::string title = tools::curves_svg({}, "a <b> & c");
  EXPECT_NE(title.find("a &lt;b&gt; &amp; c"), std::string::npos);
  EXPECT_EQ(title.substr(title.size() - 7), "</svg>\n");
}

}  // namespace

namespace {
// A run's final test accuracy, in points.
double accuracy_points(const tools::TrainResult& r) { return 100 * r.final_test_accuracy; }
}  // namespace

TEST(TrainArgs, PrecisionFlag) {
  EXPECT_EQ(tools::parse_train_args({}).precision, "fp32");
  EXPECT_EQ(tools::parse_train_args({"--precision", "bf16"}).precision, "bf16");
  EXPECT_EQ(tools::parse_train_args({"--precision=fp16"}).precision, "fp16");
  try {
    tools::parse_train_args({"--precision", "fp8"});
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("--precision"), std::string::npos) << e.what();
  }
}

// --precision bf16 and fp16 train the CNN about as well as fp32 on a subset; the
// parameters stay float32; the compiled bf16 run equals the eager one bit for bit; the
// checkpoint records the precision, and a resume with another one is refused.
TEST(Train, MixedPrecisionTrainsLikeFloat32) {
  REQUIRE_DATA();
  std::ostringstream log;
  auto config = [&](const std::string& name, const std::string& precision, const std::string& mode,
                    const std::string& epochs = "1") {
    TrainConfig c = tools::parse_train_args({"--model", "cnn", "--optimizer", "adam", "--epochs", epochs,
                                             "--train-limit", "2048", "--test-limit", "500", "--batch-size", "64",
                                             "--progress", "none", "--precision", precision, "--mode", mode, "--out",
                                             tmpdir(name)});
    return c;
  };
  // fp16 trains 2 epochs: its first steps overflow at the initial scale 65536 and are
  // skipped while the scale backs off (2 of 32 steps here), which costs the first epoch.
  auto r32 = tools::run_training(config("fp32", "fp32", "eager", "2"), log);
  auto rbf = tools::run_training(config("bf16", "bf16", "eager"), log);
  auto rbf_c = tools::run_training(config("bf16c", "bf16", "compiled"), log);
  auto r16 = tools::run_training(config("fp16", "fp16", "eager", "2"), log);
  ASSERT_TRUE(rbf.stopped.empty()) << rbf.stopped;
  ASSERT_TRUE(r16.stopped.empty()) << r16.stopped;
  ASSERT_EQ(r32.history.size(), 2u);
  EXPECT_GT(100 * r32.history[0].test_accuracy, 60.0);
  EXPECT_NEAR(accuracy_points(rbf), 100 * r32.history[0].test_accuracy, 3.0);
  EXPECT_NEAR(accuracy_points(r16), accuracy_points(r32), 3.0);
  EXPECT_NE(log.str().find("step(s) skipped so far"), std::string::npos) << log.str();
  // Not the float32 numbers: autocast did something.
  EXPECT_NE(rbf.history[0].train_loss, r32.history[0].train_loss);
  EXPECT_NE(r16.history[0].train_loss, rbf.history[0].train_loss);
  // Compiled bf16 training equals eager bf16 training.
  EXPECT_EQ(rbf.history[0].train_loss, rbf_c.history[0].train_loss);
  EXPECT_EQ(rbf.history[0].test_loss, rbf_c.history[0].test_loss);
  io::Checkpoint kb = io::read_checkpoint(rbf.checkpoint), kc = io::read_checkpoint(rbf_c.checkpoint);
  ASSERT_EQ(kb.model.size(), kc.model.size());
  for (size_t k = 0; k < kb.model.size(); ++k) {
    EXPECT_EQ(kb.model[k].second.dtype(), kFloat32) << kb.model[k].first;
    EXPECT_TRUE(tandem_test::bitwise_equal(kb.model[k].second, kc.model[k].second)) << kb.model[k].first;
  }
  EXPECT_EQ(kb.metadata.at("train.precision"), "bf16");
  io::Checkpoint k16 = io::read_checkpoint(r16.checkpoint);
  EXPECT_EQ(k16.metadata.at("train.precision"), "fp16");
  EXPECT_NE(k16.metadata.at("train.grad_scaler").find("\"scale\""), std::string::npos);
  EXPECT_NE(log.str().find("bf16 autocast"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("fp16 autocast + loss scaling"), std::string::npos) << log.str();
  // A resume with another precision is refused by name.
  TrainConfig again = config("bf16", "fp32", "eager");
  again.resume = true;
  again.epochs = 2;
  again.checkpoint = rbf.checkpoint;
  try {
    tools::run_training(again, log);
    FAIL() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("--precision bf16"), std::string::npos) << e.what();
  }
}

TEST(TrainArgs, MemoryBudgetFlag) {
  EXPECT_EQ(tools::parse_train_args({}).memory_budget, 0);
  EXPECT_EQ(tools::parse_train_args({"--mode", "compiled", "--memory-budget", "64MiB"}).memory_budget, int64_t{64} << 20);
  EXPECT_EQ(tools::parse_train_args({"--mode", "compiled", "--memory-budget=1.5G"}).memory_budget, int64_t{3} << 29);
  EXPECT_EQ(tools::parse_train_args({"--mode", "compiled", "--memory-budget", "500MB"}).memory_budget, 500000000);
  EXPECT_EQ(tools::parse_train_args({"--mode", "compiled", "--memory-budget", "4096"}).memory_budget, 4096);
  for (const char* bad : {"64XB", "-1MiB", "0", "MiB", "1e30GiB", ""}) {
    try {
      tools::parse_train_args({"--mode", "compiled", "--memory-budget", bad});
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find("--memory-budget"), std::string::npos) << e.what();
    }
  }
  // Eager mode has no program to plan: refused rather than ignored.
  EXPECT_THROW(tools::parse_train_args({"--memory-budget", "64MiB"}), ValueError);
}

// Compiled training under a memory budget trains bit for bit as eager, and the log reports
// the plan.
TEST(Train, CompiledModeUnderAMemoryBudgetTrainsLikeEagerBitwise) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("budget-eager"), 1);
  auto re = tools::run_training(c, log);
  c.mode = "compiled";
  c.memory_budget = int64_t{3} << 20;
  c.out = tmpdir("budget-compiled");
  c.checkpoint = c.out + "/checkpoint.safetensors";
  std::ostringstream clog;
  auto rc = tools::run_training(c, clog);
  ASSERT_EQ(rc.history.size(), 1u);
  EXPECT_EQ(re.history[0].train_loss, rc.history[0].train_loss);
  EXPECT_EQ(re.history[0].test_accuracy, rc.history[0].test_accuracy);
  EXPECT_NE(clog.str().find("memory budget 3145728 bytes"), std::string::npos) << clog.str();
}
