// libFuzzer target: checkpoint metadata. Reads arbitrary bytes with read_checkpoint and
// loads them into a small model and an SGD optimizer with load_checkpoint, so the
// "tandem.*" metadata (format, optimizer name, param_groups JSON) and the tensor names
// meet every check behind them. Every input must either load or raise a tandem::Error
// with a short message.
//
// With TANDEM_FUZZ_WRITE_SEED=PATH set, it instead writes a valid checkpoint of that
// model to PATH and exits (how tests/fuzz/corpus/checkpoint/valid was made).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz_input.h"
#include "tandem/io/checkpoint.h"
#include "tandem/nn/layers.h"
#include "tandem/optim/sgd.h"
#include "tandem/tandem.h"

namespace {

struct Target {
  std::shared_ptr<tandem::nn::Linear> model = std::make_shared<tandem::nn::Linear>(3, 2);
  tandem::optim::SGD opt{model->parameters(), tandem::optim::SGDOptions(0.1).momentum(0.9)};
};

Target& target() {
  static Target* t = new Target();  // leaked: lives as long as the fuzzing process
  return *t;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* out = std::getenv("TANDEM_FUZZ_WRITE_SEED")) {
    using namespace tandem;
    manual_seed(0);
    Target& t = target();
    t.opt.zero_grad();
    t.model->forward(ones({1, 3})).sum().backward();
    t.opt.step();  // so the optimizer has state (momentum buffers) to save
    io::save_checkpoint(out, *t.model, &t.opt, {{"train.epoch", "1"}, {"train.history", "[[1,0.5,0.4,0.9,0.1,1,100]]"}});
    std::printf("wrote %s\n", out);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = tandem::fuzz::input_file(data, size);
  Target& t = target();
  try {
    tandem::io::read_checkpoint(path);
    tandem::io::load_checkpoint(path, *t.model, &t.opt);
  } catch (const tandem::Error& e) {
    if (std::strlen(e.what()) > 2048) std::abort();
  }
  return 0;
}
