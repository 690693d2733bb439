// The process group's collectives against values each rank computes on its own (every
// rank knows what every other rank sends: it is a function of the rank), blocking and
// asynchronous, for float32/float64/bfloat16; and the errors of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <thread>

#include "tandem/tandem.h"

using namespace tandem;
namespace dist = tandem::distributed;

namespace {
// Rank r's tensor: element i is (r + 1) * (i + 1) / 4 (exact in bfloat16 for small i).
Tensor rank_tensor(int r, int64_t n, DType dt) {
  return (arange(1, n + 1, 1, DType::Float64) * (r + 1) / 4.0).to(dt);
}
double sum_over_ranks(int64_t i) {
  double s = 0;
  for (int r = 0; r < dist::world_size(); ++r) s += (r + 1) * (i + 1) / 4.0;
  return s;
}
}  // namespace

TEST(Collectives, RankAndSize) {
  ASSERT_TRUE(dist::is_initialized());
  EXPECT_GE(dist::world_size(), 2) << "run under mpirun -np 2 (or more)";
  EXPECT_GE(dist::rank(), 0);
  EXPECT_LT(dist::rank(), dist::world_size());
  // Every rank knows a distinct rank: gather them.
  auto all = dist::all_gather_strings(std::to_string(dist::rank()));
  ASSERT_EQ(static_cast<int>(all.size()), dist::world_size());
  for (int r = 0; r < dist::world_size(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], std::to_string(r));
}

TEST(Collectives, AllReduceSumAndAvgEveryDtype) {
  const int64_t n = 37;
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Tensor t = rank_tensor(dist::rank(), n, dt);
    dist::all_reduce(t);
    Tensor a = rank_tensor(dist::rank(), n, dt);
    dist::all_reduce(a, dist::ReduceOp::kAvg);
    EXPECT_EQ(t.dtype(), dt);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(t[i].item<double>(), sum_over_ranks(i)) << dtype_name(dt) << " i=" << i;  // exact: small multiples of 1/4
      EXPECT_NEAR(a[i].item<double>(), sum_over_ranks(i) / dist::world_size(), dt == DType::BFloat16 ? 0.05 : 1e-12)
          << dtype_name(dt) << " i=" << i;
    }
  }
}

TEST(Collectives, BFloat16SumOfSmallTerms) {
  // 1 + 2^-8 is not a bfloat16 (8 bits of precision): each rank sends 1 and 2^-9, which
  // sum to 1 + 2^-9 * world_size, rounded to bfloat16.
  Tensor t = tensor({1.0f, std::ldexp(1.0f, -9)}).to(DType::BFloat16);
  dist::all_reduce(t);
  const int w = dist::world_size();
  EXPECT_EQ(t[0].item<float>(), static_cast<float>(w));
  EXPECT_EQ(t[1].item<float>(), static_cast<float>(BFloat16(w * std::ldexp(1.0f, -9))));
}

TEST(Collectives, Broadcast) {
  for (int root = 0; root < dist::world_size(); ++root) {
    for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16, DType::Int64}) {
      Tensor t = rank_tensor(dist::rank(), 9, DType::Float64).to(dt);
      dist::broadcast(t, root);
      EXPECT_TRUE(t.equal(rank_tensor(root, 9, DType::Float64).to(dt))) << "root " << root << " " << dtype_name(dt);
    }
  }
}

TEST(Collectives, AllGather) {
  for (DType dt : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Tensor in = rank_tensor(dist::rank(), 6, dt).view({2, 3});
    Tensor out = dist::all_gather(in);
    ASSERT_TRUE(out.sizes().equals({dist::world_size(), 2, 3}));
    for (int r = 0; r < dist::world_size(); ++r) EXPECT_TRUE(out[r].equal(rank_tensor(r, 6, dt).view({2, 3}))) << dtype_name(dt) << " " << r;
  }
}

TEST(Collectives, AsyncWorkOverlapsComputation) {
  const int64_t n = 1 << 20;
  Tensor t = rank_tensor(dist::rank(), n, DType::Float32);
  auto work = dist::all_reduce_async(t, dist::ReduceOp::kSum);
  // Unrelated computation meanwhile, with progress checks.
  Tensor x = randn({256, 256});
  for (int k = 0; k < 5; ++k) {
    x = matmul(x, x.t()) / 256.0;
    work->test();
  }
  work->wait();
  EXPECT_TRUE(work->is_completed());
  EXPECT_GE(work->finish_time(), work->start_time());
  work->wait();  // idempotent
  for (int64_t i : {int64_t{0}, int64_t{1000}, n - 1})
    EXPECT_FLOAT_EQ(t[i].item<float>(), static_cast<float>(sum_over_ranks(i))) << i;

  // Several in flight at once, waited in reverse order; kAvg divides at wait.
  std::vector<Tensor> ts;
  std::vector<dist::WorkPtr> ws;
  for (int k = 0; k < 4; ++k) {
    ts.push_back(rank_tensor(dist::rank(), 100 + k, DType::Float64));
    ws.push_back(dist::all_reduce_async(ts.back(), dist::ReduceOp::kAvg));
  }
  Tensor b = rank_tensor(dist::rank(), 5, DType::Float32);
  auto wb = dist::broadcast_async(b, dist::world_size() - 1);
  Tensor g = empty({dist::world_size(), 3}, DType::Float64);
  auto wg = dist::all_gather_async(g, rank_tensor(dist::rank(), 3, DType::Float64));
  for (int k = 3; k >= 0; --k) ws[static_cast<size_t>(k)]->wait();
  wb->wait();
  wg->wait();
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(ts[static_cast<size_t>(k)][7].item<double>(), sum_over_ranks(7) / dist::world_size(), 1e-12);
  EXPECT_TRUE(b.equal(rank_tensor(dist::world_size() - 1, 5, DType::Float32)));
  for (int r = 0; r < dist::world_size(); ++r) EXPECT_TRUE(g[r].equal(rank_tensor(r, 3, DType::Float64)));
  dist::barrier();
}

TEST(Collectives, BadInputRaisesWithoutCommunicating) {
  // Every check runs before MPI is called, so a rank raising here does not leave the
  // others waiting (all ranks raise the same way).
  Tensor nc = randn({4, 6}).t();
  EXPECT_THROW(dist::all_reduce(nc), ValueError);
  EXPECT_THROW(dist::broadcast(nc), ValueError);
  Tensor i64 = arange(5);
  EXPECT_THROW(dist::all_reduce(i64), TypeError);
  EXPECT_THROW(dist::all_gather(i64), TypeError);
  Tensor f16 = ones({3}, DType::Float16);
  EXPECT_THROW(dist::all_reduce_async(f16), TypeError);
  Tensor ok = ones({3});
  EXPECT_THROW(dist::broadcast(ok, dist::world_size()), ValueError);
  EXPECT_THROW(dist::broadcast(ok, -1), ValueError);
  Tensor undefined;
  EXPECT_THROW(dist::all_reduce(undefined), ValueError);
  // all_gather's output: wrong shape, wrong dtype.
  EXPECT_THROW(dist::all_gather_async(empty({dist::world_size() + 1, 3}), ok), ShapeError);
  EXPECT_THROW(dist::all_gather_async(empty({dist::world_size(), 3}, DType::Float64), ok), TypeError);
  // A tensor that requires grad while grad mode is on would be written behind autograd.
  Tensor w = ones({3}).requires_grad_(true);
  EXPECT_THROW(dist::all_reduce(w), ValueError);
  try {
    dist::all_reduce(nc);
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[all_reduce] got a non-contiguous tensor"), std::string::npos) << e.what();
  }
  // Another thread: MPI runs at MPI_THREAD_FUNNELED.
  bool raised = false;
  std::thread th([&] {
    try {
      dist::barrier();
    } catch (const RuntimeError&) {
      raised = true;
    }
  });
  th.join();
  EXPECT_TRUE(raised);
  dist::barrier();  // everyone is still in step
}
