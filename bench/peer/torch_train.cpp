// The PyTorch (libtorch 1.13) peer of bench/bench_train.cpp: the same two models with
// torch's default initialisation, batch, threads, loss and optimizers. Never links tandem.
//   bench_peer_torch_train --model mlp|cnn [--rounds R] [--seconds S] [--batch B] [--precision fp32|bf16]
// --precision bf16: forward and loss under CPU bfloat16 autocast through libtorch 1.13's C++
// API (at::autocast: what torch.autocast("cpu", dtype=torch.bfloat16) sets on entry and
// undoes on exit, weight cast cache cleared when the region ends); backward outside it.
#include <ATen/autocast_mode.h>
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
    xs.push_back(torch::randn({o.batch, 1, 28, 28}));
    ys.push_back(torch::randint(0, bt::kClasses, {o.batch}));
  }
  const bool bf16 = o.precision == "bf16";
  int64_t it = 0;
  return bt::measure("torch", o, [&] {
    const size_t i = static_cast<size_t>(it++ % bt::kBatches);
    opt->zero_grad();
    torch::Tensor loss;
    if (bf16) {  // torch.autocast("cpu", dtype=torch.bfloat16).__enter__ / __exit__
      const bool prev = at::autocast::is_cpu_enabled();
      const at::ScalarType prev_dtype = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(true);
      at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
      at::autocast::increment_nesting();
      loss = torch::nn::functional::cross_entropy(model->forward(xs[i]), ys[i]);
      if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
      at::autocast::set_cpu_enabled(prev);
      at::autocast::set_autocast_cpu_dtype(prev_dtype);
    } else {
      loss = torch::nn::functional::cross_entropy(model->forward(xs[i]), ys[i]);
    }
    loss.backward();
    opt->step();
    return loss.item<double>();
  });
}
