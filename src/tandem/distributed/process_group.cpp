// The MPI process group (see process_group.h).
#include "tandem/distributed/process_group.h"

// OpenMPI's mpi.h would pull in its deprecated C++ bindings (and their warnings).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "tandem/autograd/engine.h"
#include "tandem/core/capture_state.h"
#include "tandem/core/grad_mode.h"
#include "tandem/core/half.h"
#include "tandem/core/parallel.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"

namespace tandem::distributed {

namespace detail {
struct WorkState {
  MPI_Request request = MPI_REQUEST_NULL;
  std::vector<Tensor> keep;         // buffers MPI reads or writes until done
  std::function<void()> finish;     // after completion, once (kAvg's division)
  bool done = false, finished = false;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now(), end;
};
}  // namespace detail

namespace {

struct Group {
  bool initialized = false;
  bool finalized = false;
  bool we_initialized_mpi = false;
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1, local_size = 1;
  std::thread::id owner;
  MPI_Datatype bf16 = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum = MPI_OP_NULL;
};
Group& group() {
  static Group g;
  return g;
}

// inout[i] = bf16(float(in[i]) + float(inout[i])): MPI's user-op signature.
void bf16_sum_fn(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bfloat16_bits(bfloat16_bits_to_float(a[i]) + bfloat16_bits_to_float(b[i]));
}

MPI_Datatype mpi_type(DType d) {
  switch (d) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::BFloat16: return group().bf16;
    default: return MPI_DATATYPE_NULL;
  }
}

// Common checks of a tensor a collective reads or writes.
void check_tensor(const char* fn, const Tensor& t, bool written, bool any_dtype = false) {
  detail::check_ready(fn);
  TANDEM_CHECK(t.defined(), ValueError, fn, "got an undefined tensor, expected a defined one");
  TANDEM_CHECK(any_dtype || t.dtype() == DType::Float32 || t.dtype() == DType::Float64 || t.dtype() == DType::BFloat16,
               TypeError, fn, "got dtype ", dtype_name(t.dtype()), ", expected float32, float64 or bfloat16");
  TANDEM_CHECK(t.is_contiguous(), ValueError, fn, "got a non-contiguous tensor (sizes ", t.sizes(), ", strides ",
               t.strides(), "), expected a contiguous one (call .contiguous() and copy the result back)");
  TANDEM_CHECK(!written || !(t.requires_grad() && is_grad_enabled()), ValueError, fn,
               "got a tensor that requires grad while grad mode is on, expected one that does not (the collective writes it "
               "outside autograd: use NoGradGuard or .detach())");
  TANDEM_CHECK(t.nbytes() <= INT32_MAX, ValueError, fn, "got ", t.nbytes(), " bytes, expected at most ", INT32_MAX,
               " (MPI counts are int)");
  // Communication is not an op: a compiled function that reaches it runs eagerly.
  capture_state::note_break(str_cat("a distributed collective (", fn,
                                    ") ran inside a compiled function; communication is not part of compiled programs"));
}

// The raw buffer of a checked tensor (no capture data-read note: the collective noted a
// graph break above already).
void* raw(const Tensor& t) { return t.impl()->data(); }

int check_root(const char* fn, int root) {
  TANDEM_CHECK(root >= 0 && root < group().size, ValueError, fn, "got root ", root, ", expected a rank in [0, ",
               group().size, ")");
  return root;
}

std::function<void()> avg_finisher(const Tensor& t, ReduceOp op) {
  if (op != ReduceOp::kAvg || group().size == 1) return nullptr;
  const int n = group().size;
  return [t, n] {
    NoGradGuard ng;
    Tensor x = t;
    x.div_(Scalar(static_cast<double>(n)));
  };
}

WorkPtr make_work(std::unique_ptr<detail::WorkState> s) { return std::make_shared<Work>(std::move(s)); }

}  // namespace

void detail::check_ready(const char* fn) {
  const Group& g = group();
  TANDEM_CHECK(g.initialized, RuntimeError, fn,
               "the process group is not initialized, expected a call to distributed::init_process_group() first");
  TANDEM_CHECK(std::this_thread::get_id() == g.owner, RuntimeError, fn,
               "called from a thread other than the one that called init_process_group(), expected that thread (MPI "
               "runs at MPI_THREAD_FUNNELED)");
}

void detail::poke_progress() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, group().comm, &flag, MPI_STATUS_IGNORE);
}

void init_process_group() {
  Group& g = group();
  if (g.initialized) return;
  TANDEM_CHECK(!g.finalized, RuntimeError, "init_process_group",
               "called after finalize(), expected one process group per process (MPI cannot be initialized twice)");
  int already = 0;
  MPI_Initialized(&already);
  int provided = 0;
  if (!already) {
    MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    g.we_initialized_mpi = true;
  } else {
    MPI_Query_thread(&provided);
  }
  TANDEM_CHECK(provided >= MPI_THREAD_FUNNELED, RuntimeError, "init_process_group", "MPI provides thread level ",
               provided, ", expected at least MPI_THREAD_FUNNELED (", MPI_THREAD_FUNNELED, ")");
  MPI_Comm_dup(MPI_COMM_WORLD, &g.comm);
  MPI_Comm_rank(g.comm, &g.rank);
  MPI_Comm_size(g.comm, &g.size);
  MPI_Comm local;
  MPI_Comm_split_type(g.comm, MPI_COMM_TYPE_SHARED, g.rank, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &g.local_size);
  MPI_Comm_free(&local);
  MPI_Type_contiguous(2, MPI_BYTE, &g.bf16);
  MPI_Type_commit(&g.bf16);
  MPI_Op_create(&bf16_sum_fn, /*commute=*/1, &g.bf16_sum);
  g.owner = std::this_thread::get_id();
  g.initialized = true;
  // Ranks on one machine share its cores: cap each rank's pool at its share unless the
  // user chose (OMP_NUM_THREADS).
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  if (std::getenv("OMP_NUM_THREADS") == nullptr && g.local_size > 1 &&
      static_cast<unsigned>(get_num_threads() * g.local_size) > hw)
    set_num_threads(std::max(1, static_cast<int>(hw) / g.local_size));
}

bool is_initialized() { return group().initialized; }

void finalize() {
  Group& g = group();
  if (!g.initialized) return;
  detail::check_ready("finalize");
  MPI_Op_free(&g.bf16_sum);
  MPI_Type_free(&g.bf16);
  MPI_Comm_free(&g.comm);
  if (g.we_initialized_mpi) MPI_Finalize();
  g.initialized = false;
  g.finalized = true;
}

void abort(int code) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (init && !fin) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

int rank() {
  TANDEM_CHECK(group().initialized, RuntimeError, "rank",
               "the process group is not initialized, expected a call to distributed::init_process_group() first");
  return group().rank;
}
int world_size() {
  TANDEM_CHECK(group().initialized, RuntimeError, "world_size",
               "the process group is not initialized, expected a call to distributed::init_process_group() first");
  return group().size;
}
int local_world_size() {
  TANDEM_CHECK(group().initialized, RuntimeError, "local_world_size",
               "the process group is not initialized, expected a call to distributed::init_process_group() first");
  return group().local_size;
}

// ---------------------------------------------------------------- Work
Work::Work(std::unique_ptr<detail::WorkState> state) : state_(std::move(state)) {}
Work::~Work() {
  if (!state_ || state_->done || !group().initialized) return;
  MPI_Wait(&state_->request, MPI_STATUS_IGNORE);  // never free a buffer MPI still uses
}
bool Work::test() {
  detail::check_ready("Work::test");
  if (!state_->done) {
    int flag = 0;
    MPI_Test(&state_->request, &flag, MPI_STATUS_IGNORE);
    if (flag) {
      state_->done = true;
      state_->end = std::chrono::steady_clock::now();
    }
  }
  return state_->done;
}
void Work::wait() {
  detail::check_ready("Work::wait");
  if (!state_->done) {
    MPI_Wait(&state_->request, MPI_STATUS_IGNORE);
    state_->done = true;
    state_->end = std::chrono::steady_clock::now();
  }
  if (!state_->finished) {
    state_->finished = true;
    if (state_->finish) state_->finish();
    state_->keep.clear();
  }
}
bool Work::is_completed() const { return state_->done; }
std::chrono::steady_clock::time_point Work::start_time() const { return state_->start; }
std::chrono::steady_clock::time_point Work::finish_time() const { return state_->end; }

// ---------------------------------------------------------------- collectives
void all_reduce(Tensor& tensor, ReduceOp op) { all_reduce_async(tensor, op)->wait(); }

WorkPtr all_reduce_async(Tensor tensor, ReduceOp op) {
  check_tensor("all_reduce", tensor, /*written=*/true);
  tensor.bump_version();  // saved copies of it are stale from here on
  auto s = std::make_unique<detail::WorkState>();
  const MPI_Op mop = tensor.dtype() == DType::BFloat16 ? group().bf16_sum : MPI_SUM;
  MPI_Iallreduce(MPI_IN_PLACE, raw(tensor), static_cast<int>(tensor.numel()), mpi_type(tensor.dtype()), mop, group().comm,
                 &s->request);
  s->finish = avg_finisher(tensor, op);
  s->keep.push_back(std::move(tensor));
  return make_work(std::move(s));
}

void broadcast(Tensor& tensor, int root) { broadcast_async(tensor, root)->wait(); }

WorkPtr broadcast_async(Tensor tensor, int root) {
  check_tensor("broadcast", tensor, /*written=*/true, /*any_dtype=*/true);
  check_root("broadcast", root);
  tensor.bump_version();
  auto s = std::make_unique<detail::WorkState>();
  MPI_Ibcast(raw(tensor), static_cast<int>(tensor.nbytes()), MPI_BYTE, root, group().comm, &s->request);
  s->keep.push_back(std::move(tensor));
  return make_work(std::move(s));
}

Tensor all_gather(const Tensor& input) {
  check_tensor("all_gather", input, /*written=*/false);
  std::vector<int64_t> shape{group().size};
  for (int64_t d : input.sizes()) shape.push_back(d);
  Tensor out = empty(shape, input.dtype());
  all_gather_async(out, input)->wait();
  return out;
}

WorkPtr all_gather_async(Tensor output, const Tensor& input) {
  check_tensor("all_gather", input, /*written=*/false);
  check_tensor("all_gather", output, /*written=*/true);
  TANDEM_CHECK(output.dtype() == input.dtype(), TypeError, "all_gather", "got output dtype ", dtype_name(output.dtype()),
               " and input dtype ", dtype_name(input.dtype()), ", expected the same");
  std::vector<int64_t> shape{group().size};
  for (int64_t d : input.sizes()) shape.push_back(d);
  TANDEM_CHECK(output.sizes().equals(IntArrayRef(shape)), ShapeError, "all_gather", "got output shape ", output.sizes(),
               " for input shape ", input.sizes(), ", expected ", IntArrayRef(shape), " ([world_size, *input.shape])");
  output.bump_version();
  auto s = std::make_unique<detail::WorkState>();
  MPI_Iallgather(raw(input), static_cast<int>(input.numel()), mpi_type(input.dtype()), raw(output),
                 static_cast<int>(input.numel()), mpi_type(input.dtype()), group().comm, &s->request);
  s->keep.push_back(input);
  s->keep.push_back(std::move(output));
  return make_work(std::move(s));
}

void barrier() {
  detail::check_ready("barrier");
  MPI_Barrier(group().comm);
}

std::vector<std::string> all_gather_strings(const std::string& str) {
  detail::check_ready("all_gather_strings");
  const Group& g = group();
  TANDEM_CHECK(str.size() <= INT32_MAX, ValueError, "all_gather_strings", "got ", str.size(),
               " bytes, expected at most ", INT32_MAX);
  int len = static_cast<int>(str.size());
  std::vector<int> lens(static_cast<size_t>(g.size)), offs(static_cast<size_t>(g.size));
  MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, g.comm);
  int64_t total = 0;
  for (int r = 0; r < g.size; ++r) {
    offs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += lens[static_cast<size_t>(r)];
  }
  TANDEM_CHECK(total <= INT32_MAX, ValueError, "all_gather_strings", "got ", total, " bytes in all, expected at most ",
               INT32_MAX);
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(str.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(), MPI_CHAR, g.comm);
  std::vector<std::string> out;
  for (int r = 0; r < g.size; ++r)
    out.push_back(all.substr(static_cast<size_t>(offs[static_cast<size_t>(r)]), static_cast<size_t>(lens[static_cast<size_t>(r)])));
  return out;
}

}  // namespace tandem::distributed
