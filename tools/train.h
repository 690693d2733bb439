#pragma once
// `tandem train`: trains the reference MLP or CNN (nn/models.h) on Fashion-MNIST (or MNIST)
// from the command line, with a progress bar, per-epoch evaluation, a metrics CSV, an SVG
// picture of the curves and resumable checkpoints. The pieces are functions so that tests
// can drive a run without a subprocess.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace tandem::tools {

/// Settings of one training run (the command-line flags; see train_usage()).
struct TrainConfig {
  std::string dataset = "fashion-mnist";  ///< fashion-mnist | mnist
  std::string data_dir;                   ///< empty: the dataset's Debian install directory
  std::string model = "mlp";              ///< mlp | cnn
  std::string mode = "eager";             ///< eager | compiled (evaluation through tandem::compile)
  int64_t epochs = 5;
  int64_t batch_size = 128;
  std::string optimizer = "sgd";          ///< sgd | adam | adamw
  double lr = 0.05;                       ///< default: sgd 0.05, adam/adamw 1e-3 (set by parse_train_args)
  double momentum = 0.9;                  ///< SGD only
  double weight_decay = 0;                ///< sgd/adam: L2 term; adamw: decoupled (default 0.01)
  bool weight_decay_set = false;          ///< whether --weight-decay was given
  uint64_t seed = 0;
  int threads = 0;                        ///< 0: keep the default (all cores)
  std::string checkpoint;                 ///< empty: <out>/checkpoint.safetensors
  bool resume = false;
  std::string out = "runs/train";
  int64_t train_limit = 0;                ///< > 0: train on the first N training examples only
  int64_t test_limit = 0;                 ///< > 0: evaluate on the first N test examples only
  std::string progress = "auto";          ///< auto | bar | lines | none
};

/// Metrics of one finished epoch (a row of metrics.csv).
struct EpochMetrics {
  int64_t epoch = 0;          ///< 1-based
  double train_loss = 0;      ///< mean cross-entropy over the epoch's training examples
  double test_loss = 0;       ///< mean cross-entropy over the test set
  double test_accuracy = 0;   ///< fraction in [0, 1]
  double lr = 0;              ///< learning rate used
  double seconds = 0;         ///< wall time of the training part of the epoch
  double samples_per_second = 0;
};

/// What run_training returns.
struct TrainResult {
  std::vector<EpochMetrics> history;  ///< every epoch so far, resumed ones included
  bool interrupted = false;           ///< stopped by SIGINT before the last epoch
  std::string checkpoint;             ///< path of the last completed checkpoint; empty when interrupted before one
  std::string metrics_csv, curves_svg;
};

/// The --help text: every flag, its default and meaning.
std::string train_usage();

/// Parses the flags after `tandem train`. ValueError naming the flag for an unknown flag,
/// a missing or malformed value, or a value out of range. "--help" is not handled here.
TrainConfig parse_train_args(const std::vector<std::string>& args);

/// Runs training as configured, writing progress to `out`. Checkpoints after every epoch
/// (atomically: an interrupted run leaves the last completed one intact); with
/// config.resume, continues from the checkpoint, giving the same numbers as a run that
/// was never interrupted. Raises RuntimeError for missing data (naming the directory and
/// the Debian package), a missing checkpoint on --resume, or a checkpoint made with other
/// settings (naming the setting); the reader's errors for corrupt files.
TrainResult run_training(const TrainConfig& config, std::ostream& out);

/// Writes history as CSV (header: epoch,train_loss,test_loss,test_accuracy,lr,seconds,
/// samples_per_second) to `path`, atomically. RuntimeError naming the file on failure.
void write_metrics_csv(const std::string& path, const std::vector<EpochMetrics>& history);

/// An SVG picture (two panels: train/test loss and test accuracy per epoch) of history.
std::string curves_svg(const std::vector<EpochMetrics>& history, const std::string& title);

/// Entry point of `tandem train ARGS...`: returns the process exit status (0 done,
/// 1 error, 2 bad usage, 130 interrupted).
int train_main(const std::vector<std::string>& args);

}  // namespace tandem::tools
