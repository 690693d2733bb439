// Memory of the autograd tape (issue 4): after backward without retain_graph, the
// allocator's bytes in use return to their level before the forward, apart from the new
// .grad tensors (and the loss while the caller holds it).
#include <gtest/gtest.h>

#include "tandem/tandem.h"

using namespace tandem;

namespace {

int64_t in_use() { return memory::stats().bytes_in_use; }

// What the gradients of `m`'s parameters occupy, as the allocator counts them.
int64_t grad_bytes(const nn::Module& m) {
  int64_t n = 0;
  for (const Tensor& p : m.parameters())
    if (p.grad().defined()) n += static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(p.grad().nbytes())));
  return n;
}

std::shared_ptr<nn::Sequential> tiny_mlp() {
  return std::make_shared<nn::Sequential>(std::vector<nn::ModulePtr>{
      std::make_shared<nn::Linear>(16, 16), std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 16),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Linear>(16, 1)});
}

// Runs forward + loss + backward and checks the allocator's figures at each point.
// `loss_fn` maps the model output to a scalar loss.
template <typename LossFn>
void check_step_frees_graph(nn::Module& model, const Tensor& x, LossFn loss_fn) {
  model.zero_grad(true);
  const int64_t before = in_use();
  int64_t with_graph = 0, loss_block = 0;
  {
    Tensor loss = loss_fn(model.forward(x));
    with_graph = in_use();
    loss_block = static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(loss.nbytes())));
    loss.backward();
    ASSERT_GT(grad_bytes(model), 0);
    // The saved activations are gone; only the loss (still held here) and the grads remain.
    EXPECT_EQ(in_use(), before + grad_bytes(model) + loss_block);
  }
  // The forward held activations well beyond the loss: the test would see a leak.
  EXPECT_GT(with_graph, before + loss_block);
  EXPECT_EQ(in_use(), before + grad_bytes(model));

  // Further steps accumulate into the same .grad tensors: no growth at all.
  const int64_t settled = in_use();
  for (int i = 0; i < 3; ++i) {
    model.zero_grad(false);
    loss_fn(model.forward(x)).backward();
    EXPECT_EQ(in_use(), settled) << "step " << i;
  }
}

}  // namespace

TEST(AutogradMemory, MlpBackwardFreesTheGraph) {
  manual_seed(0);
  auto model = tiny_mlp();
  Tensor x = randn({4, 16}), y = randn({4, 1});
  check_step_frees_graph(*model, x, [&](const Tensor& out) { return mse_loss(out, y); });
}

TEST(AutogradMemory, CnnBackwardFreesTheGraph) {
  manual_seed(0);
  auto model = nn::models::fashion_cnn();
  Tensor x = randn({2, 1, 28, 28});
  Tensor target = tensor({3, 7}).to(kInt64);
  check_step_frees_graph(*model, x, [&](const Tensor& out) { return cross_entropy(out, target); });
}

TEST(AutogradMemory, RetainGraphKeepsSavedTensorsUntilTheGraphGoes) {
  manual_seed(0);
  auto model = tiny_mlp();
  Tensor x = randn({4, 16}), y = randn({4, 1});
  const int64_t before = in_use();
  {
    Tensor loss = mse_loss(model->forward(x), y);
    loss.backward({}, /*retain_graph=*/true);
    const int64_t loss_block = static_cast<int64_t>(cpu_allocator_round_size(static_cast<size_t>(loss.nbytes())));
    // Saved activations stay alive for a second backward...
    EXPECT_GT(in_use(), before + grad_bytes(*model) + loss_block);
    loss.backward();
  }
  // ...and are freed with the graph.
  EXPECT_EQ(in_use(), before + grad_bytes(*model));
}

TEST(AutogradMemory, GraphDroppedWithoutBackwardIsFreed) {
  manual_seed(0);
  auto model = tiny_mlp();
  Tensor x = randn({4, 16}), y = randn({4, 1});
  const int64_t before = in_use();
  { Tensor loss = mse_loss(model->forward(x), y); }
  EXPECT_EQ(in_use(), before);
}
