// `tandem train` / `tandem dump` on hostile or wrong inputs (all generated here): a deeply
// nested checkpoint header, inconsistent resume metadata, images of the wrong size, a
// --data directory without the files, integer flags too large for their type, and the
// dump command's error prefix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "dataset/idx_files.h"
#include "dump.h"
#include "support/fashion_data.h"
#include "tandem/tandem.h"
#include "train.h"

namespace {

using namespace tandem;
using tools::TrainConfig;
namespace fs = std::filesystem;
using test::scratch;


TrainConfig tiny_config(const std::string& out) {
  return tools::parse_train_args({"--epochs", "1", "--train-limit", "256", "--test-limit", "100", "--progress", "none",
                                  "--out", out});
}

std::string run_error(const TrainConfig& c) {
  std::ostringstream log;
  try {
    tools::run_training(c, log);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

struct Child {
  int status = 0;
  std::string err;
};

// Runs the tandem binary with `args`, stdout to /dev/null, and returns its exit status
// and stderr.
Child run_cli(const std::vector<std::string>& args, const std::string& err_path) {
  pid_t pid = fork();
  if (pid == 0) {
    int out = open("/dev/null", O_WRONLY);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, 1);
    dup2(err, 2);
    std::vector<char*> argv{const_cast<char*>(TANDEM_CLI_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(TANDEM_CLI_PATH, argv.data());
    _exit(127);
  }
  Child c;
  waitpid(pid, &c.status, 0);
  c.err = test::read_bytes(err_path);
  return c;
}

}  // namespace

// The crash: `tandem train --resume` on a checkpoint whose header nests 100,000
// arrays died with SIGSEGV (exit 139) printing the value. Now a clean error, exit 1.
TEST(HostileResume, DeeplyNestedCheckpointHeaderIsRefused) {
  REQUIRE_DATA();
  const std::string out = scratch().file("deep");
  fs::create_directories(out);
  const std::string ck = out + "/checkpoint.safetensors";
  const std::string header = "{\"x\":" + std::string(100000, '[') + std::string(100000, ']') + "}";
  uint64_t n = header.size();
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  test::write_bytes(ck, bytes + header);
  Child c = run_cli({"train", "--resume", "--epochs", "2", "--train-limit", "256", "--test-limit", "100", "--progress",
                     "none", "--out", out},
                    scratch().file("deep-stderr.txt"));
  ASSERT_TRUE(WIFEXITED(c.status)) << "killed by signal " << WTERMSIG(c.status) << "; stderr: " << c.err;
  EXPECT_EQ(WEXITSTATUS(c.status), 1) << c.err;
  EXPECT_NE(c.err.find(ck), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("deeper than 64 levels"), std::string::npos) << c.err;
  EXPECT_LT(c.err.size(), 500u) << c.err;
}

// Resume metadata must agree with itself: train.epoch is the number of rows of
// train.history, which are epochs 1, 2, ... in order; and it must nest sanely.
TEST(HostileResume, InconsistentMetadataIsRefused) {
  REQUIRE_DATA();
  const std::string out = scratch().file("meta");
  TrainConfig c = tiny_config(out);
  std::ostringstream log;
  tools::run_training(c, log);
  const io::SafetensorsContents good = io::load_safetensors(c.checkpoint);
  TrainConfig r = c;
  r.resume = true;
  r.epochs = 3;
  auto with = [&](const std::string& key, const std::string& value) {
    io::Metadata m = good.metadata;
    m[key] = value;
    io::save_safetensors(c.checkpoint, good.tensors, m);
    return run_error(r);
  };
  std::string msg = with("train.epoch", "2");  // one history row
  EXPECT_NE(msg.find("inconsistent metadata: train.epoch is 2 but train.history holds 1 epoch(s)"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find(c.checkpoint), std::string::npos) << msg;
  msg = with("train.history", "[[2,0.5,0.5,0.5,0.05,1,1]]");
  EXPECT_NE(msg.find("inconsistent metadata: train.history row 0 is epoch 2, expected 1"), std::string::npos) << msg;
  msg = with("train.history", std::string(100000, '[') + std::string(100000, ']'));
  EXPECT_NE(msg.find("malformed train.epoch / train.history metadata: nests deeper than 64"), std::string::npos) << msg;
  msg = with("train.history", "{\"a\":1}");
  EXPECT_NE(msg.find("malformed train.epoch / train.history"), std::string::npos) << msg;
  msg = with("train.epoch", std::string(1 << 20, '7'));
  EXPECT_NE(msg.find("train.epoch got"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("too large"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 700);
  // A setting quoted from the file is cut short (resume takes the settings from the
  // checkpoint, so a bad one is malformed metadata; given as a flag, it is a mismatch).
  msg = with("train.model", std::string(1 << 20, 'm'));
  EXPECT_NE(msg.find("malformed train.model metadata"), std::string::npos) << msg.substr(0, 300);
  EXPECT_NE(msg.find("mmm"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 600u) << msg.substr(0, 700);
  // The untouched checkpoint still resumes.
  io::save_safetensors(c.checkpoint, good.tensors, good.metadata);
  EXPECT_EQ(tools::run_training(r, log).history.size(), 3u);
}

// The models take 28x28 images: other sizes are refused when the data loads, naming the
// images file, before any training.
TEST(HostileData, WrongImageSizeIsRefusedNamingTheFile) {
  const std::string dir = scratch().file("small-images");
  fs::create_directories(dir);
  test::write_mnist_split(dir, "train", 4, 3, {1, 2, 3});
  test::write_mnist_split(dir, "t10k", 4, 3, {4, 5});
  TrainConfig c = tiny_config(scratch().file("small-images-out"));
  c.data_dir = dir;
  const std::string msg = run_error(c);
  EXPECT_NE(msg.find(dir + "/train-images-idx3-ubyte.gz holds images of 4x3 pixels; the models take 28x28"),
            std::string::npos)
      << msg;
}

// --data names the user's own directory: the message says what to put there, and does
// not suggest installing the Debian package (which fills another directory).
TEST(HostileData, DataDirWithoutFilesGivesNoPackageHint) {
  const std::string dir = scratch().file("empty-data");
  fs::create_directories(dir);
  TrainConfig c = tiny_config(scratch().file("empty-data-out"));
  c.data_dir = dir;
  const std::string msg = run_error(c);
  EXPECT_NE(msg.find(dir), std::string::npos) << msg;
  EXPECT_NE(msg.find("train-images-idx3-ubyte.gz"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Debian"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("install"), std::string::npos) << msg;
}

TEST(HostileFlags, IntegersTooLargeForTheirTypeSaySo) {
  auto error = [](std::vector<std::string> args) {
    try {
      tools::parse_train_args(args);
    } catch (const ValueError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error for " << args[0];
    return std::string();
  };
  for (const auto& [flag, value] : std::vector<std::pair<std::string, std::string>>{
           {"--threads", "4294967297"},
           {"--threads", "100000"},
           {"--epochs", "99999999999999999999"},
           {"--batch-size", "9223372036854775808"},
           {"--seed", "123456789012345678901234567890"}}) {
    const std::string msg = error({flag, value});
    EXPECT_NE(msg.find(flag + " got \"" + value + "\", which is too large"), std::string::npos) << msg;
  }
  // Not a number, or too small: no "too large".
  for (const auto& v : {"12x", "-99999999999999999999", "0"}) {
    const std::string msg = error({"--epochs", v});
    EXPECT_EQ(msg.find("too large"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected an integer"), std::string::npos) << msg;
  }
}

// `tandem dump` errors start with "tandem dump: " once (it printed
// "tandem dump: [tandem dump] ..."), and --batch beyond its range says "too large".
TEST(HostileFlags, DumpErrorsHaveOnePrefix) {
  auto stderr_of = [](std::vector<std::string> args, int want_rc) {
    std::ostringstream err;
    auto* old = std::cerr.rdbuf(err.rdbuf());
    const int rc = tools::dump_main(args);
    std::cerr.rdbuf(old);
    EXPECT_EQ(rc, want_rc);
    return err.str();
  };
  std::string e = stderr_of({"--model", "resnet"}, 2);
  EXPECT_EQ(e.rfind("tandem dump: --model got \"resnet\"", 0), 0u) << e;
  EXPECT_EQ(e.find("[tandem dump]"), std::string::npos) << e;
  e = stderr_of({"--frobnicate"}, 2);
  EXPECT_EQ(e.rfind("tandem dump: unknown flag", 0), 0u) << e;
  e = stderr_of({"--batch", "99999999999999999999"}, 2);
  EXPECT_NE(e.find("--batch got \"99999999999999999999\", which is too large"), std::string::npos) << e;
  e = stderr_of({"--batch", "100000000"}, 2);
  EXPECT_NE(e.find("which is too large"), std::string::npos) << e;
  EXPECT_EQ(e.find("[tandem dump]"), std::string::npos) << e;
}
