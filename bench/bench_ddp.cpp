// Data-parallel training step (issue 17): the reference models' training step on one
// process, or on each rank of an MPI job through DistributedDataParallel, with the time
// split into forward, backward (its exposed all-reduce wait included) and optimizer step,
// the DDP timeline of each bucket, and blocking all-reduce times per bucket size.
//
//   bench_ddp --model mlp --batch 128 --threads 2                        one process, no DDP
//   mpirun -np 2 bench_ddp --ddp --model mlp --batch 64 --threads 1      2 ranks (add
//                                                    --allow-run-as-root as root)
//   mpirun -np 2 bench_ddp --model mlp --batch 64 --threads 1            2 independent
//                              processes, no communication (the baseline of the sync cost)
//   flags: --steps N (timed, default 40) --warmup N (default 5) --bucket-kb K (default 25 MiB)
//          --json FILE (rank 0 writes the results there; default stdout)
//
// Data: synthetic Fashion-MNIST-shaped batches ([B, 1, 28, 28] normal, 10 classes), a few
// per rank, reused (the data path is not what is measured). Medians over the timed steps.
#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tandem/tandem.h"

using namespace tandem;
using Clock = std::chrono::steady_clock;

namespace {
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}
}  // namespace

int main(int argc, char** argv) {
  std::string model_name = "mlp", json_path;
  int64_t batch = 128, steps = 40, warmup = 5, bucket_kb = 25 * 1024;
  int threads = 0;
  bool use_ddp = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "bench_ddp: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--model") model_name = next();
    else if (a == "--batch") batch = std::stoll(next());
    else if (a == "--steps") steps = std::stoll(next());
    else if (a == "--warmup") warmup = std::stoll(next());
    else if (a == "--threads") threads = std::stoi(next());
    else if (a == "--bucket-kb") bucket_kb = std::stoll(next());
    else if (a == "--json") json_path = next();
    else if (a == "--ddp") use_ddp = true;
    else {
      std::cerr << "bench_ddp: unknown flag " << a << "\n";
      return 2;
    }
  }
  if (use_ddp) distributed::init_process_group();
  if (threads > 0) set_num_threads(threads);
  const int rank = use_ddp ? distributed::rank() : 0, world = use_ddp ? distributed::world_size() : 1;

  manual_seed(0);
  std::shared_ptr<nn::Module> model =
      model_name == "cnn" ? std::shared_ptr<nn::Module>(nn::models::fashion_cnn()) : nn::models::fashion_mlp();
  std::shared_ptr<nn::parallel::DistributedDataParallel> ddp;
  nn::Module* run = model.get();
  if (use_ddp) {
    nn::parallel::DDPOptions o;
    o.bucket_cap_bytes = bucket_kb * 1024;
    ddp = std::make_shared<nn::parallel::DistributedDataParallel>(model, o);
    run = ddp.get();
  }
  optim::SGD opt(model->parameters(), optim::SGDOptions(0.01).momentum(0.9));
  manual_seed(100 + static_cast<uint64_t>(rank));
  std::vector<std::pair<Tensor, Tensor>> data;
  for (int k = 0; k < 4; ++k) data.emplace_back(randn({batch, 1, 28, 28}), randint(0, 10, {batch}));

  std::vector<double> t_step, t_fwd, t_bwd, t_opt, t_wait;
  std::vector<std::vector<double>> ready(ddp ? static_cast<size_t>(ddp->num_buckets()) : 0),
      launch(ready.size()), done(ready.size());
  std::vector<int64_t> bucket_bytes;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    const auto& [x, y] = data[static_cast<size_t>(s) % data.size()];
    if (use_ddp) distributed::barrier();  // ranks start each step together
    const auto t0 = Clock::now();
    opt.zero_grad();
    Tensor loss = cross_entropy(run->forward(x), y);
    const auto t1 = Clock::now();
    loss.backward();
    const auto t2 = Clock::now();
    opt.step();
    const auto t3 = Clock::now();
    if (s < warmup) continue;
    t_step.push_back(ms(t3 - t0));
    t_fwd.push_back(ms(t1 - t0));
    t_bwd.push_back(ms(t2 - t1));
    t_opt.push_back(ms(t3 - t2));
    if (ddp) {
      const auto& st = ddp->last_step();
      t_wait.push_back(1e3 * st.wait_s);
      const double off = ms(st.start - t1);  // time 0 of the DDP timeline, from backward's start
      bucket_bytes.clear();
      for (size_t b = 0; b < st.buckets.size(); ++b) {
        const auto& bt = st.buckets[b];
        bucket_bytes.push_back(bt.bytes);
        ready[b].push_back(bt.ready_s >= 0 ? off + 1e3 * bt.ready_s : ms(t2 - t1));
        launch[b].push_back(off + 1e3 * bt.launch_s);
        done[b].push_back(off + 1e3 * bt.done_s);
      }
    }
  }
  // Blocking all-reduce of each bucket's size, alone (no computation), median of 20.
  std::vector<double> allreduce_ms;
  for (int64_t bytes : bucket_bytes) {
    Tensor t = zeros({bytes / 4});
    std::vector<double> v;
    for (int k = 0; k < 22; ++k) {
      distributed::barrier();
      const auto a = Clock::now();
      distributed::all_reduce(t, distributed::ReduceOp::kAvg);
      if (k >= 2) v.push_back(ms(Clock::now() - a));
    }
    allreduce_ms.push_back(median(v));
  }
  // Without --ddp under mpirun (independent ranks, the no-communication baseline) only
  // MPI's rank 0 writes.
  const char* mpi_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  const bool writes = use_ddp ? rank == 0 : (mpi_rank == nullptr || std::string(mpi_rank) == "0");
  if (writes) {
    std::ostringstream js;
    const double step = median(t_step), wait = median(t_wait), bwd = median(t_bwd);
    double comm = 0;
    for (double a : allreduce_ms) comm += a;
    js << "{\"model\": \"" << model_name << "\", \"ranks\": " << world << ", \"threads\": " << get_num_threads()
       << ", \"ddp\": " << (use_ddp ? "true" : "false") << ", \"batch_per_rank\": " << batch
       << ", \"global_batch\": " << batch * world << ", \"steps\": " << steps << ", \"step_ms\": " << step
       << ", \"samples_per_s\": " << 1e3 * static_cast<double>(batch * world) / step << ", \"forward_ms\": " << median(t_fwd)
       << ", \"backward_ms\": " << bwd << ", \"optimizer_ms\": " << median(t_opt) << ", \"wait_ms\": " << wait
       << ", \"comm_serial_ms\": " << comm << ", \"bucket_kb\": " << bucket_kb << ", \"buckets\": [";
    for (size_t b = 0; b < bucket_bytes.size(); ++b)
      js << (b ? ", " : "") << "{\"bytes\": " << bucket_bytes[b] << ", \"ready_ms\": " << median(ready[b])
         << ", \"launch_ms\": " << median(launch[b]) << ", \"done_ms\": " << median(done[b])
         << ", \"allreduce_ms\": " << allreduce_ms[b] << "}";
    js << "]}\n";
    if (json_path.empty()) std::cout << js.str();
    else std::ofstream(json_path) << js.str();
  }
  if (use_ddp) distributed::finalize();
  return 0;
}
