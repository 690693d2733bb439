#pragma once
// `tandem train`: trains the reference MLP or CNN (nn/models.h) on Fashion-MNIST (or MNIST)
// from the command line, with a progress bar, per-epoch evaluation, a metrics CSV, an SVG
// picture of the curves and resumable checkpoints. The pieces are functions so that tests
// can drive a run without a subprocess.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace tandem::data {
class Dataset;
}

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
  std::string out;                        ///< empty: a new numbered directory runs/N (resume: the checkpoint's)
  int64_t train_limit = 0;                ///< > 0: train on the first N training examples only
  int64_t test_limit = 0;                 ///< > 0: evaluate on the first N test examples only
  std::string progress = "auto";          ///< auto | bar | lines | none
  std::string lr_schedule = "none";       ///< none | step | cosine | onecycle
  int64_t lr_step_size = 0;               ///< step: epochs between decays (0: max(1, epochs / 3))
  double lr_gamma = 0.1;                  ///< step: decay factor
  int64_t lr_t_max = 0;                   ///< cosine / onecycle: schedule length in epochs (0: --epochs)
  double lr_min = 0;                      ///< cosine: eta_min
  double lr_max = 0;                      ///< onecycle: peak lr (0: --lr)
  double lr_pct_start = 0.3;              ///< onecycle: fraction of the steps spent rising
  std::string on_nonfinite = "stop";      ///< stop | warn: what a nan/inf loss does
  /// fp32 | bf16 (autocast bfloat16) | fp16 (autocast float16 + optim::GradScaler);
  /// parameters and optimizer state stay float32 in every mode
  std::string precision = "fp32";
  /// > 0: CompileOptions::memory_budget of the compiled step (bytes; --mode compiled only;
  /// not a checkpoint setting: it does not change the numbers)
  int64_t memory_budget = 0;
  /// Data-parallel over the ranks of an MPI job (`mpirun -np N tandem train --distributed`):
  /// --batch-size is per rank, so the global batch is batch_size x N; rank 0 alone prints,
  /// evaluates and writes (see run_training)
  bool distributed = false;
  int64_t bucket_mb = 25;                 ///< --distributed: DDP bucket cap in MiB
  std::set<std::string> given;            ///< flags given on the command line, without "--"; with
                                          ///< --resume, the other settings come from the checkpoint
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
  std::string stopped;                ///< non-empty: why the run stopped early (a non-finite loss)
  bool evaluated_only = false;        ///< --resume of a finished run: evaluated, nothing trained
  double final_test_loss = 0, final_test_accuracy = 0;  ///< of the last evaluation
  double wall_seconds = 0;            ///< the whole run, evaluation and saving included
  std::string out;                    ///< the output directory used
  std::string checkpoint;             ///< path of the last completed checkpoint; empty when interrupted before one
  std::string metrics_csv, curves_svg;
};

/// The --help text: every flag, its default and meaning.
std::string train_usage();

/// Parses the flags after `tandem train`. ValueError naming the flag for an unknown flag,
/// a missing or malformed value, or a value out of range. "--help" is not handled here.
TrainConfig parse_train_args(const std::vector<std::string>& args);

/// Runs training as configured, writing progress to `out`. Without config.out, creates a
/// new numbered directory under runs/ (see new_run_dir) and prints it first. Writes
/// metrics.csv and curves.svg atomically after every epoch, and ends with a one-line
/// summary (final and best test accuracy, wall time). A non-finite loss stops the run
/// (result.stopped says why, nothing of the diverged epoch is saved) unless
/// config.on_nonfinite is "warn". Checkpoints after every epoch (atomically: an
/// interrupted run leaves the last completed one intact); with config.resume, continues
/// from the checkpoint (config.checkpoint, else OUT/checkpoint.safetensors), taking every
/// setting not in config.given from it (and --epochs from its planned total), giving the
/// same numbers as a run that was never interrupted; a checkpoint already at --epochs is
/// evaluated instead (result.evaluated_only). Raises RuntimeError for missing data (naming
/// the directory and the Debian package), an unusable --out or --checkpoint (before any
/// training), a missing checkpoint on --resume, or a checkpoint whose setting differs from
/// one given (naming the setting); ValueError for schedule flags that do not fit; the
/// reader's errors for corrupt files.
///
/// With config.distributed (the process group must be initialised: train_main does it),
/// every rank trains its DistributedSampler shard of each epoch (--batch-size examples per
/// rank and step, so the global batch is batch_size x world_size and the learning rate
/// applies to that global batch's mean gradient) through
/// nn::parallel::DistributedDataParallel; the reported batch losses are the global means
/// (one all-reduce of the loss per step, so every rank takes the same stop/warn decision).
/// Rank 0 alone creates the output directory, evaluates (and broadcasts the test metrics,
/// so all ranks keep the same history), writes metrics, curves and checkpoints (the
/// wrapped model's state, interchangeable with a single-process run's); other ranks
/// write nothing to `out`. --resume: every rank loads the checkpoint (the
/// optimizer state must agree). --mode compiled runs each step's forward and backward as
/// compiled programs (tandem::compile of the DDP wrapper) with the all-reduces at the
/// backward program's end, and the optimizer step eagerly.
TrainResult run_training(const TrainConfig& config, std::ostream& out);

/// Creates and returns a new numbered run directory under `root` ("runs/1", "runs/2", ...:
/// one more than the largest number there, so runs never replace each other; races
/// with another process creating the same number are retried). RuntimeError naming
/// `root` when it cannot be created.
std::string new_run_dir(const std::string& root = "runs");

/// The test or training split of `dataset` ("fashion-mnist" | "mnist") from `data_dir`
/// (empty: the Debian package's directory), normalised as for training (Normalize with
/// the dataset's mean/std), its first `limit` examples when limit > 0. The datasets'
/// errors (missing directory or files, corrupt files).
std::shared_ptr<const data::Dataset> load_split(const std::string& dataset, const std::string& data_dir, bool train,
                                                int64_t limit);

/// The mean and std load_split normalises `dataset`'s images with (pixel values / 255).
std::pair<double, double> dataset_normalization(const std::string& dataset);

/// Writes history as CSV (header: epoch,train_loss,test_loss,test_accuracy,lr,seconds,
/// samples_per_second) to `path`, atomically. RuntimeError naming the file on failure.
void write_metrics_csv(const std::string& path, const std::vector<EpochMetrics>& history);

/// `s` with the characters XML gives meaning to in text and attribute values (< > & ")
/// replaced by their entities, for the SVG pictures tandem writes.
std::string xml_escape(const std::string& s);

/// What a subcommand prints for an error: "tandem eval: " and the message, without the
/// "[tandem eval] " the message may already start with (`cmd` is "tandem eval").
std::string command_error_text(const std::string& cmd, const std::exception& e);

/// An SVG picture (two panels: train/test loss and test accuracy per epoch) of history,
/// with `title` on top and the legend above each panel (never over the curves).
/// Non-finite values leave a gap in the line and get a red marker labelled "nan"/"inf"
/// at the panel's top edge; a single epoch is drawn as a visible point in the middle.
std::string curves_svg(const std::vector<EpochMetrics>& history, const std::string& title);

/// Entry point of `tandem train ARGS...`: returns the process exit status (0 done,
/// 1 error, 2 bad usage, 130 interrupted).
int train_main(const std::vector<std::string>& args);

}  // namespace tandem::tools
