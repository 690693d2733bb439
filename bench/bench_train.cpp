// tandem's training-step benchmark (issue 5): the Fashion-MNIST reference models of
// nn/models.h on random data of Fashion-MNIST shape, batch 128, 2 threads, no special
// environment. mlp + SGD (lr 0.05, momentum 0.9), cnn + Adam (lr 1e-3); each step is
// zero_grad, forward, cross_entropy, backward, optimizer step. The libtorch peer is
// bench/peer/torch_train.cpp; bench/run_all.sh runs both, one model per process.
// --mode compiled runs the model through tandem::compile(model): a forward and a backward
// program per step (loss, backward's remaining tape and the optimizer step stay eager).
//   bench_train --model mlp|cnn [--rounds R] [--seconds S] [--mode eager|compiled]
#include <memory>

#include "tandem/tandem.h"
#include "train_harness.h"

int main(int argc, char** argv) {
  namespace bt = bench::train;
  const bt::Options o = bt::parse(argc, argv);
  tandem::set_num_threads(bt::kThreads);
  tandem::manual_seed(0);
  const bool cnn = o.model == "cnn";
  auto model = cnn ? tandem::nn::models::fashion_cnn() : tandem::nn::models::fashion_mlp();
  std::unique_ptr<tandem::optim::Optimizer> opt;
  if (cnn) opt = std::make_unique<tandem::optim::Adam>(model->parameters(), tandem::optim::AdamOptions(1e-3));
  else opt = std::make_unique<tandem::optim::SGD>(model->parameters(), tandem::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<tandem::Tensor> xs, ys;
  for (int i = 0; i < bt::kBatches; ++i) {
    xs.push_back(tandem::randn({bt::kBatch, 1, 28, 28}));
    ys.push_back(tandem::randint(0, bt::kClasses, {bt::kBatch}));
  }
  auto compiled = tandem::compile(std::static_pointer_cast<tandem::nn::Module>(model));
  const bool use_compiled = o.mode == "compiled";
  int64_t it = 0;
  return bt::measure(use_compiled ? "tandem_compiled" : "tandem", o, [&] {
    const size_t i = static_cast<size_t>(it++ % bt::kBatches);
    opt->zero_grad();
    tandem::Tensor logits = use_compiled ? (*compiled)(xs[i]) : model->forward(xs[i]);
    tandem::Tensor loss = tandem::cross_entropy(logits, ys[i]);
    loss.backward();
    opt->step();
    return loss.item<double>();
  });
}
