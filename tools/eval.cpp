#include "eval.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "tandem/io/file_util.h"
#include "tandem/tandem.h"
#include "train.h"

namespace tandem::tools {

namespace {

std::string fixed(double v, int prec) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(prec) << v;
  return os.str();
}

/// An integer flag value in [lo, hi]; ValueError quoting it ("too large" past int64).
int64_t int_flag(const std::string& cmd, const std::string& flag, const std::string& v, int64_t lo,
                 int64_t hi = INT64_MAX) {
  int64_t x = 0;
  auto [p, err] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (err == std::errc::result_out_of_range)
    throw ValueError("[" + cmd + "] " + flag + " got \"" + v + "\": too large, expected an integer >= " +
                     std::to_string(lo));
  if (err != std::errc() || p != v.data() + v.size() || v.empty() || x < lo || x > hi)
    throw ValueError("[" + cmd + "] " + flag + " got \"" + v + "\", expected an integer " +
                     (hi == INT64_MAX ? ">= " + std::to_string(lo)
                                      : "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]"));
  return x;
}

std::string one_of(const std::string& cmd, const std::string& flag, const std::string& v,
                   std::initializer_list<const char*> options) {
  std::string list;
  for (const char* o : options) {
    if (v == o) return v;
    list += (list.empty() ? "" : " | ") + std::string(o);
  }
  throw ValueError("[" + cmd + "] " + flag + " got \"" + v + "\", expected one of " + list);
}

/// Walks "--flag value" and "--flag=value" pairs (every flag here takes a value), calling
/// `on` for each; ValueError for an argument that is not a known flag or lacks its value.
void walk_flags(const std::string& cmd, const std::vector<std::string>& args, std::initializer_list<const char*> known,
                const std::function<void(const std::string&, const std::string&)>& on) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flag = args[i], value;
    bool inline_value = false;
    if (auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = flag.substr(eq + 1);
      flag = flag.substr(0, eq);
      inline_value = true;
    }
    bool ok = false;
    for (const char* k : known) ok = ok || flag == k;
    if (!ok) throw ValueError("[" + cmd + "] unknown argument \"" + args[i] + "\" (see " + cmd + " --help)");
    if (!inline_value) {
      if (i + 1 >= args.size()) throw ValueError("[" + cmd + "] " + flag + " needs a value");
      value = args[++i];
    }
    on(flag, value);
  }
}

// The shape of `tandem eval` and `tandem predict`: --help/-h prints the usage (exit 0), a
// bad command line its error (exit 2), an error while running its message (exit 1).
template <typename Config>
int subcommand_main(const std::string& cmd, const std::vector<std::string>& args, const std::string& usage,
                    Config (*parse)(const std::vector<std::string>&), void (*run)(const Config&, std::ostream&)) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << usage;
      return 0;
    }
  Config c;
  try {
    c = parse(args);
  } catch (const Error& e) {
    std::cerr << command_error_text(cmd, e) << "\n";
    return 2;
  }
  try {
    run(c, std::cout);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << command_error_text(cmd, e) << "\n";
    return 1;
  }
}

/// A trained model, ready for inference, and what it was trained on.
struct Loaded {
  std::string model, dataset;
  std::string epochs;  ///< epochs trained, "?" when the checkpoint does not say
  std::shared_ptr<nn::Sequential> module;
  std::shared_ptr<nn::CompiledModule> compiled;
  std::vector<std::string> classes;

  Tensor forward(const Tensor& x) { return compiled ? (*compiled)(x) : module->forward(x); }
};

Loaded load_model(const std::string& cmd, const std::string& path, const std::string& model_flag,
                  const std::string& dataset_flag, const std::string& mode) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) throw RuntimeError("[" + cmd + "] --checkpoint " + path + ": no such file");
  if (fs::is_directory(path)) throw RuntimeError("[" + cmd + "] --checkpoint " + path + " is a directory, expected a file");
  const io::Metadata meta = io::read_checkpoint(path).metadata;
  Loaded l;
  auto setting = [&](const std::string& flag_value, const char* key, const char* flag) {
    if (!flag_value.empty()) return flag_value;
    auto it = meta.find(std::string("train.") + key);
    if (it == meta.end())
      throw RuntimeError("[" + cmd + "] " + path + " does not say its " + key + " (no train." + key +
                         " metadata: not written by tandem train); pass " + flag);
    return it->second;
  };
  l.model = setting(model_flag, "model", "--model mlp|cnn");
  l.dataset = setting(dataset_flag, "dataset", "--dataset fashion-mnist|mnist");
  if (l.model != "mlp" && l.model != "cnn")
    throw RuntimeError("[" + cmd + "] " + path + ": unknown model \"" + l.model.substr(0, 40) + "\", expected mlp | cnn");
  if (l.dataset != "fashion-mnist" && l.dataset != "mnist")
    throw RuntimeError("[" + cmd + "] " + path + ": unknown data set \"" + l.dataset.substr(0, 40) +
                       "\", expected fashion-mnist | mnist");
  auto ep = meta.find("train.epoch");
  l.epochs = ep == meta.end() ? "?" : ep->second.substr(0, 20);
  manual_seed(0);
  l.module = l.model == "mlp" ? nn::models::fashion_mlp() : nn::models::fashion_cnn();
  io::load_checkpoint(path, *l.module, nullptr);
  l.module->eval();
  if (mode == "compiled") l.compiled = compile(std::static_pointer_cast<nn::Module>(l.module));
  if (l.dataset == "fashion-mnist") l.classes = data::datasets::FashionMNIST::classes();
  else
    for (int i = 0; i < 10; ++i) l.classes.push_back(std::to_string(i));
  return l;
}

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ea, eb;
  const auto ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

}  // namespace

// ---- eval ----------------------------------------------------------------------------

std::string eval_usage() {
  return R"(usage: tandem eval --checkpoint PATH [FLAGS]

Evaluates a checkpoint of `tandem train` on the test set: loss, accuracy, per-class
accuracy and the confusion matrix, printed and drawn as an SVG picture. The model and the
data set come from the checkpoint.

  --checkpoint PATH    the checkpoint (e.g. runs/1/checkpoint.safetensors); required
  --mode NAME          eager (default) | compiled: run the model through tandem::compile
                       (the numbers are identical)
  --data DIR           directory of the data set's IDX files (default: as tandem train)
  --test-limit N       the first N test examples only (default 0: all)
  --batch-size B       examples per evaluation batch (default 1000)
  --svg PATH           the confusion matrix picture (default: confusion.svg beside the
                       checkpoint)
  --model NAME         mlp | cnn, for checkpoints without tandem train's metadata
  --dataset NAME       fashion-mnist | mnist, likewise
  --threads T          threads for the ops (default: all cores)
  --help               this text
)";
}

EvalConfig parse_eval_args(const std::vector<std::string>& args) {
  const std::string cmd = "tandem eval";
  EvalConfig c;
  walk_flags(cmd, args,
             {"--checkpoint", "--mode", "--data", "--test-limit", "--batch-size", "--svg", "--model", "--dataset",
              "--threads"},
             [&](const std::string& f, const std::string& v) {
               if (f == "--checkpoint") c.checkpoint = v;
               else if (f == "--mode") c.mode = one_of(cmd, f, v, {"eager", "compiled"});
               else if (f == "--data") c.data_dir = v;
               else if (f == "--test-limit") c.test_limit = int_flag(cmd, f, v, 0);
               else if (f == "--batch-size") c.batch_size = int_flag(cmd, f, v, 1);
               else if (f == "--svg") c.svg = v;
               else if (f == "--model") c.model = one_of(cmd, f, v, {"mlp", "cnn"});
               else if (f == "--dataset") c.dataset = one_of(cmd, f, v, {"fashion-mnist", "mnist"});
               else c.threads = static_cast<int>(int_flag(cmd, f, v, 1, kMaxThreads));
             });
  if (c.checkpoint.empty()) throw ValueError("[tandem eval] --checkpoint PATH is required (see tandem eval --help)");
  return c;
}

EvalResult run_eval(const EvalConfig& c, std::ostream& out) {
  namespace fs = std::filesystem;
  if (c.threads > 0) set_num_threads(c.threads);
  EvalResult r;
  r.svg = c.svg.empty() ? (fs::path(c.checkpoint).parent_path() / "confusion.svg").string() : c.svg;
  if (same_file(r.svg, c.checkpoint))
    throw RuntimeError("[tandem eval] --svg " + r.svg + " is the checkpoint itself; choose another path");
  Loaded l = load_model("tandem eval", c.checkpoint, c.model, c.dataset, c.mode);
  r.model = l.model;
  r.dataset = l.dataset;
  r.classes = l.classes;
  const size_t k = l.classes.size();
  r.confusion.assign(k, std::vector<int64_t>(k, 0));
  auto test_set = load_split(l.dataset, c.data_dir, false, c.test_limit);
  data::DataLoader loader(test_set, {.batch_size = c.batch_size, .shuffle = false});
  out << "evaluating " << c.checkpoint << ": " << l.model << " trained for " << l.epochs << " epoch(s) on "
      << l.dataset << ", " << c.mode << " mode\n"
      << std::flush;
  double loss_sum = 0;
  {
    InferenceMode guard;
    for (auto& b : loader) {
      Tensor logits = l.forward(b.data);
      loss_sum += cross_entropy(logits, b.target, {}, -100, "sum").item<double>();
      Tensor pred = argmax(logits, 1).contiguous(), target = b.target.to(kInt64).contiguous();
      const int64_t* p = pred.data_ptr<int64_t>();
      const int64_t* t = target.data_ptr<int64_t>();
      for (int64_t i = 0; i < pred.numel(); ++i) {
        TANDEM_CHECK(t[i] >= 0 && static_cast<size_t>(t[i]) < k && p[i] >= 0 && static_cast<size_t>(p[i]) < k,
                     RuntimeError, "tandem eval", "class index out of range: target ", t[i], ", prediction ", p[i]);
        ++r.confusion[static_cast<size_t>(t[i])][static_cast<size_t>(p[i])];
      }
      r.examples += pred.numel();
    }
  }
  int64_t correct = 0;
  for (size_t i = 0; i < k; ++i) correct += r.confusion[i][i];
  r.loss = r.examples ? loss_sum / static_cast<double>(r.examples) : 0;
  r.accuracy = r.examples ? static_cast<double>(correct) / static_cast<double>(r.examples) : 0;

  out << "test set: " << r.examples << " examples\n";
  out << "test loss " << fixed(r.loss, 4) << ", test accuracy " << fixed(100 * r.accuracy, 2) << "% (" << correct << "/"
      << r.examples << ")\n";
  size_t width = 5;
  for (const auto& n : l.classes) width = std::max(width, n.size());
  out << "per-class accuracy:\n";
  for (size_t i = 0; i < k; ++i) {
    int64_t row = 0;
    for (int64_t v : r.confusion[i]) row += v;
    out << "  " << std::setw(2) << i << " " << std::left << std::setw(static_cast<int>(width)) << l.classes[i]
        << std::right << "  " << std::setw(7) << (row ? fixed(100.0 * static_cast<double>(r.confusion[i][i]) /
                                                                static_cast<double>(row), 2) + "%"
                                                          : std::string("-"))
        << "  (" << r.confusion[i][i] << "/" << row << ")\n";
  }
  out << "confusion matrix (rows: true class, columns: predicted class):\n     ";
  for (size_t j = 0; j < k; ++j) out << std::setw(6) << j;
  out << "\n";
  for (size_t i = 0; i < k; ++i) {
    out << "  " << std::setw(2) << i << " ";
    for (size_t j = 0; j < k; ++j) out << std::setw(6) << r.confusion[i][j];
    out << "  " << l.classes[i] << "\n";
  }
  const std::string svg = confusion_svg(r.confusion, l.classes,
                                        "confusion matrix: " + l.model + " on " + std::to_string(r.examples) + " " +
                                            l.dataset + " test examples, accuracy " + fixed(100 * r.accuracy, 2) +
                                            "%");
  io::atomic_write(r.svg, "tandem eval", [&](io::FileWriter& w) { w.write(svg.data(), svg.size()); });
  out << "confusion matrix picture: " << r.svg << "\n" << std::flush;
  return r;
}

std::string confusion_svg(const std::vector<std::vector<int64_t>>& confusion, const std::vector<std::string>& classes,
                          const std::string& title) {
  const size_t k = confusion.size();
  TANDEM_CHECK(classes.size() == k, ValueError, "confusion_svg", "got ", k, " rows and ", classes.size(), " class names");
  for (const auto& row : confusion)
    TANDEM_CHECK(row.size() == k, ValueError, "confusion_svg", "a row of ", row.size(), " counts, expected ", k);
  const double cell = 44, left = 150, top = 70;
  const double width = left + cell * static_cast<double>(k) + 30, height = top + cell * static_cast<double>(k) + 50;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 "
     << width << " " << height << "\" font-family=\"sans-serif\">\n<rect width=\"" << width << "\" height=\"" << height
     << "\" fill=\"white\"/>\n";
  os << "<text x=\"" << width / 2 << "\" y=\"20\" text-anchor=\"middle\" font-size=\"13\" font-weight=\"bold\">"
     << xml_escape(title) << "</text>\n";
  os << "<text x=\"" << left + cell * static_cast<double>(k) / 2 << "\" y=\"" << top - 28
     << "\" text-anchor=\"middle\" font-size=\"12\">predicted class</text>\n";
  os << "<text transform=\"translate(14," << top + cell * static_cast<double>(k) / 2
     << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">true class</text>\n";
  for (size_t j = 0; j < k; ++j)
    os << "<text x=\"" << left + cell * (static_cast<double>(j) + 0.5) << "\" y=\"" << top - 8
       << "\" text-anchor=\"middle\" font-size=\"11\">" << j << "</text>\n";
  for (size_t i = 0; i < k; ++i) {
    int64_t row = 0;
    for (int64_t v : confusion[i]) row += v;
    const double y = top + cell * static_cast<double>(i);
    os << "<text x=\"" << left - 8 << "\" y=\"" << y + cell / 2 + 4 << "\" text-anchor=\"end\" font-size=\"11\">"
       << xml_escape(classes[i]) << " (" << i << ")</text>\n";
    for (size_t j = 0; j < k; ++j) {
      const double frac = row ? static_cast<double>(confusion[i][j]) / static_cast<double>(row) : 0;
      // White to dark blue by the fraction of the row (the true class's examples).
      const int rr = static_cast<int>(std::lround(255 - 222 * frac)), gg = static_cast<int>(std::lround(255 - 170 * frac)),
                bb = static_cast<int>(std::lround(255 - 75 * frac));
      const double x = left + cell * static_cast<double>(j);
      os << "<rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << cell << "\" height=\"" << cell << "\" fill=\"rgb("
         << rr << "," << gg << "," << bb << ")\" stroke=\"" << (i == j ? "#222" : "#ccc") << "\" stroke-width=\""
         << (i == j ? 2 : 1) << "\"/><text x=\"" << x + cell / 2 << "\" y=\"" << y + cell / 2 + 4
         << "\" text-anchor=\"middle\" font-size=\"11\" fill=\"" << (frac > 0.5 ? "white" : "black") << "\">"
         << confusion[i][j] << "</text>\n";
    }
  }
  os << "<text x=\"" << left << "\" y=\"" << top + cell * static_cast<double>(k) + 24
     << "\" font-size=\"11\">cells: counts; shade: fraction of the true class's examples</text>\n";
  os << "</svg>\n";
  return os.str();
}

int eval_main(const std::vector<std::string>& args) {
  return subcommand_main<EvalConfig>("tandem eval", args, eval_usage(), parse_eval_args,
                                     [](const EvalConfig& c, std::ostream& out) { run_eval(c, out); });
}

// ---- predict -------------------------------------------------------------------------

std::string predict_usage() {
  return R"(usage: tandem predict --checkpoint PATH (--index LIST | --images FILE) [FLAGS]

Classifies images with a checkpoint of `tandem train`: examples of the data set by index,
or every image of an IDX file. Prints the predicted class (by name for Fashion-MNIST), its
softmax probability and, for data set examples, the true class.

  --checkpoint PATH    the checkpoint (e.g. runs/1/checkpoint.safetensors); required
  --index LIST         comma-separated example indices, e.g. 0,5,7
  --split NAME         test (default) | train: the split --index points into
  --images FILE        an IDX file (gzip'd or plain) of uint8 images [N, 28, 28] or one
                       [28, 28], pixel values 0..255 as in the data set's files
  --mode NAME          eager (default) | compiled: run the model through tandem::compile
                       (the numbers are identical)
  --data DIR           directory of the data set's IDX files (default: as tandem train)
  --model NAME         mlp | cnn, for checkpoints without tandem train's metadata
  --dataset NAME       fashion-mnist | mnist, likewise (also picks the normalisation)
  --threads T          threads for the ops (default: all cores)
  --help               this text
)";
}

PredictConfig parse_predict_args(const std::vector<std::string>& args) {
  const std::string cmd = "tandem predict";
  PredictConfig c;
  walk_flags(cmd, args,
             {"--checkpoint", "--index", "--split", "--images", "--mode", "--data", "--model", "--dataset", "--threads"},
             [&](const std::string& f, const std::string& v) {
               if (f == "--checkpoint") c.checkpoint = v;
               else if (f == "--index") {
                 std::string item;
                 std::istringstream is(v);
                 while (std::getline(is, item, ',')) c.indices.push_back(int_flag(cmd, f, item, 0));
                 if (v.empty() || c.indices.empty() || v.back() == ',')
                   throw ValueError("[tandem predict] --index got \"" + v.substr(0, 60) +
                                    "\", expected comma-separated indices like 0,5,7");
               } else if (f == "--split") c.split = one_of(cmd, f, v, {"test", "train"});
               else if (f == "--images") c.images = v;
               else if (f == "--mode") c.mode = one_of(cmd, f, v, {"eager", "compiled"});
               else if (f == "--data") c.data_dir = v;
               else if (f == "--model") c.model = one_of(cmd, f, v, {"mlp", "cnn"});
               else if (f == "--dataset") c.dataset = one_of(cmd, f, v, {"fashion-mnist", "mnist"});
               else c.threads = static_cast<int>(int_flag(cmd, f, v, 1, kMaxThreads));
             });
  if (c.checkpoint.empty()) throw ValueError("[tandem predict] --checkpoint PATH is required (see tandem predict --help)");
  if (c.indices.empty() == c.images.empty())
    throw ValueError("[tandem predict] give either --index LIST or --images FILE (see tandem predict --help)");
  return c;
}

std::vector<Prediction> run_predict(const PredictConfig& c, std::ostream& out) {
  if (c.threads > 0) set_num_threads(c.threads);
  Loaded l = load_model("tandem predict", c.checkpoint, c.model, c.dataset, c.mode);
  Tensor x, targets;
  std::vector<std::string> sources;
  if (!c.images.empty()) {
    const Tensor raw = data::read_idx(c.images);
    const bool shape_ok = (raw.dim() == 3 && raw.size(1) == 28 && raw.size(2) == 28) ||
                          (raw.dim() == 2 && raw.size(0) == 28 && raw.size(1) == 28);
    TANDEM_CHECK(raw.dtype() == kUInt8 && shape_ok, RuntimeError, "tandem predict", c.images, ": expected uint8 images [N, 28, 28] or [28, 28], got ",
                 dtype_name(raw.dtype()), " ", raw.sizes());
    const int64_t n = raw.dim() == 3 ? raw.size(0) : 1;
    // The data set's conversion: value / 255 in float32, then Normalize.
    const auto [mean, std] = dataset_normalization(l.dataset);
    x = data::transforms::Normalize(mean, std)(raw.reshape({n, 1, 28, 28}).to(kFloat32).div(255.0));
    for (int64_t i = 0; i < n; ++i) sources.push_back(c.images + "[" + std::to_string(i) + "]");
  } else {
    auto set = load_split(l.dataset, c.data_dir, c.split == "train", 0);
    for (int64_t i : c.indices)
      TANDEM_CHECK(i < set->size(), IndexError, "tandem predict", "--index ", i, " is outside the ", c.split, " split's ",
                   set->size(), " examples (indices 0..", set->size() - 1, ")");
    data::Batch b = set->get_batch(c.indices);
    x = b.data;
    targets = b.target.to(kInt64).contiguous();
    for (int64_t i : c.indices) sources.push_back(c.split + "[" + std::to_string(i) + "]");
  }
  // In batches of 1000, as evaluation: a whole data set file through the CNN at once would
  // need gigabytes of activations.
  std::vector<Tensor> parts;
  {
    InferenceMode guard;
    for (int64_t s = 0; s < x.size(0); s += 1000)
      parts.push_back(softmax(l.forward(x.slice(0, s, std::min(x.size(0), s + 1000))), 1).to(kFloat64));
  }
  const Tensor probs = cat(parts, 0).contiguous();
  const int64_t n = probs.size(0), k = probs.size(1);
  const double* p = probs.data_ptr<double>();
  std::vector<Prediction> result;
  size_t width = 0;
  for (const auto& s : sources) width = std::max(width, s.size());
  for (int64_t i = 0; i < n; ++i) {
    Prediction pr;
    pr.source = sources[static_cast<size_t>(i)];
    pr.predicted = std::max_element(p + i * k, p + (i + 1) * k) - (p + i * k);
    pr.probability = p[i * k + pr.predicted];
    pr.name = l.classes[static_cast<size_t>(pr.predicted)];
    out << std::left << std::setw(static_cast<int>(width)) << pr.source << std::right << "  " << pr.name << " (class "
        << pr.predicted << ", " << fixed(100 * pr.probability, 2) << "%)";
    if (targets.defined()) {
      pr.target = targets.data_ptr<int64_t>()[i];
      out << "  true: " << l.classes[static_cast<size_t>(pr.target)] << (pr.target == pr.predicted ? "" : "  (wrong)");
    }
    out << "\n";
    result.push_back(pr);
  }
  out << std::flush;
  return result;
}

int predict_main(const std::vector<std::string>& args) {
  return subcommand_main<PredictConfig>("tandem predict", args, predict_usage(), parse_predict_args,
                                        [](const PredictConfig& c, std::ostream& out) { run_predict(c, out); });
}

std::string command_error_text(const std::string& cmd, const std::exception& e) {
  std::string m = e.what();
  const std::string own = "[" + cmd + "] ";
  if (m.rfind(own, 0) == 0) m.erase(0, own.size());
  return cmd + ": " + m;
}

}  // namespace tandem::tools
