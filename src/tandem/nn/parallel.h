#pragma once
// nn::parallel::DistributedDataParallel: data-parallel training over MPI
// (torch.nn.parallel.DistributedDataParallel). Every rank holds a replica of the model and
// trains on its own share of each global batch (data::DistributedSampler); after each
// backward() every rank holds the average of all ranks' gradients, so the optimizers take
// the same step and the replicas stay bitwise identical.
//
//   distributed::init_process_group();
//   auto model = std::make_shared<nn::parallel::DistributedDataParallel>(nn::models::fashion_mlp());
//   optim::SGD opt(model->parameters(), ...);
//   for (auto& batch : loader) {                // a DistributedSampler shards the data
//     opt.zero_grad();
//     cross_entropy((*model)(batch.data), batch.target).backward();  // gradients averaged here
//     opt.step();
//   }
//
// Construction (a collective: every rank constructs its wrapper at the same point):
// checks that every rank has the same parameters and buffers (names, shapes, dtypes) and
// the same DDP settings (plus options.settings, a caller's string such as its training
// flags), raising RuntimeError that names the first difference on every rank; then
// copies rank 0's parameters and buffers to all ranks.
//
// Buckets. The parameters that require grad are grouped, in reverse registration order
// (roughly the order backward produces their gradients), into buckets of at most
// options.bucket_cap_bytes (default 25 MiB; a parameter larger than the cap gets a bucket
// of its own; a new bucket also starts where the dtype changes). Each bucket owns one
// flat, contiguous buffer holding its gradients back to back, so one MPI_Iallreduce
// covers many gradients.
//
// Overlap. A post-accumulate-grad hook on each parameter copies its gradient into its
// bucket's buffer as soon as backward has accumulated it; when a bucket's last gradient
// is in, its all-reduce starts (MPI_Iallreduce) while backward goes on with earlier
// layers. Buckets start in bucket order on every rank (a bucket that is ready before an
// earlier one waits for it), since MPI matches collectives by their order. Each hook also
// drives MPI's progress (OpenMPI advances non-blocking collectives only inside MPI calls).
// A callback queued on the autograd engine (autograd::queue_callback) runs when backward's
// graph is done: it starts the buckets not started yet, waits for all, divides by the
// world size and copies the averages back into each parameter's .grad. So after
// backward() returns, .grad holds the average and optimizer.step() may run.
//
// Unused parameters. A parameter whose gradient no hook delivered in a backward
// contributes its current .grad (zeros when it has none) when its bucket starts at the
// end of backward; its bucket, and every later one, then starts only at the end (less
// overlap, same values). With options.find_unused_parameters, ranks also all-reduce which
// parameters got a gradient anywhere, and a parameter no rank used keeps its .grad
// untouched (undefined stays undefined, so optimizers skip it), as PyTorch does.
//
// Gradient accumulation. Forward calls inside a no_sync() scope mark their backward as
// local: gradients accumulate in .grad without communication. The first backward of a
// forward outside the scope all-reduces the accumulated gradients.
//
// Buffers (BatchNorm statistics) are broadcast from rank 0 at every forward in training
// mode when options.broadcast_buffers (PyTorch's default).
//
// Compiled mode: communication is not part of compiled programs. A compiled function
// whose capture reaches a DDP hook or a collective notes a graph break, so it runs
// eagerly (all-reduces included) and reports why; it never replays a program that
// skips the all-reduce.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/autograd/engine.h"
#include "tandem/distributed/process_group.h"
#include "tandem/nn/module.h"

namespace tandem::nn::parallel {

/// Settings of DistributedDataParallel (torch's constructor arguments that apply).
struct DDPOptions {
  /// Most bytes of gradients per bucket (>= 1; default 25 MiB, torch's bucket_cap_mb=25).
  int64_t bucket_cap_bytes = int64_t{25} << 20;
  /// Broadcast rank 0's buffers at every forward in training mode.
  bool broadcast_buffers = true;
  /// All-reduce which parameters got gradients, and leave those no rank used untouched.
  bool find_unused_parameters = false;
  /// Extra settings that must agree across ranks (checked at construction with the model),
  /// as whitespace-separated words ("lr=0.1 batch=64"): a difference names the word.
  std::string settings = {};
};

/// Timings of one bucket in the last synchronised backward (seconds since that backward's
/// first gradient arrived).
struct BucketTiming {
  int64_t bytes = 0;
  int num_params = 0;
  double ready_s = -1;   ///< its last gradient arrived (-1: not during backward)
  double launch_s = -1;  ///< its all-reduce started
  double done_s = -1;    ///< a progress check first saw it finished
  bool launched_in_backward = false;  ///< started before backward's graph was done
  bool done_in_backward = false;      ///< finished before backward's graph was done
  int grads_seen_at_launch = 0;       ///< gradients delivered in this backward when it started
};

/// What the last synchronised backward did.
struct StepTiming {
  std::chrono::steady_clock::time_point start;  ///< the first gradient arrived (time 0 of the *_s fields)
  std::vector<BucketTiming> buckets;
  int grads_in_backward = 0;  ///< gradients the hooks delivered
  double backward_end_s = 0;  ///< backward's graph was done (the end-of-backward callback ran)
  double wait_s = 0;          ///< time the callback spent waiting for all-reduces (exposed communication)
  double total_s = 0;         ///< first gradient to averaged .grad
};

/// Wraps a module for data-parallel training (see the file comment). The wrapped module
/// is registered as child "module" (so state_dict keys start with "module.", as PyTorch's).
class DistributedDataParallel : public Module {
 public:
  /// Wraps `module` (not null: ValueError). A collective: RuntimeError before
  /// distributed::init_process_group(), or when ranks differ in their parameters, buffers
  /// or settings (naming the first difference); ValueError for bucket_cap_bytes < 1;
  /// TypeError for a parameter requiring grad whose dtype is not float32, float64 or
  /// bfloat16; ValueError for a non-contiguous parameter.
  explicit DistributedDataParallel(ModulePtr module, DDPOptions options = {});
  ~DistributedDataParallel() override;

  /// Runs the wrapped module (after broadcasting buffers, see the file comment).
  Tensor forward(const Tensor& input) override;
  std::vector<Tensor> forward_list(const std::vector<Tensor>& inputs) override;

  /// The wrapped module.
  Module& module() const { return *module_; }
  const ModulePtr& module_ptr() const { return module_; }
  const DDPOptions& options() const { return options_; }

  /// While alive, forward calls mark their backward as local (no all-reduce; see the file
  /// comment). Nesting is allowed.
  class NoSyncGuard {
   public:
    explicit NoSyncGuard(DistributedDataParallel& ddp) : ddp_(&ddp) { ++ddp_->no_sync_depth_; }
    ~NoSyncGuard() { --ddp_->no_sync_depth_; }
    NoSyncGuard(const NoSyncGuard&) = delete;
    NoSyncGuard& operator=(const NoSyncGuard&) = delete;

   private:
    DistributedDataParallel* ddp_;
  };
  /// A NoSyncGuard for this wrapper (torch's `with ddp.no_sync():`).
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*this); }

  /// Number of buckets, and the parameter indices (into parameters()) of bucket b, in the
  /// order their gradients sit in its buffer.
  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  std::vector<int64_t> bucket_params(int b) const;
  /// Timings of the last synchronised backward.
  const StepTiming& last_step() const { return last_; }

 private:
  struct Bucket {
    Tensor flat;                     // contiguous gradients of its parameters
    std::vector<int64_t> params;     // indices into params_
    int pending = 0;                 // gradients not yet delivered this backward
    distributed::WorkPtr work;
    bool launched = false;
  };
  void on_grad_ready(size_t index);
  void begin_round();
  void launch(size_t b, bool in_backward);
  void launch_in_order(bool in_backward);
  void poll();
  void end_of_backward();
  double since_start() const;

  ModulePtr module_;
  DDPOptions options_;
  std::vector<Tensor> params_;   // requiring grad, registration order
  std::vector<Tensor> slices_;   // per parameter: its view into its bucket's buffer
  std::vector<size_t> bucket_of_;
  std::vector<char> ready_;      // delivered this backward
  std::vector<Bucket> buckets_;
  std::vector<autograd::RemovableHandle> hooks_;
  size_t next_launch_ = 0;
  bool round_active_ = false;
  bool sync_next_ = true;        // what the last forward decided
  int no_sync_depth_ = 0;
  std::chrono::steady_clock::time_point round_start_;
  StepTiming current_, last_;
};

}  // namespace tandem::nn::parallel
