#pragma once
// tandem::distributed: collective communication between the processes of an MPI job
// (torch.distributed with the MPI backend). tandem writes no transport of its own: it runs
// on MPI (Debian's OpenMPI), which every cluster scheduler already starts and wires up.
//
//   mpirun -np 4 ./train              # as root add --allow-run-as-root; on few cores --oversubscribe
//
//   distributed::init_process_group();           // MPI_Init_thread, rank and size from MPI
//   Tensor g = ...;                               // same shape and dtype on every rank
//   distributed::all_reduce(g, distributed::ReduceOp::kAvg);
//   auto work = distributed::all_reduce_async(g); // MPI_Iallreduce
//   ...;                                          // compute meanwhile
//   work->wait();
//
// One process group: every process of MPI_COMM_WORLD (on a private duplicate of it, so
// tandem's messages never match a user's own MPI calls). Every collective must be called
// by every rank, in the same order, with tensors of the same shape and dtype (MPI's rule;
// a mismatch across ranks is not detectable locally: it hangs or corrupts, which is why
// nn::parallel::DistributedDataParallel checks its model's shapes across ranks at start).
//
// Threads. init_process_group() asks MPI for MPI_THREAD_FUNNELED: only the thread that
// called it may communicate (every function here checks this and raises RuntimeError on
// another thread). tandem's intra-op threads (OpenMP, core/parallel.h) never call MPI:
// they run inside ops, and collectives are not ops (they run between them, on the calling
// thread), so FUNNELED is enough and MPI need not lock. The DataLoader's prefetch thread
// does not communicate either. Cores: each rank runs its own OpenMP pool; ranks sharing a
// machine must split its cores (mpirun binds each of N ranks to its cores, and
// init_process_group() lowers the thread count to cores / local ranks when the pool would
// otherwise oversubscribe the machine; set_num_threads afterwards overrides it).
//
// Progress. OpenMPI's non-blocking collectives (libnbc) advance only inside MPI calls on
// the rank's thread, not in the background. Work::test() (and every collective call)
// drives them, so code that overlaps communication with computation should call test()
// now and then; DistributedDataParallel does at every gradient that becomes ready.
//
// Failures. MPI's default error handler (MPI_ERRORS_ARE_FATAL) stays: a failed transfer
// aborts the whole job. A rank that dies (exception out of main, kill) makes mpirun end
// every rank (it detects a process that exits without MPI_Finalize); abort() ends the
// job on purpose.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tandem/core/tensor.h"

namespace tandem::distributed {

/// The reduction of all_reduce: kSum adds the ranks' tensors; kAvg adds then divides by
/// world_size() (torch.distributed.ReduceOp.SUM / AVG).
enum class ReduceOp { kSum, kAvg };

/// Starts the process group: initialises MPI with MPI_Init_thread(MPI_THREAD_FUNNELED)
/// unless the program already did (then MPI's thread level must be at least FUNNELED),
/// duplicates MPI_COMM_WORLD, and reads rank and size from it. Caps tandem's intra-op
/// threads at max(1, cores / ranks on this machine) when more were set (see the file
/// comment). Idempotent. RuntimeError when MPI provides less than FUNNELED, or when
/// called after finalize().
void init_process_group();
/// True between init_process_group() and finalize().
bool is_initialized();
/// Frees the communicator and calls MPI_Finalize when init_process_group() initialised
/// MPI (a program that initialised MPI itself finalises it itself). Every rank must call
/// it (a collective). No-op when not initialised.
void finalize();
/// Ends every process of the job with `code` (MPI_Abort). Use it when one rank fails in a
/// way the others cannot see, so that they do not wait forever in a collective.
[[noreturn]] void abort(int code);

/// This process's rank in [0, world_size()). RuntimeError before init_process_group().
int rank();
/// Number of processes in the job. RuntimeError before init_process_group().
int world_size();
/// Number of processes of the job on this machine (MPI_COMM_TYPE_SHARED).
int local_world_size();

namespace detail {
struct WorkState;  // the MPI request, the tensors it keeps alive, the finishing step
}

/// A collective started by an *_async call. It keeps its tensors alive until finished.
/// wait() and test() must run on the thread that started the collective (RuntimeError).
/// Destroying an unfinished Work waits for it (MPI forbids freeing a buffer in flight).
class Work {
 public:
  explicit Work(std::unique_ptr<detail::WorkState> state);
  ~Work();
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  /// Blocks until the collective has finished on this rank, then finishes the result
  /// (kAvg's division). Idempotent.
  void wait();
  /// Drives MPI's progress and says whether the collective has finished on this rank
  /// (the result is finished only by wait()).
  bool test();
  /// Whether test() or wait() has seen the collective finish.
  bool is_completed() const;
  /// When it was started, and when test() or wait() first saw it finished (late by up to
  /// the interval between tests); steady_clock.
  std::chrono::steady_clock::time_point start_time() const;
  std::chrono::steady_clock::time_point finish_time() const;

 private:
  std::unique_ptr<detail::WorkState> state_;
};
using WorkPtr = std::shared_ptr<Work>;

/// All-reduces `tensor` in place across ranks (MPI_Allreduce): afterwards every rank
/// holds the sum (or the average) of all ranks' tensors. float32, float64 or bfloat16,
/// contiguous, at most 2^31 - 1 bytes; same shape and dtype on every rank. float32/float64 use MPI's own sum;
/// bfloat16 uses a user-defined MPI op that adds in float32 and rounds to bfloat16 at
/// each step of MPI's reduction (like NCCL's bfloat16 sums), so the result may differ
/// from a float32 sum rounded once. The tensor is written directly (not through an op):
/// it must not require grad under grad mode (use NoGradGuard or a detached tensor).
/// Errors: RuntimeError before init_process_group() or off the initialising thread;
/// TypeError for another dtype; ValueError for a non-contiguous or undefined tensor or one
/// that requires grad while grad mode is on.
void all_reduce(Tensor& tensor, ReduceOp op = ReduceOp::kSum);
/// all_reduce started without waiting (MPI_Iallreduce); the tensor holds the result after
/// the returned Work's wait(). Do not read or write it before. Same errors as all_reduce.
WorkPtr all_reduce_async(Tensor tensor, ReduceOp op = ReduceOp::kSum);

/// Copies `tensor` of rank `root` into `tensor` on every other rank (MPI_Bcast of its
/// bytes, so any dtype). The errors of all_reduce except the dtype's, plus ValueError
/// for a root outside [0, world_size()).
void broadcast(Tensor& tensor, int root = 0);
/// broadcast started without waiting (MPI_Ibcast).
WorkPtr broadcast_async(Tensor tensor, int root = 0);

/// Gathers every rank's `input` on every rank (MPI_Allgather): returns a new contiguous
/// tensor of shape [world_size(), *input.shape] whose row r is rank r's input. Same dtypes
/// and errors as all_reduce (input may require grad: it is only read).
Tensor all_gather(const Tensor& input);
/// all_gather into `output` (contiguous, input's dtype, shape [world_size(),
/// *input.shape]; ShapeError / TypeError otherwise) without waiting (MPI_Iallgather).
WorkPtr all_gather_async(Tensor output, const Tensor& input);

/// Blocks until every rank has called it (MPI_Barrier).
void barrier();

/// Every rank's `s`, indexed by rank (MPI_Allgather of the lengths, then MPI_Allgatherv):
/// for settings and descriptions that must agree across ranks. RuntimeError as all_reduce.
std::vector<std::string> all_gather_strings(const std::string& s);

namespace detail {
/// Raises RuntimeError (naming `fn`) unless initialised and on the initialising thread.
void check_ready(const char* fn);
/// Drives MPI's progress engine once (MPI_Test on nothing pending is cheap).
void poke_progress();
}  // namespace detail

}  // namespace tandem::distributed
