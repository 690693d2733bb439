// `tandem train --distributed` in-process on every rank (run_training with
// config.distributed): R ranks with batch 64 track one process with batch 64 x R on the
// same data order (per-epoch losses and 2-epoch test accuracy), only rank 0 writes, and a
// distributed --resume gives the uninterrupted distributed run's numbers exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "support/fashion_data.h"
#include "tandem/tandem.h"
#include "train.h"

using namespace tandem;
namespace dist = tandem::distributed;
using tools::TrainConfig;

namespace {
TrainConfig config(const std::string& out, int64_t epochs, int64_t batch, bool distributed) {
  std::vector<std::string> a{"--epochs", std::to_string(epochs), "--train-limit", "2048", "--test-limit", "1000",
                             "--batch-size", std::to_string(batch), "--progress", "none", "--threads", "1", "--out", out};
  if (distributed) a.push_back("--distributed");
  return tools::parse_train_args(a);
}
}  // namespace

TEST(TrainDistributed, TracksOneProcessOnlyRankZeroWritesAndResumes) {
  REQUIRE_DATA();
  const int R = dist::world_size();
  // Rank 0's scratch directory: the run's outputs are rank 0's.
  const std::string root = dist::all_gather_strings(test::scratch().path())[0];
  std::ostringstream log;
  const auto full = tools::run_training(config(root + "/ddp", 2, 64, true), log);
  ASSERT_EQ(full.history.size(), 2u);
  if (dist::rank() == 0) {
    EXPECT_TRUE(std::filesystem::exists(root + "/ddp/checkpoint.safetensors"));
    EXPECT_TRUE(std::filesystem::exists(root + "/ddp/metrics.csv"));
    EXPECT_NE(log.str().find("global batch " + std::to_string(64 * R)), std::string::npos) << log.str();
  } else {
    EXPECT_EQ(log.str().find("epoch 1/2"), std::string::npos) << "ranks other than 0 do not report epochs";
  }
  // Every rank holds rank 0's figures.
  std::ostringstream hist;
  for (const auto& m : full.history) hist << m.train_loss << " " << m.test_loss << " " << m.test_accuracy << ";";
  const auto all = dist::all_gather_strings(hist.str());
  for (const auto& h : all) EXPECT_EQ(h, all[0]);

  // Resume: 1 epoch, then --resume to 2, is the uninterrupted run.
  std::ostringstream log1, log2;
  tools::run_training(config(root + "/ddp-resume", 1, 64, true), log1);
  const auto resumed = tools::run_training(
      tools::parse_train_args({"--resume", "--out", root + "/ddp-resume", "--epochs", "2", "--progress", "none",
                               "--threads", "1", "--distributed"}),
      log2);
  ASSERT_EQ(resumed.history.size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_EQ(resumed.history[e].train_loss, full.history[e].train_loss) << e;
    EXPECT_EQ(resumed.history[e].test_loss, full.history[e].test_loss) << e;
    EXPECT_EQ(resumed.history[e].test_accuracy, full.history[e].test_accuracy) << e;
  }

  // One process with batch 64 * R (rank 0 alone; the others wait at the barrier).
  if (dist::rank() == 0) {
    std::ostringstream log3;
    const auto single = tools::run_training(config(root + "/single", 2, 64 * R, false), log3);
    ASSERT_EQ(single.history.size(), 2u);
    for (size_t e = 0; e < 2; ++e) {
      // Float32 summation order differs (means over 64 and their average vs one mean over
      // 128): per-epoch mean training loss within 1e-4 relative, accuracy within 0.3 points.
      EXPECT_NEAR(full.history[e].train_loss, single.history[e].train_loss, 1e-4 * single.history[e].train_loss) << e;
      EXPECT_NEAR(full.history[e].test_accuracy, single.history[e].test_accuracy, 0.003) << e;
    }
    std::cout << "[ note ] " << R << " ranks x 64 vs 1 x " << 64 * R << ": epoch-2 train loss "
              << full.history[1].train_loss << " vs " << single.history[1].train_loss << ", test accuracy "
              << full.history[1].test_accuracy << " vs " << single.history[1].test_accuracy << "\n";
  }
  dist::barrier();
}

TEST(TrainDistributed, CompiledModeCompilesTheWrapperAndTracksEager) {
  REQUIRE_DATA();
  const std::string root = dist::all_gather_strings(test::scratch().path())[0];
  std::ostringstream le, lc;
  const auto eager = tools::run_training(config(root + "/eager1", 1, 64, true), le);
  TrainConfig c = config(root + "/compiled1", 1, 64, true);
  c.mode = "compiled";
  const auto comp = tools::run_training(c, lc);
  ASSERT_EQ(comp.history.size(), 1u);
  EXPECT_NEAR(comp.history[0].train_loss, eager.history[0].train_loss, 1e-5 * eager.history[0].train_loss);
  EXPECT_NEAR(comp.history[0].test_accuracy, eager.history[0].test_accuracy, 0.003);
  if (dist::rank() == 0) {
    const std::string log = lc.str();
    const size_t at = log.find("compiled mode: training forward/backward");
    ASSERT_NE(at, std::string::npos) << log;
    const std::string line = log.substr(at, log.find('\n', at) - at);
    EXPECT_EQ(line.find(" 0 compiled / "), std::string::npos) << line;  // the step ran compiled
  }
  dist::barrier();
}
