// `tandem train`: flag parsing, reproducibility, resume == uninterrupted, outputs, error
// messages, Ctrl-C safety, and a short end-to-end run that must learn.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/temp_dir.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"
#include "train.h"

namespace {

using namespace tandem;
using tools::TrainConfig;
namespace fs = std::filesystem;

bool have_data() { return fs::exists(std::string(data::datasets::FashionMNIST::kDefaultRoot) + "/t10k-images-idx3-ubyte.gz"); }

#define REQUIRE_DATA()                                                                                      \
  if (!have_data()) GTEST_SKIP() << "Fashion-MNIST is missing (Debian package dataset-fashion-mnist; ./run " \
                                    "installs it)"

// Output directories of the runs, removed when the test binary exits.
test::TempDir& scratch() {
  static test::TempDir dir;
  return dir;
}
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
  EXPECT_EQ(c.checkpoint, "runs/train/checkpoint.safetensors");
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

TEST(Train, CompiledModeEvaluatesLikeEager) {
  REQUIRE_DATA();
  std::ostringstream log;
  TrainConfig c = small_config(tmpdir("eager"), 1);
  auto re = tools::run_training(c, log);
  c.mode = "compiled";
  c.out = tmpdir("compiled");
  c.checkpoint = c.out + "/checkpoint.safetensors";
  auto rc = tools::run_training(c, log);
  EXPECT_EQ(re.history[0].train_loss, rc.history[0].train_loss);
  EXPECT_EQ(re.history[0].test_accuracy, rc.history[0].test_accuracy);
  EXPECT_NEAR(re.history[0].test_loss, rc.history[0].test_loss, 1e-6);
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

}  // namespace
