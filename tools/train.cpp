#include "train.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "progress.h"
#include "tandem/io/file_util.h"
#include "tandem/io/json_guard.h"
#include "tandem/tandem.h"

namespace tandem::tools {

namespace {

using Clock = std::chrono::steady_clock;

// Set by SIGINT; the loop checks it between batches. The handler does nothing else (only
// async-signal-safe work belongs in a handler). A second Ctrl-C kills the process: the
// handler is installed with SA_RESETHAND, so the kernel restores the default action as it
// delivers the first. That is still safe: checkpoints are written atomically, so the file
// on disk is always the last completed one.
volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_sigint(int) { g_interrupted = 1; }

/// Fashion-MNIST / MNIST pixel statistics of the training split (after /255), the usual
/// Normalize constants.
struct DatasetInfo {
  const char* default_root;
  const char* package;
  double mean, std;
};

DatasetInfo dataset_info(const std::string& name) {
  if (name == "fashion-mnist") return {data::datasets::FashionMNIST::kDefaultRoot, "dataset-fashion-mnist", 0.2860, 0.3530};
  return {"", "", 0.1307, 0.3081};  // mnist: no Debian package ships it
}

std::shared_ptr<const data::Dataset> load_split(const TrainConfig& c, bool train) {
  const DatasetInfo info = dataset_info(c.dataset);
  const std::string root = c.data_dir.empty() ? info.default_root : c.data_dir;
  std::shared_ptr<const data::Dataset> base;
  if (c.dataset == "fashion-mnist") base = std::make_shared<data::datasets::FashionMNIST>(root, train);
  else base = std::make_shared<data::datasets::MNIST>(root, train);
  // The models take 28x28 images: refuse other sizes now, naming the file, not mid-epoch.
  const auto& mnist = static_cast<const data::datasets::MNIST&>(*base);
  if (mnist.images().size(1) != 28 || mnist.images().size(2) != 28)
    throw RuntimeError("[tandem train] " + mnist.images_file() + " holds images of " +
                       std::to_string(mnist.images().size(1)) + "x" + std::to_string(mnist.images().size(2)) +
                       " pixels; the models take 28x28 (MNIST-style) images");
  const int64_t limit = train ? c.train_limit : c.test_limit;
  if (limit > 0 && limit < base->size()) {
    std::vector<int64_t> idx(static_cast<size_t>(limit));
    for (int64_t i = 0; i < limit; ++i) idx[static_cast<size_t>(i)] = i;
    base = std::make_shared<data::Subset>(base, std::move(idx));
  }
  data::transforms::Normalize norm(info.mean, info.std);
  return std::make_shared<data::TransformDataset>(base, [norm](const Tensor& x) { return norm(x); });
}

std::unique_ptr<optim::Optimizer> make_optimizer(const TrainConfig& c, const std::vector<Tensor>& params) {
  if (c.optimizer == "sgd")
    return std::make_unique<optim::SGD>(params, optim::SGDOptions(c.lr).momentum(c.momentum).weight_decay(c.weight_decay));
  if (c.optimizer == "adam") return std::make_unique<optim::Adam>(params, optim::AdamOptions(c.lr).weight_decay(c.weight_decay));
  return std::make_unique<optim::AdamW>(params, optim::AdamWOptions(c.lr).weight_decay(c.weight_decay));
}

/// The shortest text that reads back as exactly `v` ("0.05", not "0.050000000000000003").
std::string number_text(double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

/// The settings a checkpoint must agree on to be resumed (everything that changes the
/// numbers except --epochs, which may grow), most telling first: a resume with another
/// --optimizer is reported as that, not as the other default --lr it implies.
std::vector<std::pair<std::string, std::string>> run_identity(const TrainConfig& c) {
  return {{"dataset", c.dataset},          {"model", c.model},
          {"optimizer", c.optimizer},      {"lr", number_text(c.lr)},
          {"momentum", number_text(c.momentum)}, {"weight-decay", number_text(c.weight_decay)},
          {"batch-size", std::to_string(c.batch_size)}, {"seed", std::to_string(c.seed)},
          {"train-limit", std::to_string(c.train_limit)}, {"test-limit", std::to_string(c.test_limit)}};
}

bool is_number_setting(const std::string& k) { return k == "lr" || k == "momentum" || k == "weight-decay"; }

/// Whether a checkpoint's value `file` of setting `k` is this run's `run`. Numbers compare
/// by value: earlier checkpoints wrote them with 17 digits ("0.050000000000000003").
bool same_setting(const std::string& k, const std::string& file, const std::string& run) {
  if (!is_number_setting(k)) return file == run;
  try {
    size_t pos = 0;
    const double v = std::stod(file, &pos);
    return pos == file.size() && v == std::stod(run);
  } catch (const std::exception&) {
    return false;
  }
}

/// A checkpoint's value of setting `k` as --help spells it (numbers shortest).
std::string setting_text(const std::string& k, const std::string& file) {
  if (!is_number_setting(k)) return file;
  try {
    return number_text(std::stod(file));
  } catch (const std::exception&) {
    return file;
  }
}

nlohmann::json history_json(const std::vector<EpochMetrics>& h) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& m : h)
    a.push_back({m.epoch, m.train_loss, m.test_loss, m.test_accuracy, m.lr, m.seconds, m.samples_per_second});
  return a;
}

std::vector<EpochMetrics> history_from_json(const std::string& s) {
  if (size_t at = io::json_depth_violation(s); at != std::string::npos)
    throw ValueError("nests deeper than " + std::to_string(io::kJsonMaxDepth) + " levels (at character " +
                     std::to_string(at) + ")");
  std::vector<EpochMetrics> h;
  const nlohmann::json rows = nlohmann::json::parse(s);
  if (!rows.is_array()) throw ValueError("train.history is not an array");
  for (const auto& r : rows) {
    EpochMetrics m;
    m.epoch = r.at(0).get<int64_t>();
    m.train_loss = r.at(1).get<double>();
    m.test_loss = r.at(2).get<double>();
    m.test_accuracy = r.at(3).get<double>();
    m.lr = r.at(4).get<double>();
    m.seconds = r.at(5).get<double>();
    m.samples_per_second = r.at(6).get<double>();
    h.push_back(m);
  }
  return h;
}

/// Mean loss and accuracy of `model` over `loader` (eval mode, no tape). With a compiled
/// forward, the logits come from it instead of the module's eager forward.
std::pair<double, double> evaluate(nn::Module& model, data::DataLoader& loader,
                                   const std::function<Tensor(const Tensor&)>& forward) {
  InferenceMode guard;
  model.eval();
  double loss_sum = 0;
  int64_t correct = 0, n = 0;
  for (auto& b : loader) {
    Tensor logits = forward(b.data);
    loss_sum += cross_entropy(logits, b.target, {}, -100, "sum").item<double>();
    correct += eq(argmax(logits, 1), b.target).sum().item<int64_t>();
    n += b.data.size(0);
  }
  model.train();
  return {n ? loss_sum / static_cast<double>(n) : 0.0, n ? static_cast<double>(correct) / static_cast<double>(n) : 0.0};
}

/// Creates `dir` (named by `flag` in errors) unless it exists, and checks that files can
/// be created in it. RuntimeError naming the flag, the directory and the reason.
void make_dir(const std::string& flag, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw RuntimeError("[tandem train] " + flag + ": cannot create the directory " + dir.string() + ": " +
                       (ec ? ec.message() : std::string("a file of that name exists")));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw RuntimeError("[tandem train] " + flag + ": cannot write to the directory " + dir.string() + ": " +
                       std::strerror(errno));
}

std::string fmt(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

/// A finite number; with `positive` (else non-negative) checked too, so the message
/// quotes the value as given.
double parse_double(const std::string& flag, const std::string& v, bool positive) {
  double d = std::nan("");
  try {
    size_t pos = 0;
    d = std::stod(v, &pos);
    if (pos != v.size()) d = std::nan("");
  } catch (const std::exception&) {
  }
  if (!std::isfinite(d)) throw ValueError("[tandem train] " + flag + " got \"" + v + "\", expected a finite number");
  if (positive ? !(d > 0) : d < 0)
    throw ValueError("[tandem train] " + flag + " got \"" + v + "\", expected a " +
                     (positive ? "positive number" : "number >= 0"));
  return d;
}

int64_t parse_int(const std::string& flag, const std::string& v, int64_t lo,
                  int64_t hi = std::numeric_limits<int64_t>::max()) {
  const std::string expected = "expected an integer " + (hi == std::numeric_limits<int64_t>::max()
                                                              ? ">= " + std::to_string(lo)
                                                              : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  bool too_large = false;
  try {
    size_t pos = 0;
    long long x = std::stoll(v, &pos);
    if (pos == v.size() && x >= lo && x <= hi) return x;
    too_large = pos == v.size() && x > hi;
  } catch (const std::out_of_range&) {
    too_large = v.find('-') == std::string::npos;  // stoll overflows: too large (or too small) for int64
  } catch (const std::exception&) {
  }
  throw ValueError("[tandem train] " + flag + " got " + io::excerpt(v) + (too_large ? ", which is too large; " : ", ") +
                   expected);
}

std::string choice(const std::string& flag, const std::string& v, std::initializer_list<const char*> options) {
  std::string list;
  for (const char* o : options) {
    if (v == o) return v;
    list += (list.empty() ? "" : " | ") + std::string(o);
  }
  throw ValueError("[tandem train] " + flag + " got \"" + v + "\", expected one of " + list);
}

}  // namespace

std::string train_usage() {
  return R"(usage: tandem train [FLAGS]

Trains a small network on Fashion-MNIST (or MNIST) and evaluates it after every epoch.

  --dataset NAME       fashion-mnist (default) | mnist
  --data DIR           directory of the gzip'd IDX files (default for fashion-mnist:
                       /usr/share/datasets/fashion-mnist, from the Debian package
                       dataset-fashion-mnist; mnist has no default)
  --model NAME         mlp (default): 784-256-128-10 with ReLU
                       cnn: conv 1->32 3x3 + ReLU + maxpool 2, conv 32->64 3x3 + ReLU +
                       maxpool 2, linear 3136->128 + ReLU, linear 128->10
  --mode NAME          eager (default) | compiled: evaluate the test set through
                       tandem::compile (training steps run eagerly with autograd)
  --epochs N           epochs to train (default 5); with --resume, the total to reach
  --batch-size B       examples per training batch (default 128)
  --optimizer NAME     sgd (default) | adam | adamw
  --lr X               learning rate (default: sgd 0.05, adam and adamw 0.001)
  --momentum M         SGD momentum (default 0.9)
  --weight-decay W     L2 penalty for sgd/adam, decoupled decay for adamw
                       (default 0; adamw 0.01)
  --seed S             seed of the initial weights and the shuffling (default 0);
                       the same seed gives the same metrics
  --threads T          threads for the ops (default: all cores)
  --checkpoint PATH    checkpoint written after every epoch
                       (default OUT/checkpoint.safetensors)
  --resume             continue from --checkpoint (same settings required); the result
                       equals an uninterrupted run
  --out DIR            where metrics.csv, curves.svg and the checkpoint go
                       (default runs/train)
  --train-limit N      train on the first N training examples only (default: all)
  --test-limit N       evaluate on the first N test examples only (default: all)
  --progress MODE      auto (default: a bar on a terminal, else lines) | bar | lines | none
  --help               this text

Ctrl-C stops after the current batch; the last completed epoch's checkpoint stays intact
and `--resume` continues from it.
)";
}

TrainConfig parse_train_args(const std::vector<std::string>& args) {
  TrainConfig c;
  bool lr_set = false;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool has_inline = false;
    if (auto eq_pos = flag.find('='); flag.rfind("--", 0) == 0 && eq_pos != std::string::npos) {
      value = flag.substr(eq_pos + 1);
      flag = flag.substr(0, eq_pos);
      has_inline = true;
    }
    if (flag == "--resume") {
      if (has_inline) throw ValueError("[tandem train] --resume takes no value");
      c.resume = true;
      continue;
    }
    static const char* kValued[] = {"--dataset", "--data", "--model", "--mode", "--epochs", "--batch-size",
                                    "--optimizer", "--lr", "--momentum", "--weight-decay", "--seed", "--threads",
                                    "--checkpoint", "--out", "--train-limit", "--test-limit", "--progress"};
    bool known = false;
    for (const char* k : kValued) known = known || flag == k;
    if (!known) throw ValueError("[tandem train] unknown flag \"" + args[i] + "\" (see tandem train --help)");
    if (!has_inline) {
      if (i + 1 >= args.size()) throw ValueError("[tandem train] " + flag + " needs a value");
      value = args[++i];
    }
    if (flag == "--dataset") c.dataset = choice(flag, value, {"fashion-mnist", "mnist"});
    else if (flag == "--data") c.data_dir = value;
    else if (flag == "--model") c.model = choice(flag, value, {"mlp", "cnn"});
    else if (flag == "--mode") c.mode = choice(flag, value, {"eager", "compiled"});
    else if (flag == "--epochs") c.epochs = parse_int(flag, value, 1);
    else if (flag == "--batch-size") c.batch_size = parse_int(flag, value, 1);
    else if (flag == "--optimizer") c.optimizer = choice(flag, value, {"sgd", "adam", "adamw"});
    else if (flag == "--lr") {
      c.lr = parse_double(flag, value, true);
      lr_set = true;
    }
    else if (flag == "--momentum") c.momentum = parse_double(flag, value, false);
    else if (flag == "--weight-decay") {
      c.weight_decay = parse_double(flag, value, false);
      c.weight_decay_set = true;
    } else if (flag == "--seed") c.seed = static_cast<uint64_t>(parse_int(flag, value, 0));
    else if (flag == "--threads") c.threads = static_cast<int>(parse_int(flag, value, 1, kMaxThreads));
    else if (flag == "--checkpoint") c.checkpoint = value;
    else if (flag == "--out") c.out = value;
    else if (flag == "--train-limit") c.train_limit = parse_int(flag, value, 1);
    else if (flag == "--test-limit") c.test_limit = parse_int(flag, value, 1);
    else if (flag == "--progress") c.progress = choice(flag, value, {"auto", "bar", "lines", "none"});
  }
  if (!lr_set) c.lr = c.optimizer == "sgd" ? 0.05 : 1e-3;
  if (!c.weight_decay_set && c.optimizer == "adamw") c.weight_decay = 0.01;
  if (c.dataset == "mnist" && c.data_dir.empty())
    throw ValueError("[tandem train] --dataset mnist needs --data DIR (no Debian package ships MNIST)");
  if (c.out.empty()) throw ValueError("[tandem train] --out got an empty path");
  if (c.checkpoint.empty()) c.checkpoint = (std::filesystem::path(c.out) / "checkpoint.safetensors").string();
  return c;
}

void write_metrics_csv(const std::string& path, const std::vector<EpochMetrics>& history) {
  std::ostringstream os;
  os << "epoch,train_loss,test_loss,test_accuracy,lr,seconds,samples_per_second\n" << std::setprecision(9);
  for (const auto& m : history)
    os << m.epoch << ',' << m.train_loss << ',' << m.test_loss << ',' << m.test_accuracy << ',' << m.lr << ','
       << m.seconds << ',' << m.samples_per_second << '\n';
  const std::string text = os.str();
  io::atomic_write(path, "tandem train", [&](io::FileWriter& w) { w.write(text.data(), text.size()); });
}

TrainResult run_training(const TrainConfig& c, std::ostream& out) {
  if (c.threads > 0) set_num_threads(c.threads);
  // Output places before any work: a run must not train an epoch to fail at its first save.
  make_dir("--out", c.out);
  if (std::filesystem::is_directory(c.checkpoint))
    throw RuntimeError("[tandem train] --checkpoint " + c.checkpoint + " is a directory, expected a file path");
  if (auto dir = std::filesystem::path(c.checkpoint).parent_path(); !dir.empty()) make_dir("--checkpoint", dir);

  // Data first: a missing directory is the most likely first-run problem.
  auto train_set = load_split(c, true);
  auto test_set = load_split(c, false);
  data::DataLoader train_loader(train_set, {.batch_size = c.batch_size, .shuffle = true, .seed = c.seed});
  data::DataLoader test_loader(test_set, {.batch_size = 1000, .shuffle = false});

  manual_seed(c.seed);
  std::shared_ptr<nn::Sequential> model = c.model == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(c, model->parameters());

  // Evaluation forward: the module itself, or a compiled program of it.
  std::function<Tensor(const Tensor&)> eval_forward = [&](const Tensor& x) { return model->forward(x); };
  // Parameters and buffers are inputs of the compiled program, so the optimizer's updates
  // are seen without recompiling; the last (smaller) test batch adds a second signature.
  std::shared_ptr<nn::CompiledModule> compiled;
  if (c.mode == "compiled") {
    compiled = compile(std::static_pointer_cast<nn::Module>(model));
    eval_forward = [&](const Tensor& x) { return (*compiled)(x); };
  }

  TrainResult result;
  result.checkpoint = c.checkpoint;
  const auto identity = run_identity(c);
  int64_t start_epoch = 0;
  if (c.resume) {
    if (!std::filesystem::exists(c.checkpoint))
      throw RuntimeError("[tandem train] --resume: no checkpoint at " + c.checkpoint +
                         " (run without --resume first, or pass --checkpoint PATH)");
    // The settings first, so that a checkpoint of another model or optimizer is named as
    // such rather than failing on its tensor names.
    const std::string where = "[tandem train] --resume: " + c.checkpoint;
    const io::Metadata meta = io::read_checkpoint(c.checkpoint).metadata;
    auto epoch_it = meta.find("train.epoch"), history_it = meta.find("train.history");
    if (epoch_it == meta.end() || history_it == meta.end())
      throw RuntimeError(where + " was not written by tandem train (no train.epoch / train.history metadata)");
    for (const auto& [k, v] : identity) {
      auto it = meta.find("train." + k);
      if (it == meta.end() || !same_setting(k, it->second, v))
        throw RuntimeError(where + " was made with --" + k + " " +
                           (it == meta.end() ? "(unknown)" : io::clip(setting_text(k, it->second), 64)) + ", this run has --" + k +
                           " " + v);
    }
    try {
      start_epoch = parse_int("train.epoch", epoch_it->second, 0);
      result.history = history_from_json(history_it->second);
    } catch (const std::exception& e) {
      throw RuntimeError(where + ": malformed train.epoch / train.history metadata: " + io::clip(e.what()));
    }
    // The history must be the epochs 1..train.epoch, one row each: anything else means an
    // edited or mixed-up file, and resuming would misnumber epochs or plot a wrong curve.
    for (size_t i = 0; i < result.history.size(); ++i)
      if (result.history[i].epoch != static_cast<int64_t>(i) + 1)
        throw RuntimeError(where + ": inconsistent metadata: train.history row " + std::to_string(i) + " is epoch " +
                           std::to_string(result.history[i].epoch) + ", expected " + std::to_string(i + 1));
    if (static_cast<int64_t>(result.history.size()) != start_epoch)
      throw RuntimeError(where + ": inconsistent metadata: train.epoch is " + std::to_string(start_epoch) +
                         " but train.history holds " + std::to_string(result.history.size()) + " epoch(s)");
    io::load_checkpoint(c.checkpoint, *model, opt.get());
    out << "resumed from " << c.checkpoint << " after epoch " << start_epoch << "\n";
  }

  // From here on Ctrl-C stops between batches (installed before the header line, which
  // tells a watcher the run is interruptible); the previous handler comes back on return
  // or on an error.
  g_interrupted = 0;
  struct SigintGuard {
    struct sigaction previous {};
    SigintGuard() {
      struct sigaction sa {};
      sa.sa_handler = on_sigint;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = SA_RESETHAND | SA_RESTART;  // one-shot; interrupted reads and writes resume
      sigaction(SIGINT, &sa, &previous);
    }
    ~SigintGuard() { sigaction(SIGINT, &previous, nullptr); }
  } sigint_guard;

  const int64_t n_train = train_set->size();
  out << "training " << c.model << " on " << c.dataset << " (" << n_train << " train / " << test_set->size()
      << " test examples), " << c.optimizer << " lr " << c.lr << ", batch " << c.batch_size << ", "
      << get_num_threads() << " thread(s), " << c.mode << " mode\n"
      << std::flush;  // shown at once even when stdout is a pipe or a file
  if (c.resume && start_epoch >= c.epochs)
    out << "nothing to train: the checkpoint is at epoch " << start_epoch << " and --epochs is " << c.epochs
        << " (raise --epochs to continue)\n";

  const ProgressMode pmode = c.progress == "bar" ? ProgressMode::kBar
                             : c.progress == "lines" ? ProgressMode::kLines
                             : c.progress == "none"  ? ProgressMode::kNone
                             : (&out == &std::cout && isatty(STDOUT_FILENO)) ? ProgressMode::kBar
                                                                            : ProgressMode::kLines;
  for (int64_t epoch = start_epoch; epoch < c.epochs && !g_interrupted; ++epoch) {
    train_loader.set_epoch(epoch);
    ProgressBar bar(out, pmode, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(c.epochs), n_train);
    model->train();
    double loss_sum = 0;
    int64_t seen = 0;
    const auto t0 = Clock::now();
    for (auto& b : train_loader) {
      opt->zero_grad();
      Tensor loss = cross_entropy(model->forward(b.data), b.target);
      loss.backward();
      opt->step();
      const int64_t n = b.data.size(0);
      loss_sum += loss.item<double>() * static_cast<double>(n);
      seen += n;
      bar.update(seen, loss_sum / static_cast<double>(seen));
      if (g_interrupted) break;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (g_interrupted) {
      bar.finish();
      break;
    }
    bar.finish();
    auto [test_loss, test_acc] = evaluate(*model, test_loader, eval_forward);
    if (compiled && epoch == start_epoch) {
      // What the compiled evaluation runs on: its programs and their planned arena.
      const jit::CompiledFunction& f = compiled->function();
      out << "compiled evaluation: " << f.num_programs() << " program(s), " << f.compiled_calls() << " compiled / "
          << f.eager_calls() << " eager call(s); " << compiled->memory_summary() << "\n";
      for (const auto& w : f.warnings()) out << "  note: " << w << "\n";
    }
    EpochMetrics m{epoch + 1, loss_sum / static_cast<double>(seen), test_loss, test_acc, c.lr, secs,
                   static_cast<double>(seen) / secs};
    result.history.push_back(m);
    out << "epoch " << m.epoch << "/" << c.epochs << ": train loss " << fmt(m.train_loss, 4) << ", test loss "
        << fmt(m.test_loss, 4) << ", test accuracy " << fmt(100 * m.test_accuracy, 2) << "%, " << fmt(secs, 1) << " s ("
        << fmt(m.samples_per_second, 0) << " samples/s)\n";
    io::Metadata meta;
    for (const auto& [k, v] : identity) meta["train." + k] = v;
    meta["train.epoch"] = std::to_string(epoch + 1);
    meta["train.history"] = history_json(result.history).dump();
    io::save_checkpoint(c.checkpoint, *model, opt.get(), meta);
    out << std::flush;
  }
  result.interrupted = g_interrupted != 0;

  result.metrics_csv = (std::filesystem::path(c.out) / "metrics.csv").string();
  result.curves_svg = (std::filesystem::path(c.out) / "curves.svg").string();
  write_metrics_csv(result.metrics_csv, result.history);
  const std::string svg = curves_svg(result.history, "tandem train --model " + c.model + " --optimizer " + c.optimizer);
  io::atomic_write(result.curves_svg, "tandem train", [&](io::FileWriter& w) { w.write(svg.data(), svg.size()); });
  if (result.interrupted) {
    const int64_t done = result.history.empty() ? 0 : result.history.back().epoch;
    if (done)
      out << "\ninterrupted: the checkpoint of epoch " << done << " is intact at " << c.checkpoint
          << "\ncontinue with the same flags plus --resume\n";
    else
      out << "\ninterrupted: no epoch completed, no checkpoint written\nrun the same command again to start over\n";
    if (!done) result.checkpoint.clear();
  }
  return result;
}

namespace {
/// "tandem train: " and the message, without the "[tandem train] " the message may start with.
std::string error_text(const std::exception& e) {
  std::string m = e.what();
  const std::string own = "[tandem train] ";
  if (m.rfind(own, 0) == 0) m.erase(0, own.size());
  return "tandem train: " + m;
}
}  // namespace

int train_main(const std::vector<std::string>& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << train_usage();
      return 0;
    }
  TrainConfig config;
  try {
    config = parse_train_args(args);
  } catch (const Error& e) {
    std::cerr << error_text(e) << "\n";
    return 2;
  }
  try {
    TrainResult r = run_training(config, std::cout);
    std::cout << "metrics:    " << r.metrics_csv << "\ncurves:     " << r.curves_svg << "\ncheckpoint: "
              << (r.checkpoint.empty() ? "none" : r.checkpoint) << "\n";
    return r.interrupted ? 130 : 0;
  } catch (const std::exception& e) {
    std::cerr << error_text(e) << "\n";
    return 1;
  }
}

}  // namespace tandem::tools
