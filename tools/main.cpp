// The `tandem` command-line program. Subcommands: train (the main job: train a network on
// Fashion-MNIST, see train.h), eval and predict (use a checkpoint, eval.h), dump (the
// captured graph of a model, dump.h), run (an ONNX model, run.h), demo (a tour of the
// tensor library).
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tandem/tandem.h"
#include "dump.h"
#include "eval.h"
#include "run.h"
#include "train.h"

namespace {

using namespace tandem;

void section(const std::string& title) { std::cout << "\n== " << title << " ==\n"; }

int demo() {
  manual_seed(0);
  section("tensors");
  Tensor a = arange(12, kFloat32).view({3, 4});
  std::cout << "a = arange(12).view({3, 4})\n" << a << "\n";
  std::cout << "zeros({2, 2}, float64)\n" << zeros({2, 2}, kFloat64) << "\n";
  std::cout << "randn({2, 3}) with manual_seed(0)\n" << randn({2, 3}) << "\n";

  section("views share storage (no copy)");
  Tensor col = a.t().select(0, 1);
  std::cout << "a.t().select(0, 1) = " << col << "  strides " << col.strides() << " offset " << col.storage_offset() << "\n";
  Tensor every_other = a.slice(1, 0, std::nullopt, 2);
  std::cout << "a.slice(1, 0, end, 2) =\n" << every_other << "  strides " << every_other.strides() << "\n";
  every_other.fill_(-1);
  std::cout << "after slice.fill_(-1), a =\n" << a << "\n";
  Tensor r = a.t().reshape({12});
  std::cout << "a.t().reshape({12}) copies (not viewable): aliases a? " << std::boolalpha << r.is_alias_of(a) << "\n";

  section("type promotion (PyTorch result_type)");
  Tensor i = arange(3);
  std::cout << "int64 + 0.5      -> " << (i + 0.5) << "\n";
  std::cout << "uint8 + int8     -> dtype " << dtype_name((ones({1}, kUInt8) + ones({1}, kInt8)).dtype()) << "\n";
  std::cout << "float16 * 2.0    -> dtype " << dtype_name((ones({1}, kFloat16) * 2.0).dtype()) << "\n";

  section("autograd");
  Tensor x = tensor({1.0, 2.0, 3.0}).requires_grad_();
  Tensor y = (x * x * x).sum_to_size({1}).view({});
  y.backward();
  std::cout << "x = " << x << "\ny = sum(x^3) = " << y << "\ndy/dx = 3x^2 = " << x.grad() << "\n";
  Tensor g = autograd::grad({(x * x * x).sum_to_size({1}).view({})}, {x}, {}, true, true)[0];
  Tensor g2 = autograd::grad({g.sum_to_size({1}).view({})}, {x})[0];
  std::cout << "d2y/dx2 = 6x = " << g2 << "\n";

  section("profiler");
  profiler::Profiler prof;
  Tensor s = zeros({256, 256});
  for (int k = 0; k < 20; ++k) s = s * 0.5 + 1.0;
  prof.stop();
  std::cout << prof.table(5);

  section("memory");
  auto st = memory::stats();
  std::cout << "allocator: " << st.bytes_in_use << " bytes in use, peak " << st.peak_bytes_in_use << ", "
            << st.num_cache_hits << " of " << st.num_allocations << " allocations served from the cache\n";
  std::cout << "\nNext: `./run test` runs the test suite; bench/RESULTS.md compares against PyTorch.\n";
  return 0;
}

void usage(std::ostream& os) {
  os << "usage: tandem <command> [FLAGS]\n\n"
        "commands:\n"
        "  train      train an MLP or CNN on Fashion-MNIST (tandem train --help)\n"
        "  eval       test loss, accuracy, per-class accuracy and confusion matrix of a checkpoint\n"
        "             (tandem eval --help)\n"
        "  predict    classify data set examples or an IDX file's images with a checkpoint\n"
        "             (tandem predict --help)\n"
        "  dump       print the graph compiled mode captures for a model (tandem dump --help)\n"
        "  run        run an ONNX model on .pb / .npy inputs, eagerly or compiled (tandem run --help)\n"
        "  export     write a reference model (and a checkpoint's weights) as ONNX (tandem export --help)\n"
        "  demo       a tour of the tensor library: tensors, views, promotion, autograd, profiler\n"
        "  --version  the version of tandem\n"
        "  --help     this text\n";
}

std::string demo_usage() {
  return "usage: tandem demo\n\n"
         "A tour of the tensor library, printed: tensors, views sharing storage, type promotion,\n"
         "autograd (first and second derivatives), the profiler and the allocator's statistics.\n"
         "Takes no flags.\n\n"
         "  --help   this text\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      usage(std::cout);
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      if (argc > 2) {
        std::cerr << "tandem: --version takes no arguments, got \"" << argv[2] << "\"\n";
        return 2;
      }
      std::cout << "tandem " << TANDEM_VERSION << "\n";
      return 0;
    }
    if (cmd == "demo") {
      for (int i = 2; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
          std::cout << demo_usage();
          return 0;
        }
      }
      if (argc > 2) {
        std::cerr << "tandem demo: unknown argument \"" << argv[2] << "\" (see tandem demo --help)\n";
        return 2;
      }
      return demo();
    }
    if (cmd == "eval") return tandem::tools::eval_main(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd == "predict") return tandem::tools::predict_main(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd == "dump") return tandem::tools::dump_main(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd == "run") return tandem::tools::run_main(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd == "export") return tandem::tools::export_main(std::vector<std::string>(argv + 2, argv + argc));
    if (cmd == "train") return tandem::tools::train_main(std::vector<std::string>(argv + 2, argv + argc));
    std::cerr << "tandem: unknown command '" << cmd << "'\n";
    usage(std::cerr);
    return 2;
  } catch (const tandem::Error& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return 1;
  }
}
