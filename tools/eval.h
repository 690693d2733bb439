#pragma once
// `tandem eval` and `tandem predict`: use a checkpoint of `tandem train` (the model and
// data set come from its metadata) to measure the test set (loss, accuracy, per-class
// accuracy, a confusion matrix as text and as an SVG picture) or to classify images of
// the data set or of an IDX file, eagerly or through tandem::compile. Both modes print
// identical numbers (the compiled programs run the same kernels). The pieces are
// functions so that tests can drive them without a subprocess.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace tandem::tools {

/// Settings of `tandem eval` (see eval_usage()).
struct EvalConfig {
  std::string checkpoint;      ///< required: a checkpoint written by tandem train
  std::string model;           ///< empty: the checkpoint's train.model
  std::string dataset;         ///< empty: the checkpoint's train.dataset
  std::string data_dir;        ///< empty: the data set's default directory
  std::string mode = "eager";  ///< eager | compiled
  int64_t batch_size = 1000;
  int64_t test_limit = 0;      ///< > 0: the first N test examples only
  int threads = 0;             ///< 0: keep the default
  std::string svg;             ///< confusion matrix picture; empty: confusion.svg beside the checkpoint
};

/// What run_eval measured.
struct EvalResult {
  std::string model, dataset;
  int64_t examples = 0;
  double loss = 0;      ///< mean cross-entropy
  double accuracy = 0;  ///< fraction in [0, 1]
  std::vector<std::string> classes;
  std::vector<std::vector<int64_t>> confusion;  ///< [true class][predicted class] counts
  std::string svg;                              ///< path of the picture written
};

/// The --help text of `tandem eval`.
std::string eval_usage();
/// Parses the flags after `tandem eval`. ValueError naming the flag for an unknown flag, a
/// missing or malformed value, or no --checkpoint. "--help" is not handled here.
EvalConfig parse_eval_args(const std::vector<std::string>& args);
/// Evaluates the checkpoint on the test set, printing the report to `out` and writing the
/// confusion matrix picture atomically. RuntimeError naming the file for a checkpoint
/// that is missing, corrupt or not of tandem train (without --model/--dataset);
/// load_checkpoint's ValueError (naming the file and the keys) for another model's; the
/// data sets' errors for missing data.
EvalResult run_eval(const EvalConfig& config, std::ostream& out);
/// An SVG picture of `confusion` ([true][predicted], square, one row per class name):
/// cells shaded by the fraction of their row, counts written in, the diagonal outlined.
std::string confusion_svg(const std::vector<std::vector<int64_t>>& confusion, const std::vector<std::string>& classes,
                          const std::string& title);
/// Entry point of `tandem eval ARGS...`: 0 done, 1 error, 2 bad usage.
int eval_main(const std::vector<std::string>& args);

/// Settings of `tandem predict` (see predict_usage()).
struct PredictConfig {
  std::string checkpoint, model, dataset, data_dir;  ///< as EvalConfig
  std::string mode = "eager";                         ///< eager | compiled
  std::string split = "test";                         ///< test | train: where --index points
  std::vector<int64_t> indices;                       ///< examples of the split, or
  std::string images;                                 ///< an IDX file of uint8 [N, 28, 28] or [28, 28]
  int threads = 0;
};

/// One classified image.
struct Prediction {
  std::string source;      ///< "test[5]" or "FILE[5]"
  int64_t predicted = 0;   ///< class index
  std::string name;        ///< its class name
  double probability = 0;  ///< softmax probability of the predicted class
  int64_t target = -1;     ///< the true class for data set images, else -1
};

/// The --help text of `tandem predict`.
std::string predict_usage();
/// Parses the flags after `tandem predict`. ValueError naming the flag (unknown flag,
/// malformed index list, neither or both of --index and --images, no --checkpoint).
PredictConfig parse_predict_args(const std::vector<std::string>& args);
/// Classifies the images, one line each to `out`. IndexError naming the index and the
/// split's size for an index out of range; RuntimeError naming the file for an IDX file
/// that is not uint8 images of 28x28; run_eval's checkpoint errors.
std::vector<Prediction> run_predict(const PredictConfig& config, std::ostream& out);
/// Entry point of `tandem predict ARGS...`: 0 done, 1 error, 2 bad usage.
int predict_main(const std::vector<std::string>& args);

}  // namespace tandem::tools
