#include "train.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
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
#include <tuple>
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

/// The settings a checkpoint records and a resume takes from it (everything that changes
/// the numbers except --epochs, which may grow), most telling first: a resume with another
/// --optimizer is reported as that, not as the other default --lr it implies. The
/// schedule's parameters follow --lr-schedule (only those of the chosen schedule count).
const std::vector<std::string>& setting_names() {
  static const std::vector<std::string> names = {
      "dataset",     "model",       "optimizer",    "lr",       "momentum", "weight-decay",
      "batch-size",  "seed",        "train-limit",  "test-limit", "lr-schedule", "lr-step-size",
      "lr-gamma",    "lr-t-max",    "lr-min",       "lr-max",   "lr-pct-start", "precision"};
  return names;
}

/// The schedule a schedule parameter belongs to ("" for the other settings).
bool is_schedule_param(const std::string& k) { return k.rfind("lr-", 0) == 0 && k != "lr-schedule"; }

/// Whether setting `k` matters for `c` (a schedule parameter of another schedule does not).
bool setting_applies(const TrainConfig& c, const std::string& k) {
  if (!is_schedule_param(k)) return true;
  if (k == "lr-step-size" || k == "lr-gamma") return c.lr_schedule == "step";
  if (k == "lr-t-max") return c.lr_schedule == "cosine" || c.lr_schedule == "onecycle";
  if (k == "lr-min") return c.lr_schedule == "cosine";
  return c.lr_schedule == "onecycle";  // lr-max, lr-pct-start
}

/// The value of setting `k` in `c`, as a flag value (numbers shortest).
std::string setting_value(const TrainConfig& c, const std::string& k) {
  if (k == "dataset") return c.dataset;
  if (k == "model") return c.model;
  if (k == "optimizer") return c.optimizer;
  if (k == "lr") return number_text(c.lr);
  if (k == "momentum") return number_text(c.momentum);
  if (k == "weight-decay") return number_text(c.weight_decay);
  if (k == "batch-size") return std::to_string(c.batch_size);
  if (k == "seed") return std::to_string(c.seed);
  if (k == "train-limit") return std::to_string(c.train_limit);
  if (k == "test-limit") return std::to_string(c.test_limit);
  if (k == "lr-schedule") return c.lr_schedule;
  if (k == "lr-step-size") return std::to_string(c.lr_step_size);
  if (k == "lr-gamma") return number_text(c.lr_gamma);
  if (k == "lr-t-max") return std::to_string(c.lr_t_max);
  if (k == "lr-min") return number_text(c.lr_min);
  if (k == "lr-max") return number_text(c.lr_max);
  if (k == "precision") return c.precision;
  return number_text(c.lr_pct_start);  // lr-pct-start
}

/// The settings of `c` a checkpoint records, in setting_names() order.
std::vector<std::pair<std::string, std::string>> run_identity(const TrainConfig& c) {
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& k : setting_names())
    if (setting_applies(c, k)) r.emplace_back(k, setting_value(c, k));
  return r;
}

bool is_number_setting(const std::string& k) {
  return k == "lr" || k == "momentum" || k == "weight-decay" || k == "lr-gamma" || k == "lr-min" || k == "lr-max" ||
         k == "lr-pct-start";
}

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
    // JSON has no nan/inf: nlohmann writes them as null (a --on-nonfinite warn run).
    auto num = [&](size_t i) { return r.at(i).is_null() ? std::nan("") : r.at(i).get<double>(); };
    m.epoch = r.at(0).get<int64_t>();
    m.train_loss = num(1);
    m.test_loss = num(2);
    m.test_accuracy = num(3);
    m.lr = num(4);
    m.seconds = num(5);
    m.samples_per_second = num(6);
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
/// be created in it by creating and removing a probe file (permission bits alone miss
/// read-only mounts, full quotas and ACLs). RuntimeError naming the flag, the directory
/// and the reason.
void make_dir(const std::string& flag, const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw RuntimeError("[tandem train] " + flag + ": cannot create the directory " + dir.string() + ": " +
                       (ec ? ec.message() : std::string("a file of that name exists")));
  const std::string probe = (dir / (".tandem-probe-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  const bool wrote = fd >= 0 && ::write(fd, "x", 1) == 1;
  const int err = errno;
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
  if (!wrote)
    throw RuntimeError("[tandem train] " + flag + ": cannot write to the directory " + dir.string() + ": " +
                       std::strerror(err));
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

/// A size in bytes: a number with an optional unit, binary (KiB, MiB, GiB; K, M, G) or
/// decimal (kB, MB, GB), e.g. "64MiB", "1.5G", "1000000". ValueError quoting the value.
int64_t parse_bytes(const std::string& flag, const std::string& v) {
  size_t pos = 0;
  double d = std::nan("");
  try {
    d = std::stod(v, &pos);
  } catch (const std::exception&) {
  }
  const std::string unit = std::isfinite(d) ? v.substr(pos) : "";
  static const std::pair<const char*, double> kUnits[] = {
      {"", 1},          {"B", 1},          {"K", 1024.0},   {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0},
      {"G", 1073741824.0}, {"GiB", 1073741824.0}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}};
  double scale = -1;
  for (const auto& [name, f] : kUnits)
    if (unit == name) scale = f;
  const double bytes = d * scale;
  if (!std::isfinite(d) || scale < 0 || !(bytes >= 1) || bytes > 9e18)
    throw ValueError("[tandem train] " + flag + " got " + io::excerpt(v) +
                     ", expected a positive size in bytes with an optional unit (64MiB, 1.5GiB, 500MB, 1048576)");
  return static_cast<int64_t>(bytes);
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

std::pair<double, double> dataset_normalization(const std::string& dataset) {
  const DatasetInfo info = dataset_info(dataset);
  return {info.mean, info.std};
}

std::shared_ptr<const data::Dataset> load_split(const std::string& dataset, const std::string& data_dir, bool train,
                                                int64_t limit) {
  const DatasetInfo info = dataset_info(dataset);
  const std::string root = data_dir.empty() ? info.default_root : data_dir;
  std::shared_ptr<const data::Dataset> base;
  if (dataset == "fashion-mnist") base = std::make_shared<data::datasets::FashionMNIST>(root, train);
  else base = std::make_shared<data::datasets::MNIST>(root, train);
  // The models take 28x28 images: refuse other sizes now, naming the file, not mid-epoch.
  const auto& mnist = static_cast<const data::datasets::MNIST&>(*base);
  if (mnist.images().size(1) != 28 || mnist.images().size(2) != 28)
    throw RuntimeError("[tandem train] " + mnist.images_file() + " holds images of " +
                       std::to_string(mnist.images().size(1)) + "x" + std::to_string(mnist.images().size(2)) +
                       " pixels; the models take 28x28 (MNIST-style) images");
  if (limit > 0 && limit < base->size()) {
    std::vector<int64_t> idx(static_cast<size_t>(limit));
    for (int64_t i = 0; i < limit; ++i) idx[static_cast<size_t>(i)] = i;
    base = std::make_shared<data::Subset>(base, std::move(idx));
  }
  data::transforms::Normalize norm(info.mean, info.std);
  return std::make_shared<data::TransformDataset>(base, [norm](const Tensor& x) { return norm(x); });
}

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
  --mode NAME          eager (default) | compiled: tandem::compile the whole training
                       step (zero_grad, forward, loss, backward, optimizer step) into
                       one program, and evaluation into an inference program; same
                       numbers as eager, bit for bit
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
  --lr-schedule NAME   none (default) | step | cosine | onecycle (torch.optim.lr_scheduler)
                       step: StepLR, lr *= --lr-gamma every --lr-step-size epochs
                       cosine: CosineAnnealingLR from --lr to --lr-min over --lr-t-max
                       epochs; onecycle: OneCycleLR stepped every batch, rising from
                       --lr-max / 25 to --lr-max over --lr-pct-start of the steps, then
                       annealing (momentum / beta1 cycles 0.95 -> 0.85 unless SGD has 0)
  --lr-step-size N     step: epochs between decays (default: epochs / 3, at least 1)
  --lr-gamma G         step: decay factor (default 0.1)
  --lr-t-max N         cosine, onecycle: length of the schedule in epochs (default
                       --epochs; onecycle cannot run past it)
  --lr-min X           cosine: final lr, eta_min (default 0)
  --lr-max X           onecycle: peak lr (default --lr)
  --lr-pct-start P     onecycle: fraction of the steps spent rising, in (0, 1)
                       (default 0.3)
  --out DIR            where metrics.csv, curves.svg and the checkpoint go; checked by
                       creating and removing a file there before training (default: a
                       new numbered directory runs/1, runs/2, ..., printed at the start;
                       with --resume, the checkpoint's directory)
  --checkpoint PATH    checkpoint written after every epoch
                       (default OUT/checkpoint.safetensors; not one of OUT's other files)
  --resume             continue the run in --out DIR (or at --checkpoint PATH) with the
                       settings stored in its checkpoint: no flag needs retyping, and a
                       flag given that differs is refused by name; --epochs raises the
                       total; a finished run is evaluated instead. The result equals an
                       uninterrupted run
  --train-limit N      train on the first N training examples only (default 0: all)
  --test-limit N       evaluate on the first N test examples only (default 0: all)
  --progress MODE      auto (default: a bar on a terminal, else lines) | bar | lines | none
  --precision P        fp32 (default) | bf16: forward and loss under bfloat16 autocast
                       (matmul/conv in bfloat16 with float32 accumulation, softmax and
                       losses in float32; parameters, gradients and optimizer state stay
                       float32) | fp16: float16 autocast with dynamic loss scaling
                       (optim::GradScaler: a step whose gradients overflow is skipped);
                       evaluation runs under the same autocast
  --memory-budget SIZE compiled mode: the most memory the training step may use at its
                       peak beyond parameters, optimizer state and the batch (64MiB,
                       1.5GiB, 500MB, bytes); values alive across the peak are
                       recomputed or offloaded to a spill file ($TANDEM_SPILL_DIR, else
                       $TMPDIR, else /var/tmp) until it fits; the numbers do not change.
                       A budget below the smallest reachable peak is refused, naming it
  --on-nonfinite WHAT  stop (default): a nan/inf loss stops the run (exit status 1),
                       keeping the last good checkpoint | warn: say so once per epoch and
                       train on (the curves mark non-finite points)
  --distributed        data-parallel over the ranks of an MPI job: run as
                       `mpirun -np N tandem train --distributed ...` (as root add
                       --allow-run-as-root). Each rank trains on its shard of every
                       epoch (DistributedSampler) with --batch-size examples per step,
                       so the GLOBAL batch is --batch-size x N; gradients are averaged
                       over the ranks during backward (DistributedDataParallel). Rank 0
                       alone prints, evaluates and writes metrics and checkpoints.
                       Ranks share a machine's cores: each gets cores / N threads
                       unless --threads says otherwise
  --bucket-mb N        --distributed: gradient bucket size in MiB (default 25)
  --help               this text

After every epoch, metrics.csv (epoch, losses, accuracy, lr, time) and curves.svg are
rewritten atomically, so a killed run keeps what it finished. Every run ends with a
one-line summary: final and best test accuracy and the wall time.
Ctrl-C stops after the current batch; the last completed epoch's checkpoint stays intact
and `tandem train --resume --out DIR` continues from it.
)";
}

namespace {

/// Sets the field of flag `flag` ("--lr") from its text `value`; ValueError naming the
/// flag for a malformed or out-of-range value. Also reads settings back from checkpoints.
void apply_flag(TrainConfig& c, const std::string& flag, const std::string& value) {
  if (flag == "--dataset") c.dataset = choice(flag, value, {"fashion-mnist", "mnist"});
  else if (flag == "--data") c.data_dir = value;
  else if (flag == "--model") c.model = choice(flag, value, {"mlp", "cnn"});
  else if (flag == "--mode") c.mode = choice(flag, value, {"eager", "compiled"});
  else if (flag == "--epochs") c.epochs = parse_int(flag, value, 1);
  else if (flag == "--batch-size") c.batch_size = parse_int(flag, value, 1);
  else if (flag == "--optimizer") c.optimizer = choice(flag, value, {"sgd", "adam", "adamw"});
  else if (flag == "--lr") c.lr = parse_double(flag, value, true);
  else if (flag == "--momentum") c.momentum = parse_double(flag, value, false);
  else if (flag == "--weight-decay") {
    c.weight_decay = parse_double(flag, value, false);
    c.weight_decay_set = true;
  } else if (flag == "--seed") c.seed = static_cast<uint64_t>(parse_int(flag, value, 0));
  else if (flag == "--threads") c.threads = static_cast<int>(parse_int(flag, value, 1, kMaxThreads));
  else if (flag == "--checkpoint") c.checkpoint = value;
  else if (flag == "--out") c.out = value;
  else if (flag == "--train-limit") c.train_limit = parse_int(flag, value, 0);
  else if (flag == "--test-limit") c.test_limit = parse_int(flag, value, 0);
  else if (flag == "--progress") c.progress = choice(flag, value, {"auto", "bar", "lines", "none"});
  else if (flag == "--lr-schedule") c.lr_schedule = choice(flag, value, {"none", "step", "cosine", "onecycle"});
  else if (flag == "--lr-step-size") c.lr_step_size = parse_int(flag, value, 1);
  else if (flag == "--lr-gamma") c.lr_gamma = parse_double(flag, value, true);
  else if (flag == "--lr-t-max") c.lr_t_max = parse_int(flag, value, 1);
  else if (flag == "--lr-min") c.lr_min = parse_double(flag, value, false);
  else if (flag == "--lr-max") c.lr_max = parse_double(flag, value, true);
  else if (flag == "--lr-pct-start") {
    c.lr_pct_start = parse_double(flag, value, true);
    if (c.lr_pct_start >= 1) throw ValueError("[tandem train] --lr-pct-start got \"" + value + "\", expected a number in (0, 1)");
  } else if (flag == "--on-nonfinite") c.on_nonfinite = choice(flag, value, {"stop", "warn"});
  else if (flag == "--precision") c.precision = choice(flag, value, {"fp32", "bf16", "fp16"});
  else if (flag == "--memory-budget") c.memory_budget = parse_bytes(flag, value);
  else if (flag == "--bucket-mb") c.bucket_mb = parse_int(flag, value, 1, 1 << 20);
  else throw ValueError("[tandem train] unknown flag \"" + flag + "\" (see tandem train --help)");
}

}  // namespace

TrainConfig parse_train_args(const std::vector<std::string>& args) {
  TrainConfig c;
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
    if (flag == "--distributed") {
      if (has_inline) throw ValueError("[tandem train] --distributed takes no value");
      c.distributed = true;
      continue;
    }
    static const char* kValued[] = {"--dataset",     "--data",         "--model",       "--mode",       "--epochs",
                                    "--batch-size",  "--optimizer",    "--lr",          "--momentum",   "--weight-decay",
                                    "--seed",        "--threads",      "--checkpoint",  "--out",        "--train-limit",
                                    "--test-limit",  "--progress",     "--lr-schedule", "--lr-step-size", "--lr-gamma",
                                    "--lr-t-max",    "--lr-min",       "--lr-max",      "--lr-pct-start", "--on-nonfinite",
                                    "--precision",   "--memory-budget", "--bucket-mb"};
    bool known = false;
    for (const char* k : kValued) known = known || flag == k;
    if (!known) throw ValueError("[tandem train] unknown flag \"" + args[i] + "\" (see tandem train --help)");
    if (!has_inline) {
      if (i + 1 >= args.size()) throw ValueError("[tandem train] " + flag + " needs a value");
      value = args[++i];
    }
    apply_flag(c, flag, value);
    c.given.insert(flag.substr(2));
  }
  if (!c.given.count("lr")) c.lr = c.optimizer == "sgd" ? 0.05 : 1e-3;
  if (!c.weight_decay_set && c.optimizer == "adamw") c.weight_decay = 0.01;
  if (c.memory_budget > 0 && c.mode != "compiled")
    throw ValueError("[tandem train] --memory-budget applies to --mode compiled (the budget is planned into the "
                     "compiled step), got --mode " + c.mode);
  if (c.memory_budget > 0 && c.distributed)
    throw ValueError("[tandem train] --memory-budget applies to the whole compiled step, which --distributed does not "
                     "use (its forward and backward are separate programs around the all-reduces)");
  if (c.dataset == "mnist" && c.data_dir.empty())
    throw ValueError("[tandem train] --dataset mnist needs --data DIR (no Debian package ships MNIST)");
  if (c.given.count("out") && c.out.empty()) throw ValueError("[tandem train] --out got an empty path");
  if (c.given.count("checkpoint") && c.checkpoint.empty()) throw ValueError("[tandem train] --checkpoint got an empty path");
  if (c.checkpoint.empty() && !c.out.empty())
    c.checkpoint = (std::filesystem::path(c.out) / "checkpoint.safetensors").string();
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

std::string new_run_dir(const std::string& root) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec || !fs::is_directory(root))
    throw RuntimeError("[tandem train] cannot create the directory " + root + " for the runs: " +
                       (ec ? ec.message() : std::string("a file of that name exists")));
  for (int attempt = 0; attempt < 100; ++attempt) {
    int64_t largest = 0;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string name = e.path().filename().string();
      int64_t v = 0;
      auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), v);
      if (err == std::errc() && p == name.data() + name.size() && v > largest) largest = v;
    }
    const std::string dir = (fs::path(root) / std::to_string(largest + 1)).string();
    // mkdir fails with EEXIST when another run took the number first: look again.
    if (::mkdir(dir.c_str(), 0777) == 0) return dir;
    if (errno != EEXIST)
      throw RuntimeError("[tandem train] cannot create the run directory " + dir + ": " + std::strerror(errno));
  }
  throw RuntimeError("[tandem train] cannot create a new run directory under " + root + " (100 attempts raced)");
}

namespace {

nlohmann::json scheduler_json(const optim::SchedulerStateDict& sd) {
  nlohmann::json j;
  j["scheduler"] = sd.scheduler;
  j["values"] = sd.values;
  return j;
}

optim::SchedulerStateDict scheduler_from_json(const std::string& s) {
  const nlohmann::json j = nlohmann::json::parse(s);
  optim::SchedulerStateDict sd;
  sd.scheduler = j.at("scheduler").get<std::string>();
  sd.values = j.at("values").get<std::map<std::string, std::vector<double>>>();
  return sd;
}

/// Fills in the settings left open: with --resume, those of the checkpoint (a flag given
/// that differs is refused by name) and the output directory; the schedule's defaults.
/// Returns the checkpoint's metadata (empty without --resume).
io::Metadata resolve_config(TrainConfig& c) {
  io::Metadata meta;
  if (c.resume) {
    if (c.checkpoint.empty())
      throw RuntimeError("[tandem train] --resume needs the run to continue: --out DIR (its directory, e.g. runs/1) "
                         "or --checkpoint PATH");
    if (!std::filesystem::exists(c.checkpoint))
      throw RuntimeError("[tandem train] --resume: no checkpoint at " + c.checkpoint +
                         " (run without --resume first, or pass --checkpoint PATH)");
    if (std::filesystem::is_directory(c.checkpoint))
      throw RuntimeError("[tandem train] --checkpoint " + c.checkpoint + " is a directory, expected a file path");
    // The settings first, so that a checkpoint of another model or optimizer is named as
    // such rather than failing on its tensor names.
    const std::string where = "[tandem train] --resume: " + c.checkpoint;
    meta = io::read_checkpoint(c.checkpoint).metadata;
    if (!meta.count("train.epoch") || !meta.count("train.history"))
      throw RuntimeError(where + " was not written by tandem train (no train.epoch / train.history metadata)");
    for (const auto& k : setting_names()) {
      auto it = meta.find("train." + k);
      std::string file;
      if (it != meta.end()) file = it->second;
      else if (k == "lr-schedule") file = "none";  // checkpoints from before --lr-schedule
      else if (k == "precision") file = "fp32";    // checkpoints from before --precision
      else if (is_schedule_param(k)) continue;     // not a parameter of the checkpoint's schedule
      else
        throw RuntimeError(where + " was made with --" + k + " (unknown), this run has --" + k + " " +
                           setting_value(c, k));
      if (c.given.count(k)) {
        if (!same_setting(k, file, setting_value(c, k)))
          throw RuntimeError(where + " was made with --" + k + " " + io::clip(setting_text(k, file), 64) +
                             ", this run has --" + k + " " + setting_value(c, k));
        continue;
      }
      try {
        apply_flag(c, "--" + k, file);
      } catch (const Error& e) {
        throw RuntimeError(where + ": malformed train." + k + " metadata: " + io::clip(e.what()));
      }
    }
    if (auto it = meta.find("train.epochs"); it != meta.end() && !c.given.count("epochs")) {
      try {
        c.epochs = parse_int("train.epochs", it->second, 1);
      } catch (const Error& e) {
        throw RuntimeError(where + ": malformed train.epochs metadata: " + io::clip(e.what()));
      }
    }
    if (c.out.empty()) {
      const auto dir = std::filesystem::path(c.checkpoint).parent_path();
      c.out = dir.empty() ? "." : dir.string();
    }
  }
  if (c.lr_step_size == 0) c.lr_step_size = std::max<int64_t>(1, c.epochs / 3);
  if (c.lr_t_max == 0) c.lr_t_max = c.epochs;
  if (c.lr_max == 0) c.lr_max = c.lr;
  for (const auto& k : c.given)
    if (is_schedule_param(k) && !setting_applies(c, k))
      throw ValueError("[tandem train] --" + k + " does not apply to --lr-schedule " + c.lr_schedule +
                       " (see tandem train --help)");
  if (c.lr_schedule == "onecycle" && c.epochs > c.lr_t_max)
    throw ValueError("[tandem train] --epochs " + std::to_string(c.epochs) + " runs past the onecycle schedule of " +
                     std::to_string(c.lr_t_max) + " epochs (--lr-t-max); a 1cycle schedule cannot be extended");
  if (c.dataset == "mnist" && c.data_dir.empty())
    throw ValueError("[tandem train] --dataset mnist needs --data DIR (no Debian package ships MNIST)");
  return meta;
}

/// Whether two paths name the same file (existing or not).
bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
  if (ea || eb) return std::filesystem::absolute(a).lexically_normal() == std::filesystem::absolute(b).lexically_normal();
  return ca == cb;
}

/// The curves' title: the model, optimizer, lr (and schedule), batch size and any subset.
std::string plot_title(const TrainConfig& c) {
  std::string t = c.model + " on " + c.dataset + ", " + c.optimizer + " lr " + number_text(c.lr);
  if (c.lr_schedule != "none") t += " (" + c.lr_schedule + " schedule)";
  t += ", batch size " + std::to_string(c.batch_size);
  if (c.precision != "fp32") t += ", " + c.precision + " autocast";
  if (c.train_limit > 0 || c.test_limit > 0)
    t += ", subset: " + (c.train_limit > 0 ? std::to_string(c.train_limit) : std::string("all")) + " train / " +
         (c.test_limit > 0 ? std::to_string(c.test_limit) : std::string("all")) + " test examples";
  return t;
}

/// "87.65% (epoch 4)" of the best test accuracy in h (non-empty).
const EpochMetrics& best_epoch(const std::vector<EpochMetrics>& h) {
  const EpochMetrics* best = &h.front();
  for (const auto& m : h)
    if (m.test_accuracy > best->test_accuracy) best = &m;
  return *best;
}

std::string summary_line(const TrainResult& r) {
  std::string s = "summary: ";
  if (r.evaluated_only || !r.history.empty()) {
    s += (r.evaluated_only ? "finished run evaluated, test accuracy " : "final test accuracy ") +
         fmt(100 * r.final_test_accuracy, 2) + "%";
    if (!r.history.empty()) {
      const EpochMetrics& b = best_epoch(r.history);
      s += " (epoch " + std::to_string(r.history.back().epoch) + "), best " + fmt(100 * b.test_accuracy, 2) +
           "% (epoch " + std::to_string(b.epoch) + ")";
    }
  } else {
    s += "no epoch completed";
  }
  return s + ", wall time " + fmt(r.wall_seconds, 1) + " s (" + format_duration(r.wall_seconds) +
         ", evaluation included)";
}

}  // namespace

TrainResult run_training(const TrainConfig& config, std::ostream& given_out) {
  const auto run_start = Clock::now();
  TrainConfig c = config;
  const io::Metadata resume_meta = resolve_config(c);
  if (c.threads > 0) set_num_threads(c.threads);
  // --distributed: every rank runs this function; rank 0 alone writes (the "writer").
  int rank = 0, world = 1;
  if (c.distributed) {
    if (!distributed::is_initialized())
      throw RuntimeError("[tandem train] --distributed needs the MPI process group: run `mpirun -np N tandem train "
                         "--distributed ...` (train_main initialises it)");
    rank = distributed::rank();
    world = distributed::world_size();
  }
  const bool writer = rank == 0;
  // Ranks other than 0 print nothing (their errors still reach the caller as exceptions).
  struct NullBuf : std::streambuf {
    int overflow(int c) override { return c; }
  } null_buf;
  std::ostream null_out(&null_buf);
  std::ostream& out = writer ? given_out : null_out;
  // Output places before any work: a run must not train an epoch to fail at its first save.
  if (c.out.empty()) {
    if (writer) c.out = new_run_dir("runs");
    if (c.distributed) c.out = distributed::all_gather_strings(c.out)[0];  // rank 0's
    out << "run directory: " << c.out << "\n";
  } else {
    out << "output directory: " << c.out << "\n";
  }
  if (c.checkpoint.empty()) c.checkpoint = (std::filesystem::path(c.out) / "checkpoint.safetensors").string();
  if (writer) {
    make_dir("--out", c.out);
    if (std::filesystem::is_directory(c.checkpoint))
      throw RuntimeError("[tandem train] --checkpoint " + c.checkpoint + " is a directory, expected a file path");
    if (auto dir = std::filesystem::path(c.checkpoint).parent_path(); !dir.empty()) make_dir("--checkpoint", dir);
  }

  TrainResult result;
  result.out = c.out;
  result.checkpoint = c.checkpoint;
  result.metrics_csv = (std::filesystem::path(c.out) / "metrics.csv").string();
  result.curves_svg = (std::filesystem::path(c.out) / "curves.svg").string();
  for (const std::string* own : {&result.metrics_csv, &result.curves_svg})
    if (same_file(c.checkpoint, *own))
      throw RuntimeError("[tandem train] --checkpoint " + c.checkpoint + " is the run's own output file " + *own +
                         ", which is rewritten after every epoch; choose another path");

  // Data first: a missing directory is the most likely first-run problem.
  auto train_set = load_split(c.dataset, c.data_dir, true, c.train_limit);
  auto test_set = load_split(c.dataset, c.data_dir, false, c.test_limit);
  data::DataLoaderOptions train_opts{.batch_size = c.batch_size, .shuffle = true, .seed = c.seed};
  if (c.distributed) {  // this rank's shard of the epoch's (seed, epoch) order
    train_opts.shuffle = false;
    train_opts.sampler = std::make_shared<data::DistributedSampler>(data::DistributedSamplerOptions{.seed = c.seed});
  }
  data::DataLoader train_loader(train_set, train_opts);
  data::DataLoader test_loader(test_set, {.batch_size = 1000, .shuffle = false});

  manual_seed(c.seed);
  std::shared_ptr<nn::Sequential> model = c.model == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
  std::unique_ptr<optim::Optimizer> opt = make_optimizer(c, model->parameters());
  // The schedule is made before a resume loads the optimizer's state (its constructor
  // sets the groups' lr; the loaded state then restores them) and its own state.
  std::unique_ptr<optim::LRScheduler> sched;
  if (c.lr_schedule == "step") sched = std::make_unique<optim::StepLR>(*opt, c.lr_step_size, c.lr_gamma);
  else if (c.lr_schedule == "cosine") sched = std::make_unique<optim::CosineAnnealingLR>(*opt, c.lr_t_max, c.lr_min);
  else if (c.lr_schedule == "onecycle") {
    optim::OneCycleOptions o;
    o.max_lrs = {c.lr_max};
    o.epochs = c.lr_t_max;
    o.steps_per_epoch = train_loader.size();
    o.pct_start = c.lr_pct_start;
    // SGD without momentum stays without it (PyTorch would cycle it from 0.85 to 0.95).
    o.cycle_momentum = !(c.optimizer == "sgd" && c.momentum == 0);
    sched = std::make_unique<optim::OneCycleLR>(*opt, o);
  }
  const bool step_per_batch = c.lr_schedule == "onecycle";

  // One training step: zero_grad, forward, loss, backward, update; returns the loss. In
  // compiled mode the whole step is one program (backward and the optimizer's updates
  // included) that writes the parameters, their .grad and the optimizer state in place, so
  // the numbers are eager's bit for bit; its first call runs eagerly (the optimizer makes
  // its state), a last smaller batch is another signature. Evaluation runs the module, or
  // its compiled inference program (parameters and buffers are program inputs).
  //
  // --precision bf16/fp16: forward and loss run under autocast (the loss is float32:
  // cross_entropy is on the float32 list), backward outside it, so the backward rules run
  // in the dtypes the forward chose; fp16 scales the loss (GradScaler), and a step whose
  // gradients overflow is skipped (its reported loss is still the batch's loss).
  const bool low_precision = c.precision != "fp32";
  const DType autocast_dt = c.precision == "fp16" ? DType::Float16 : DType::BFloat16;
  optim::GradScalerOptions scaler_opts;
  scaler_opts.enabled = c.precision == "fp16";
  optim::GradScaler scaler(scaler_opts);
  int64_t skipped_steps = 0;  // fp16: steps skipped for inf/NaN gradients (this process)
  // The module the training step runs: the model, or its DistributedDataParallel wrapper.
  nn::Module* train_module = model.get();
  // --distributed --mode compiled: the wrapper's forward and backward as compiled programs.
  std::shared_ptr<nn::CompiledModule> compiled_train;
  auto forward_loss = [&](const Tensor& x, const Tensor& y) {
    AutocastGuard ac(autocast_dt, low_precision);
    return cross_entropy(compiled_train ? (*compiled_train)(x) : train_module->forward(x), y);
  };
  auto eager_step = [&](const Tensor& x, const Tensor& y) {
    opt->zero_grad();
    Tensor loss = forward_loss(x, y);
    if (scaler.is_enabled()) {
      scaler.scale(loss).backward();
      if (!scaler.step(*opt)) ++skipped_steps;
      scaler.update();
    } else {
      loss.backward();
      opt->step();
    }
    return loss.detach();
  };
  std::function<Tensor(const Tensor&, const Tensor&)> step_fn = eager_step;
  // Logits for evaluation: under the run's autocast, returned as float32.
  std::function<Tensor(const Tensor&)> forward_fn = [&](const Tensor& x) {
    Tensor logits;
    {
      AutocastGuard ac(autocast_dt, low_precision);
      logits = model->forward(x);
    }
    return logits.to(DType::Float32);
  };
  std::shared_ptr<nn::CompiledModule> compiled;
  std::shared_ptr<jit::CompiledFunction> compiled_step;
  if (c.mode == "compiled") {
    compiled = compile(std::static_pointer_cast<nn::Module>(model));
    forward_fn = [&](const Tensor& x) {
      Tensor logits;
      {
        AutocastGuard ac(autocast_dt, low_precision);
        logits = (*compiled)(x);
      }
      return logits.to(DType::Float32);
    };
    // Under --distributed the whole step is not one program (its all-reduces are not
    // program nodes; a compiled step would break at the DDP hooks and run eagerly): the
    // DDP wrapper's forward and backward are compiled instead (below).
    if (!c.distributed) {
      jit::CompileOptions step_options;
      step_options.memory_budget = c.memory_budget;
      compiled_step = compile(
          [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{eager_step(in[0], in[1])}; }, step_options);
      step_fn = [&](const Tensor& x, const Tensor& y) { return (*compiled_step)({x, y})[0]; };
    }
  }

  const auto identity = run_identity(c);
  int64_t start_epoch = 0;
  if (c.resume) {
    const std::string where = "[tandem train] --resume: " + c.checkpoint;
    try {
      start_epoch = parse_int("train.epoch", resume_meta.at("train.epoch"), 0);
      result.history = history_from_json(resume_meta.at("train.history"));
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
    if (sched) {
      auto it = resume_meta.find("train.scheduler");
      if (it == resume_meta.end()) throw RuntimeError(where + ": no train.scheduler metadata for --lr-schedule " + c.lr_schedule);
      try {
        sched->load_state_dict(scheduler_from_json(it->second));
      } catch (const std::exception& e) {
        throw RuntimeError(where + ": malformed train.scheduler metadata: " + io::clip(e.what()));
      }
    }
    if (scaler.is_enabled()) {
      auto it = resume_meta.find("train.grad_scaler");
      if (it == resume_meta.end()) throw RuntimeError(where + ": no train.grad_scaler metadata for --precision fp16");
      try {
        scaler.load_state_dict(nlohmann::json::parse(it->second).get<std::map<std::string, double>>());
      } catch (const std::exception& e) {
        throw RuntimeError(where + ": malformed train.grad_scaler metadata: " + io::clip(e.what()));
      }
    }
    // The global batch is batch-size x ranks: resuming with another number of ranks
    // would change it (and the epoch's shards) silently.
    int64_t ranks_then = 1;
    if (auto it = resume_meta.find("train.ranks"); it != resume_meta.end()) {
      try {
        ranks_then = parse_int("train.ranks", it->second, 1);
      } catch (const Error& e) {
        throw RuntimeError(where + ": malformed train.ranks metadata: " + io::clip(e.what()));
      }
    }
    if (ranks_then != world)
      throw RuntimeError(where + " was made with " + std::to_string(ranks_then) + " rank(s) (global batch " +
                         std::to_string(ranks_then * c.batch_size) + "), this run has " + std::to_string(world) +
                         " (global batch " + std::to_string(world * c.batch_size) + "); resume with the same number");
    out << "resumed from " << c.checkpoint << " after epoch " << start_epoch << " (settings from the checkpoint)\n";
  }

  // --distributed: the wrapper checks that every rank has the same model and settings,
  // copies rank 0's parameters everywhere and averages gradients during backward.
  std::shared_ptr<nn::parallel::DistributedDataParallel> ddp;
  if (c.distributed) {
    std::string settings;
    for (const auto& [k, v] : identity) settings += k + "=" + v + " ";
    settings += "epochs=" + std::to_string(c.epochs) + " start=" + std::to_string(start_epoch) +
                " mode=" + c.mode;
    nn::parallel::DDPOptions o;
    o.bucket_cap_bytes = c.bucket_mb << 20;
    o.settings = settings;
    ddp = std::make_shared<nn::parallel::DistributedDataParallel>(model, o);
    train_module = ddp.get();
    // Compiled mode: each call's forward and backward run as compiled programs; the
    // backward program's gradients reach the parameters' accumulators, whose DDP hooks fill
    // the buckets, so the all-reduces run at the program boundary. The optimizer step
    // stays eager (a whole-step program would have to contain the all-reduce).
    if (c.mode == "compiled") compiled_train = compile(std::static_pointer_cast<nn::Module>(ddp));
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

  // Examples per epoch over all ranks (the sampler pads each shard to equal length).
  const int64_t n_train = c.distributed ? train_opts.sampler->size(train_set->size()) * world : train_set->size();
  out << "training " << c.model << " on " << c.dataset << " (" << n_train << " train / " << test_set->size()
      << " test examples), " << c.optimizer << " lr " << c.lr;
  if (c.lr_schedule != "none") out << " (" << c.lr_schedule << " schedule)";
  out << ", batch " << c.batch_size << ", " << get_num_threads() << " thread(s), " << c.mode << " mode";
  if (low_precision) out << ", " << c.precision << " autocast" << (scaler.is_enabled() ? " + loss scaling" : "");
  out << "\n";
  if (c.distributed) {
    out << "distributed: " << world << " ranks x batch " << c.batch_size << " = global batch " << world * c.batch_size
        << ", " << ddp->num_buckets() << " gradient bucket(s) of at most " << c.bucket_mb << " MiB\n";
    if (c.mode == "compiled")
      out << "distributed: compiled mode runs each step's forward and backward as compiled programs; the gradient "
             "all-reduces start when the backward program has finished (no overlap inside it) and the optimizer "
             "step runs eagerly\n";
  }
  out << std::flush;  // shown at once even when stdout is a pipe or a file

  auto print_compiled_note = [&] {
    // What compiled mode runs: its programs (the training step, evaluation) and their
    // planned arenas next to the lower bound.
    if (compiled_step && compiled_step->captures() > 0) {
      const jit::CompiledFunction& s = *compiled_step;
      out << "compiled mode: training step " << s.num_programs() << " program(s), " << s.compiled_calls()
          << " compiled / " << s.eager_calls() << " eager call(s)";
      if (s.retries() > 0) out << " (" << s.retries() << " of them made the optimizer's state)";
      for (const auto& r : s.recompile_reasons()) out << "; recompiled: " << r;
      if (s.last_executor()) out << "; " << s.last_executor()->memory_summary();
      out << "\n";
    }
    if (compiled_train) {
      const jit::CompiledFunction& t = compiled_train->function();
      out << "compiled mode: training forward/backward " << t.num_programs() << " program(s), " << t.compiled_calls()
          << " compiled / " << t.eager_calls() << " eager call(s)\n";
      for (const auto& w : t.warnings()) out << "  note: " << w << "\n";
    }
    const jit::CompiledFunction& f = compiled->function();
    out << "compiled mode: evaluation " << f.num_programs() << " program(s), " << f.compiled_calls() << " compiled / "
        << f.eager_calls() << " eager call(s); " << compiled->memory_summary() << "\n";
    for (const jit::CompiledFunction* fn : std::initializer_list<const jit::CompiledFunction*>{compiled_step.get(), &f})
      if (fn)
        for (const auto& w : fn->warnings()) out << "  note: " << w << "\n";
  };

  if (c.resume && start_epoch >= c.epochs) {
    // A finished run: evaluate what it left, so the command still answers "how good is it".
    out << "the run is finished: the checkpoint is at epoch " << start_epoch << " and --epochs is " << c.epochs
        << "; evaluating it (raise --epochs to train on)\n";
    auto [test_loss, test_acc] = evaluate(*model, test_loader, forward_fn);
    if (compiled) print_compiled_note();
    out << "test loss " << fmt(test_loss, 4) << ", test accuracy " << fmt(100 * test_acc, 2) << "%\n";
    result.evaluated_only = true;
    result.final_test_loss = test_loss;
    result.final_test_accuracy = test_acc;
    result.wall_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
    out << summary_line(result) << "\n" << std::flush;
    return result;
  }

  const ProgressMode pmode = c.progress == "bar" ? ProgressMode::kBar
                             : c.progress == "lines" ? ProgressMode::kLines
                             : c.progress == "none"  ? ProgressMode::kNone
                             : (&out == &std::cout && isatty(STDOUT_FILENO)) ? ProgressMode::kBar
                                                                            : ProgressMode::kLines;
  const bool stop_on_nonfinite = c.on_nonfinite == "stop";
  const std::string title = plot_title(c);
  for (int64_t epoch = start_epoch; epoch < c.epochs && !g_interrupted && result.stopped.empty(); ++epoch) {
    train_loader.set_epoch(epoch);
    ProgressBar bar(out, pmode, "epoch " + std::to_string(epoch + 1) + "/" + std::to_string(c.epochs), n_train);
    model->train();
    const double epoch_lr = opt->param_groups()[0].options.lr();
    double loss_sum = 0;
    int64_t seen = 0, batch = 0;
    bool warned = false;
    const auto t0 = Clock::now();
    for (auto& b : train_loader) {
      ++batch;
      // The loss is checked after the step (eager mode too, so both modes print and keep
      // the same): a non-finite loss stops before the epoch's checkpoint is written.
      double lv = step_fn(b.data, b.target).item<double>();
      if (c.distributed) {  // the global batch's mean (equal shards): every rank decides alike
        Tensor l = tensor({lv}, DType::Float64);
        distributed::all_reduce(l, distributed::ReduceOp::kAvg);
        lv = l.item<double>();
      }
      if (!std::isfinite(lv)) {
        const double lr_now = opt->param_groups()[0].options.lr();
        const std::string what = "the training loss is " + number_text(lv) + " at epoch " + std::to_string(epoch + 1) +
                                 ", batch " + std::to_string(batch) + " (lr " + number_text(lr_now) + ")";
        if (stop_on_nonfinite) {
          result.stopped = what;
          break;
        }
        if (!warned) {
          bar.finish();
          out << "warning: " << what << "; training on (--on-nonfinite warn)\n" << std::flush;
          warned = true;
        }
      }
      if (sched && step_per_batch) sched->step();
      const int64_t n = b.data.size(0) * world;  // examples of the global batch
      loss_sum += lv * static_cast<double>(n);
      seen += n;
      bar.update(seen, loss_sum / static_cast<double>(seen));
      if (g_interrupted) break;
    }
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    bar.finish();
    if (g_interrupted || !result.stopped.empty()) break;
    // --distributed: rank 0 evaluates and sends the figures, so every rank keeps the same
    // history and takes the same decisions.
    double test_loss = 0, test_acc = 0;
    if (writer) std::tie(test_loss, test_acc) = evaluate(*model, test_loader, forward_fn);
    if (c.distributed) {
      Tensor m = tensor({test_loss, test_acc}, DType::Float64);
      distributed::broadcast(m, 0);
      test_loss = m[0].item<double>();
      test_acc = m[1].item<double>();
    }
    if (compiled && epoch == start_epoch && writer) print_compiled_note();
    if (!std::isfinite(test_loss) && stop_on_nonfinite) {
      result.stopped = "the test loss is " + number_text(test_loss) + " after epoch " + std::to_string(epoch + 1);
      break;
    }
    if (sched && !step_per_batch) sched->step();
    EpochMetrics m{epoch + 1, loss_sum / static_cast<double>(seen), test_loss, test_acc, epoch_lr, secs,
                   static_cast<double>(seen) / secs};
    result.history.push_back(m);
    result.final_test_loss = test_loss;
    result.final_test_accuracy = test_acc;
    out << "epoch " << m.epoch << "/" << c.epochs << ": train loss " << fmt(m.train_loss, 4) << ", test loss "
        << fmt(m.test_loss, 4) << ", test accuracy " << fmt(100 * m.test_accuracy, 2) << "%, " << fmt(secs, 1) << " s ("
        << fmt(m.samples_per_second, 0) << " samples/s)";
    if (sched) out << ", lr " << number_text(epoch_lr);
    if (scaler.is_enabled())
      out << ", loss scale " << number_text(scaler.get_scale()) << " (" << skipped_steps << " step(s) skipped so far)";
    out << "\n";
    io::Metadata meta;
    for (const auto& [k, v] : identity) meta["train." + k] = v;
    meta["train.epoch"] = std::to_string(epoch + 1);
    meta["train.epochs"] = std::to_string(c.epochs);
    meta["train.history"] = history_json(result.history).dump();
    if (sched) meta["train.scheduler"] = scheduler_json(sched->state_dict()).dump();
    if (scaler.is_enabled()) meta["train.grad_scaler"] = nlohmann::json(scaler.state_dict()).dump();
    if (c.distributed) meta["train.ranks"] = std::to_string(world);
    if (writer) {
      io::save_checkpoint(c.checkpoint, *model, opt.get(), meta);
      // Rewritten (atomically) after every epoch, so a killed run keeps what it finished.
      write_metrics_csv(result.metrics_csv, result.history);
      const std::string svg = curves_svg(result.history, title);
      io::atomic_write(result.curves_svg, "tandem train", [&](io::FileWriter& w) { w.write(svg.data(), svg.size()); });
    }
    // The next epoch (or a resume after this run) may read what rank 0 wrote.
    if (c.distributed) distributed::barrier();
    out << std::flush;
  }
  result.interrupted = g_interrupted != 0;
  const int64_t done = result.history.empty() ? 0 : result.history.back().epoch;
  if (!result.stopped.empty()) {
    out << "\nstopped: " << result.stopped << ".\n";
    if (done)
      out << "the checkpoint of epoch " << done << " is intact at " << c.checkpoint << "\n";
    out << "try a lower --lr (or --lr-schedule), or --on-nonfinite warn to train on regardless\n";
  } else if (result.interrupted) {
    if (done)
      out << "\ninterrupted: the checkpoint of epoch " << done << " is intact at " << c.checkpoint
          << "\ncontinue with --resume --out " << c.out << "\n";
    else
      out << "\ninterrupted: no epoch completed, no checkpoint written\nrun the same command again to start over\n";
  }
  if (!done) result.checkpoint.clear();
  if (done) {
    result.final_test_loss = result.history.back().test_loss;
    result.final_test_accuracy = result.history.back().test_accuracy;
  }
  auto shown = [](const std::string& p) { return std::filesystem::exists(p) ? p : std::string("none"); };
  out << "metrics:    " << shown(result.metrics_csv) << "\ncurves:     " << shown(result.curves_svg)
      << "\ncheckpoint: " << (result.checkpoint.empty() ? "none" : result.checkpoint) << "\n";
  result.wall_seconds = std::chrono::duration<double>(Clock::now() - run_start).count();
  out << summary_line(result) << "\n" << std::flush;
  return result;
}

namespace {
std::string error_text(const std::exception& e) { return command_error_text("tandem train", e); }

// `mpirun -np N tandem train --distributed`: one rank of the job. Rank 0 prints; the others
// discard their output. An error on any rank is printed by that rank (prefixed with it)
// and ends the whole job (MPI_Abort), so no rank waits forever in a collective.
int train_main_distributed(const TrainConfig& config) {
  try {
    distributed::init_process_group();
  } catch (const std::exception& e) {
    std::cerr << error_text(e) << "\n";
    return 1;
  }
  const int rank = distributed::rank();
  int rc = 0;
  try {
    TrainResult r = run_training(config, std::cout);  // rank 0 alone prints (run_training)
    if (!r.stopped.empty()) {
      if (rank == 0) std::cerr << "tandem train: stopped: " << r.stopped << "\n";
      rc = 1;
    } else {
      rc = r.interrupted ? 130 : 0;
    }
  } catch (const std::exception& e) {
    // One write(2) for the whole line: under mpirun the ranks share the terminal, and a
    // line written in pieces (std::cerr is unbuffered) was cut by another rank's output.
    const std::string line = "[rank " + std::to_string(rank) + "] " + error_text(e) + "\n";
    std::cout.flush();
    for (size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
      if (n <= 0 && errno != EINTR) break;
      if (n > 0) done += static_cast<size_t>(n);
    }
    distributed::abort(1);
  }
  distributed::finalize();
  return rc;
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
  if (config.distributed) return train_main_distributed(config);
  try {
    TrainResult r = run_training(config, std::cout);
    if (!r.stopped.empty()) {
      std::cerr << "tandem train: stopped: " << r.stopped << "\n";
      return 1;
    }
    return r.interrupted ? 130 : 0;
  } catch (const std::exception& e) {
    std::cerr << error_text(e) << "\n";
    return 1;
  }
}

}  // namespace tandem::tools
