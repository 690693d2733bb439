// DistributedDataParallel under mpirun: replicas start from rank 0's state and stay
// bitwise identical; gradients are the average of the ranks' local gradients (the oracle:
// each rank computes its local gradient on a shadow copy and the ranks gather them);
// R ranks with batch b track one process with batch R*b; bucket all-reduces start while
// backward still runs; no_sync accumulates; unused parameters; mismatched models are
// refused; a compiled step under DDP still all-reduces.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>

#include "tandem/tandem.h"

using namespace tandem;
namespace dist = tandem::distributed;
using nn::parallel::DDPOptions;
using nn::parallel::DistributedDataParallel;

namespace {

std::shared_ptr<nn::Sequential> mlp(int64_t in = 20, int64_t hidden = 64, int64_t out = 5, int layers = 2) {
  std::vector<nn::ModulePtr> mods{std::make_shared<nn::Linear>(in, hidden), std::make_shared<nn::ReLU>()};
  for (int k = 1; k < layers; ++k) {
    mods.push_back(std::make_shared<nn::Linear>(hidden, hidden));
    mods.push_back(std::make_shared<nn::ReLU>());
  }
  mods.push_back(std::make_shared<nn::Linear>(hidden, out));
  return std::make_shared<nn::Sequential>(mods);
}

Tensor flat_params(const nn::Module& m) {
  std::vector<Tensor> ps;
  for (const Tensor& p : m.parameters()) ps.push_back(p.detach().flatten());
  return cat(ps);
}
Tensor flat_grads(const nn::Module& m) {
  std::vector<Tensor> gs;
  for (const Tensor& p : m.parameters()) gs.push_back(p.grad().defined() ? p.grad().flatten() : zeros_like(p).flatten());
  return cat(gs);
}

// Whether every rank holds bitwise the same `t` (float32).
bool same_on_all_ranks(const Tensor& t) {
  Tensor all = dist::all_gather(t.contiguous());
  for (int r = 1; r < dist::world_size(); ++r)
    if (std::memcmp(all[r].data_ptr(), all[0].data_ptr(), static_cast<size_t>(t.nbytes())) != 0) return false;
  return true;
}

// The mean over ranks of each rank's `t`.
Tensor mean_over_ranks(const Tensor& t) { return dist::all_gather(t.contiguous()).mean(0); }

// Rank r's batch of step `step`: x [n, in], targets in [0, classes).
std::pair<Tensor, Tensor> batch_of(int r, int step, int64_t n = 16, int64_t in = 20, int64_t classes = 5) {
  manual_seed(1000 + 17 * static_cast<uint64_t>(r) + static_cast<uint64_t>(step));
  return {randn({n, in}), randint(0, classes, {n})};
}
// This rank's batch.
std::pair<Tensor, Tensor> rank_batch(int step, int64_t n = 16, int64_t in = 20, int64_t classes = 5) {
  return batch_of(dist::rank(), step, n, in, classes);
}

}  // namespace

TEST(DDP, BroadcastsAtStartAveragesGradientsAndStaysBitwiseIdentical) {
  manual_seed(100 + static_cast<uint64_t>(dist::rank()));  // different initial weights per rank
  auto net = mlp();
  ASSERT_FALSE(same_on_all_ranks(flat_params(*net))) << "the test needs different starting points";
  auto ddp = std::make_shared<DistributedDataParallel>(net, DDPOptions{.bucket_cap_bytes = 8 * 1024});
  ASSERT_TRUE(same_on_all_ranks(flat_params(*net))) << "construction copies rank 0's parameters";
  EXPECT_GE(ddp->num_buckets(), 2);
  auto shadow = mlp();
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  for (int step = 0; step < 6; ++step) {
    auto [x, y] = rank_batch(step);
    // Oracle: this rank's local gradient on an identical copy, averaged over ranks.
    shadow->load_state_dict(net->state_dict());
    shadow->zero_grad();
    cross_entropy((*shadow)(x), y).backward();
    const Tensor local = flat_grads(*shadow);
    ASSERT_FALSE(same_on_all_ranks(local)) << "ranks see different data";
    const Tensor want = mean_over_ranks(local);

    opt.zero_grad();
    cross_entropy((*ddp)(x), y).backward();
    const Tensor got = flat_grads(*net);
    EXPECT_TRUE(got.allclose(want, 1e-5, 1e-7)) << "step " << step << ": max diff " << (got - want).abs().max().item<double>();
    EXPECT_TRUE(same_on_all_ranks(got)) << "step " << step;
    opt.step();
  }
  EXPECT_TRUE(same_on_all_ranks(flat_params(*net))) << "parameters bitwise identical after 6 steps";
}

TEST(DDP, TwoRanksAreBitwiseOneProcessAveragingBothBatchesGradients) {
  // The trajectory oracle: one process computes each rank's gradient on its batch, adds
  // them in rank order and halves the sum (what MPI's two-rank sum and kAvg do), and takes
  // the same SGD steps. With two ranks the sum is one addition, so the parameters must be
  // bitwise equal after every step; with more ranks MPI's summation order may differ.
  if (dist::world_size() != 2) GTEST_SKIP() << "bitwise only with 2 ranks";
  manual_seed(21);
  auto net = mlp();
  auto ddp = std::make_shared<DistributedDataParallel>(net, DDPOptions{.bucket_cap_bytes = 8 * 1024});
  manual_seed(21);
  auto sim = mlp();
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt_sim(sim->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  const auto params = sim->parameters();
  for (int step = 0; step < 40; ++step) {
    std::vector<std::vector<Tensor>> g(2);
    for (int r = 0; r < 2; ++r) {
      auto [x, y] = batch_of(r, step);
      sim->zero_grad();
      cross_entropy((*sim)(x), y).backward();
      for (const Tensor& p : params) g[static_cast<size_t>(r)].push_back(p.grad().clone());
    }
    {
      NoGradGuard ng;
      for (size_t k = 0; k < params.size(); ++k) {
        Tensor sum = g[0][k] + g[1][k];
        sum.div_(2.0);
        Tensor grad = params[k].grad();
        grad.copy_(sum);
      }
    }
    opt_sim.step();
    auto [x, y] = rank_batch(step);
    opt.zero_grad();
    cross_entropy((*ddp)(x), y).backward();
    opt.step();
    const Tensor a = flat_params(*net), b = flat_params(*sim);
    ASSERT_EQ(std::memcmp(a.data_ptr(), b.data_ptr(), static_cast<size_t>(a.nbytes())), 0)
        << "step " << step << ": max diff " << (a - b).abs().max().item<double>();
  }
}

TEST(DDP, RanksWithBatch64TrackOneProcessWithBatch64TimesR) {
  // Same data on every rank; one process with batch 64 * R on the DataLoader's order, and
  // R ranks with batch 64 each through DistributedSampler on the same (seed, epoch).
  const int R = dist::world_size();
  const int64_t n = 1024, b = 64;
  manual_seed(5);
  auto data = std::make_shared<data::TensorDataset>(randn({n, 20}), randint(0, 5, {n}));
  manual_seed(1);
  auto ref = mlp();
  manual_seed(1);
  auto net = mlp();
  auto ddp = std::make_shared<DistributedDataParallel>(net);
  optim::SGD opt_ref(ref->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
  data::DataLoader one(data, {.batch_size = b * R, .shuffle = true, .seed = 3, .prefetch = false});
  auto sampler = std::make_shared<data::DistributedSampler>(data::DistributedSamplerOptions{.seed = 3});
  data::DataLoader mine(data, {.batch_size = b, .seed = 0, .prefetch = false, .sampler = sampler});
  ASSERT_EQ(one.size(), mine.size());
  double max_rel = 0;
  int steps = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    one.set_epoch(epoch);
    mine.set_epoch(epoch);
    auto it = mine.begin();
    for (auto& big : one) {
      opt_ref.zero_grad();
      Tensor lref = cross_entropy((*ref)(big.data), big.target);
      lref.backward();
      opt_ref.step();
      opt.zero_grad();
      Tensor l = cross_entropy((*ddp)(it->data), it->target);
      l.backward();
      opt.step();
      Tensor lg = l.detach().clone();
      dist::all_reduce(lg, dist::ReduceOp::kAvg);  // equal shards: the global mean
      const double a = lref.item<double>(), g = lg.item<double>();
      max_rel = std::max(max_rel, std::abs(a - g) / std::max(1.0, std::abs(a)));
      // Float32 summation order differs (two means of 64 vs one of 128, reduced
      // gradients): the tolerance is 1e-5 relative, drift over 32 steps included.
      EXPECT_NEAR(g, a, 1e-5 * std::max(1.0, std::abs(a))) << "epoch " << epoch << " step " << steps;
      ++it;
      ++steps;
    }
  }
  const double pdiff = (flat_params(*net) - flat_params(*ref)).abs().max().item<double>();
  EXPECT_LT(pdiff, 1e-5);
  if (dist::rank() == 0)
    std::cout << "[ note ] " << R << " ranks x batch " << b << " vs 1 x batch " << b * R << ": " << steps
              << " steps, max relative loss difference " << max_rel << ", max parameter difference " << pdiff << "\n";
}

TEST(DDP, FirstBucketAllReduceStartsBeforeBackwardEnds) {
  manual_seed(2);
  auto net = mlp(256, 256, 10, 8);  // 8 layers of 256x256: one bucket each at this cap
  auto ddp = std::make_shared<DistributedDataParallel>(net, DDPOptions{.bucket_cap_bytes = 300 * 1024});
  ASSERT_GE(ddp->num_buckets(), 4);
  // Reverse registration order: the last layer's parameters are in bucket 0.
  const int64_t last = static_cast<int64_t>(net->parameters().size()) - 1;
  const auto b0 = ddp->bucket_params(0);
  EXPECT_NE(std::find(b0.begin(), b0.end(), last), b0.end());
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = rank_batch(step, 64, 256, 10);
    ddp->zero_grad();
    cross_entropy((*ddp)(x), y).backward();
  }
  const auto& s = ddp->last_step();
  ASSERT_EQ(static_cast<int>(s.buckets.size()), ddp->num_buckets());
  EXPECT_EQ(s.grads_in_backward, static_cast<int>(net->parameters().size()));
  const auto& first = s.buckets[0];
  EXPECT_TRUE(first.launched_in_backward);
  EXPECT_LT(first.grads_seen_at_launch, s.grads_in_backward) << "started before the last gradient arrived";
  EXPECT_LT(first.launch_s, s.backward_end_s);
  for (const auto& bt : s.buckets) EXPECT_TRUE(bt.launched_in_backward);
  for (size_t k = 1; k < s.buckets.size(); ++k) EXPECT_LE(s.buckets[k - 1].launch_s, s.buckets[k].launch_s);
  if (dist::rank() == 0) {
    std::cout << "[ note ] buckets launched at (ms):";
    for (const auto& bt : s.buckets) std::cout << " " << 1e3 * bt.launch_s;
    std::cout << "; backward end " << 1e3 * s.backward_end_s << " ms, waited " << 1e3 * s.wait_s << " ms\n";
  }
}

TEST(DDP, NoSyncAccumulatesLocallyThenAverages) {
  manual_seed(3);
  auto net = mlp();
  auto ddp = std::make_shared<DistributedDataParallel>(net, DDPOptions{.bucket_cap_bytes = 4096});
  auto shadow = mlp();
  shadow->load_state_dict(net->state_dict());
  shadow->zero_grad();
  ddp->zero_grad();
  for (int micro = 0; micro < 3; ++micro) {
    auto [x, y] = rank_batch(micro);
    cross_entropy((*shadow)(x), y).backward();
    if (micro < 2) {
      auto guard = ddp->no_sync();
      cross_entropy((*ddp)(x), y).backward();
      const Tensor g = flat_grads(*net);
      EXPECT_TRUE(g.allclose(flat_grads(*shadow), 1e-6, 1e-7)) << "local accumulation, micro " << micro;
      EXPECT_FALSE(same_on_all_ranks(g));
    } else {
      cross_entropy((*ddp)(x), y).backward();
    }
  }
  const Tensor want = mean_over_ranks(flat_grads(*shadow));
  const Tensor got = flat_grads(*net);
  EXPECT_TRUE(got.allclose(want, 1e-5, 1e-7)) << (got - want).abs().max().item<double>();
  EXPECT_TRUE(same_on_all_ranks(got));
}

namespace {
// a -> (b on the ranks that use it) ; c never used.
struct Branchy : nn::Module {
  std::shared_ptr<nn::Linear> a, b, c;
  bool use_b = true;
  Branchy() : nn::Module("Branchy") {
    a = register_module("a", std::make_shared<nn::Linear>(4, 4));
    b = register_module("b", std::make_shared<nn::Linear>(4, 4));
    c = register_module("c", std::make_shared<nn::Linear>(4, 4));
  }
  Tensor forward(const Tensor& x) override {
    Tensor h = (*a)(x);
    return use_b ? (*b)(h) : h;
  }
};
}  // namespace

TEST(DDP, UnusedParameters) {
  for (bool find_unused : {false, true}) {
    manual_seed(4);
    auto net = std::make_shared<Branchy>();
    net->use_b = dist::rank() == 0;
    auto ddp = std::make_shared<DistributedDataParallel>(
        net, DDPOptions{.bucket_cap_bytes = 64, .find_unused_parameters = find_unused});
    manual_seed(50 + static_cast<uint64_t>(dist::rank()));
    Tensor x = randn({3, 4});
    // Oracle: b's local gradient (rank 0 only; zero elsewhere), averaged.
    auto shadow = std::make_shared<Branchy>();
    shadow->use_b = net->use_b;
    shadow->load_state_dict(net->state_dict());
    shadow->zero_grad();
    (*shadow)(x).sum().backward();
    Tensor local_b = shadow->b->weight.grad().defined() ? shadow->b->weight.grad() : zeros({4, 4});
    const Tensor want_b = mean_over_ranks(local_b);

    ddp->zero_grad();
    (*ddp)(x).sum().backward();
    ASSERT_TRUE(net->b->weight.grad().defined()) << "rank " << dist::rank() << " gets rank 0's share";
    EXPECT_TRUE(net->b->weight.grad().allclose(want_b, 1e-6, 1e-7));
    EXPECT_TRUE(same_on_all_ranks(net->b->weight.grad()));
    EXPECT_TRUE(same_on_all_ranks(net->a->weight.grad()));
    if (find_unused) EXPECT_FALSE(net->c->weight.grad().defined()) << "unused on every rank: left alone";
    else EXPECT_TRUE(net->c->weight.grad().equal(zeros({4, 4}))) << "without find_unused_parameters: zeros";
  }
}

TEST(DDP, MismatchedModelsOrSettingsAreRefusedOnEveryRank) {
  auto other = std::make_shared<nn::Linear>(4, dist::rank() == 1 ? 2 : 3);
  try {
    DistributedDataParallel bad(other);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("rank 1 differs from rank 0"), std::string::npos) << m;
    EXPECT_NE(m.find("parameter 'weight'"), std::string::npos) << m;
    EXPECT_NE(m.find("[2, 4]"), std::string::npos) << m;
  }
  auto same = std::make_shared<nn::Linear>(4, 3);
  try {
    DistributedDataParallel bad(same, DDPOptions{.settings = "lr=" + std::to_string(dist::rank())});
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 has setting lr=0; rank 1 has setting lr=1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DistributedDataParallel(nullptr), ValueError);
  EXPECT_THROW(DistributedDataParallel(same, DDPOptions{.bucket_cap_bytes = 0}), ValueError);
  dist::barrier();
}

TEST(DDP, CompiledStepStillAllReduces) {
  // The whole step compiled: the DDP hooks and collectives make capture break, so the
  // step runs eagerly (with its all-reduces) and gives the eager DDP step's numbers.
  auto run = [](bool compiled) {
    manual_seed(9);
    auto net = mlp();
    auto ddp = std::make_shared<DistributedDataParallel>(net);
    optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    auto step = [&](const std::vector<Tensor>& in) {
      opt.zero_grad();
      Tensor l = cross_entropy((*ddp)(in[0]), in[1]);
      l.backward();
      opt.step();
      return std::vector<Tensor>{l};
    };
    std::shared_ptr<jit::CompiledFunction> f;
    if (compiled) f = compile(step);
    for (int s = 0; s < 4; ++s) {
      auto [x, y] = rank_batch(s);
      if (f) (*f)({x, y});
      else step({x, y});
    }
    if (f) {
      EXPECT_EQ(f->compiled_calls(), 0);
      std::string notes;
      for (const auto& w : f->warnings()) notes += w + "\n";
      // The first break noted: AccumulateGrad's, before it calls DDP's hook.
      EXPECT_NE(notes.find("graph break: a post-accumulate-grad hook ran inside a compiled function"), std::string::npos)
          << notes;
    }
    return flat_params(*net);
  };
  const Tensor eager = run(false), comp = run(true);
  EXPECT_TRUE(same_on_all_ranks(comp));
  EXPECT_TRUE(comp.equal(eager));
}

TEST(DDP, CompiledForwardAndBackwardProgramsFeedTheBuckets) {
  // tandem::compile(ddp): the forward and backward of each call are compiled programs; the
  // backward program's parameter gradients reach the eager AccumulateGrad nodes, whose
  // hooks fill the buckets, so the all-reduce runs at the program boundary.
  auto run = [](bool compiled) {
    manual_seed(11);
    auto net = mlp();
    auto ddp = std::make_shared<DistributedDataParallel>(net, DDPOptions{.bucket_cap_bytes = 8 * 1024});
    std::shared_ptr<nn::CompiledModule> cm;
    if (compiled) cm = compile(std::static_pointer_cast<nn::Module>(ddp));
    optim::SGD opt(ddp->parameters(), optim::SGDOptions(0.1).momentum(0.9));
    for (int s = 0; s < 5; ++s) {
      auto [x, y] = rank_batch(s);
      opt.zero_grad();
      Tensor logits = cm ? (*cm)(x) : (*ddp)(x);
      cross_entropy(logits, y).backward();
      EXPECT_TRUE(same_on_all_ranks(flat_grads(*net))) << "step " << s;
      opt.step();
    }
    if (cm) {
      EXPECT_GT(cm->function().compiled_calls(), 0);
      if (dist::rank() == 0)
        std::cout << "[ note ] compile(ddp): " << cm->function().compiled_calls() << " compiled / "
                  << cm->function().eager_calls() << " eager call(s); buckets ready at (ms):";
      for (const auto& bt : ddp->last_step().buckets)
        if (dist::rank() == 0) std::cout << " " << 1e3 * bt.ready_s;
      if (dist::rank() == 0) std::cout << "\n";
      EXPECT_EQ(ddp->last_step().grads_in_backward, static_cast<int>(net->parameters().size()));
    }
    return flat_params(*net);
  };
  const Tensor eager = run(false), comp = run(true);
  EXPECT_TRUE(same_on_all_ranks(comp));
  EXPECT_TRUE(comp.allclose(eager, 1e-5, 1e-6)) << (comp - eager).abs().max().item<double>();
}
