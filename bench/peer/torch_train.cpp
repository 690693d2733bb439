// The PyTorch (libtorch 1.13) peer of bench/bench_train.cpp: the same two models with
// torch's default initialisation, batch, threads, loss and optimizers. Never links tandem.
//   bench_peer_torch_train --model mlp|cnn [--rounds R] [--seconds S]
#include <torch/torch.h>

#include <memory>

#include "../train_harness.h"

namespace {

namespace tnn = torch::nn;

tnn::Sequential fashion_mlp() {
  return tnn::Sequential(tnn::Flatten(), tnn::Linear(784, 256), tnn::ReLU(), tnn::Linear(256, 128), tnn::ReLU(),
                         tnn::Linear(128, 10));
}

tnn::Sequential fashion_cnn() {
  return tnn::Sequential(tnn::Conv2d(tnn::Conv2dOptions(1, 32, 3).padding(1)), tnn::ReLU(),
                         tnn::MaxPool2d(tnn::MaxPool2dOptions(2)), tnn::Conv2d(tnn::Conv2dOptions(32, 64, 3).padding(1)),
                         tnn::ReLU(), tnn::MaxPool2d(tnn::MaxPool2dOptions(2)), tnn::Flatten(),
                         tnn::Linear(3136, 128), tnn::ReLU(), tnn::Linear(128, 10));
}

}  // namespace

int main(int argc, char** argv) {
  namespace bt = bench::train;
  const bt::Options o = bt::parse(argc, argv);
  // 2 threads whatever the environment; OPENBLAS_CORETYPE / OMP_WAIT_POLICY are left to run_all.sh.
  at::set_num_threads(bt::kThreads);
  torch::manual_seed(0);
  const bool cnn = o.model == "cnn";
  tnn::Sequential model = cnn ? fashion_cnn() : fashion_mlp();
  std::unique_ptr<torch::optim::Optimizer> opt;
  if (cnn) opt = std::make_unique<torch::optim::Adam>(model->parameters(), torch::optim::AdamOptions(1e-3));
  else opt = std::make_unique<torch::optim::SGD>(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  std::vector<torch::Tensor> xs, ys;
  for (int i = 0; i < bt::kBatches; ++i) {
    xs.push_back(torch::randn({bt::kBatch, 1, 28, 28}));
    ys.push_back(torch::randint(0, bt::kClasses, {bt::kBatch}));
  }
  int64_t it = 0;
  return bt::measure("torch", o, [&] {
    const size_t i = static_cast<size_t>(it++ % bt::kBatches);
    opt->zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(xs[i]), ys[i]);
    loss.backward();
    opt->step();
    return loss.item<double>();
  });
}
