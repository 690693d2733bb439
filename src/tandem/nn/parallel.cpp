// DistributedDataParallel (see parallel.h).
#include "tandem/nn/parallel.h"

#include <sstream>

#include "tandem/core/capture_state.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"

namespace tandem::nn::parallel {

namespace {
const char* kFn = "DistributedDataParallel";

// One line per tensor and setting; ranks compare these (see the constructor).
std::vector<std::string> describe(const Module& m, const DDPOptions& o) {
  std::vector<std::string> lines;
  for (const auto& [name, p] : m.named_parameters()) {
    std::ostringstream os;
    os << "parameter '" << name << "': " << p.sizes() << " " << dtype_name(p.dtype()) << (p.requires_grad() ? "" : " (frozen)");
    lines.push_back(os.str());
  }
  for (const auto& [name, b] : m.named_buffers()) {
    std::ostringstream os;
    os << "buffer '" << name << "': " << b.sizes() << " " << dtype_name(b.dtype());
    lines.push_back(os.str());
  }
  lines.push_back(str_cat("setting bucket_cap_bytes: ", o.bucket_cap_bytes));
  lines.push_back(str_cat("setting broadcast_buffers: ", o.broadcast_buffers));
  lines.push_back(str_cat("setting find_unused_parameters: ", o.find_unused_parameters));
  // One line per whitespace-separated word of the caller's settings, so that a
  // difference names the setting ("setting lr=0.1" vs "setting lr=0.2").
  std::istringstream words(o.settings);
  for (std::string w; words >> w;) lines.push_back("setting " + w);
  return lines;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream is(s);
  for (std::string l; std::getline(is, l);) out.push_back(l);
  return out;
}

// Broadcasts t from rank 0 in place (a temporary contiguous copy for a strided tensor).
void broadcast_in_place(const Tensor& t) {
  NoGradGuard ng;
  if (t.is_contiguous()) {
    Tensor x = t;
    distributed::broadcast(x, 0);
  } else {
    Tensor c = t.contiguous();
    distributed::broadcast(c, 0);
    Tensor x = t;
    x.copy_(c);
  }
}
}  // namespace

DistributedDataParallel::DistributedDataParallel(ModulePtr module, DDPOptions options)
    : Module("DistributedDataParallel"), module_(std::move(module)), options_(std::move(options)) {
  TANDEM_CHECK(module_ != nullptr, ValueError, kFn, "got a null module, expected a module to wrap");
  TANDEM_CHECK(options_.bucket_cap_bytes >= 1, ValueError, kFn, "got bucket_cap_bytes ", options_.bucket_cap_bytes,
               ", expected >= 1");
  distributed::detail::check_ready(kFn);
  register_module("module", module_);

  // 1. Same model and settings everywhere (before any collective that depends on them).
  const std::vector<std::string> mine = describe(*module_, options_);
  const std::vector<std::string> all = distributed::all_gather_strings(join(mine));
  const std::vector<std::string> ref = split_lines(all[0]);
  for (size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const std::vector<std::string> other = split_lines(all[r]);
    size_t i = 0;
    while (i < ref.size() && i < other.size() && ref[i] == other[i]) ++i;
    const std::string a = i < ref.size() ? ref[i] : "(nothing: fewer entries)";
    const std::string b = i < other.size() ? other[i] : "(nothing: fewer entries)";
    throw RuntimeError(str_cat("[", kFn, "] rank ", r, " differs from rank 0 at entry ", i, " of the model and settings: rank 0 has ",
                               a, "; rank ", r, " has ", b, " (", ref.size(), " vs ", other.size(),
                               " entries); every rank must build the same model with the same settings"));
  }

  // 2. Parameters requiring grad, buckets in reverse registration order.
  for (const Tensor& p : module_->parameters()) {
    if (!p.requires_grad()) continue;
    TANDEM_CHECK(p.dtype() == DType::Float32 || p.dtype() == DType::Float64 || p.dtype() == DType::BFloat16, TypeError, kFn,
                 "got a parameter of dtype ", dtype_name(p.dtype()), ", expected float32, float64 or bfloat16");
    TANDEM_CHECK(p.is_contiguous(), ValueError, kFn, "got a non-contiguous parameter of shape ", p.sizes(),
                 ", expected contiguous parameters");
    params_.push_back(p);
  }
  std::vector<std::vector<int64_t>> groups;
  {
    int64_t bytes = 0;
    DType dtype = DType::Float32;
    for (size_t k = params_.size(); k-- > 0;) {
      const Tensor& p = params_[k];
      const int64_t nb = p.nbytes();
      if (groups.empty() || p.dtype() != dtype || (bytes > 0 && bytes + nb > options_.bucket_cap_bytes)) {
        groups.emplace_back();
        bytes = 0;
        dtype = p.dtype();
      }
      groups.back().push_back(static_cast<int64_t>(k));
      bytes += nb;
    }
  }
  slices_.resize(params_.size());
  bucket_of_.resize(params_.size());
  ready_.assign(params_.size(), 0);
  for (const auto& g : groups) {
    Bucket b;
    int64_t n = 0;
    for (int64_t k : g) n += params_[static_cast<size_t>(k)].numel();
    b.flat = zeros({n}, params_[static_cast<size_t>(g[0])].dtype());
    b.params = g;
    int64_t off = 0;
    for (int64_t k : g) {
      const Tensor& p = params_[static_cast<size_t>(k)];
      slices_[static_cast<size_t>(k)] = b.flat.narrow(0, off, p.numel()).view(p.sizes());
      bucket_of_[static_cast<size_t>(k)] = buckets_.size();
      off += p.numel();
    }
    buckets_.push_back(std::move(b));
  }

  // 3. Rank 0's state everywhere.
  for (const Tensor& p : module_->parameters()) broadcast_in_place(p);
  for (const Tensor& b : module_->buffers()) broadcast_in_place(b);

  // 4. Hooks.
  for (size_t k = 0; k < params_.size(); ++k)
    hooks_.push_back(autograd::register_post_accumulate_grad_hook(params_[k], [this, k](Tensor&) { on_grad_ready(k); }));
}

DistributedDataParallel::~DistributedDataParallel() {
  for (auto& h : hooks_) h.remove();
  // A Work still in flight waits in its destructor (MPI must not lose its buffer).
}

std::vector<int64_t> DistributedDataParallel::bucket_params(int b) const {
  TANDEM_CHECK(b >= 0 && b < num_buckets(), IndexError, "DistributedDataParallel::bucket_params", "got bucket ", b,
               ", expected one in [0, ", num_buckets(), ")");
  return buckets_[static_cast<size_t>(b)].params;
}

Tensor DistributedDataParallel::forward(const Tensor& input) { return forward_list({input})[0]; }

std::vector<Tensor> DistributedDataParallel::forward_list(const std::vector<Tensor>& inputs) {
  sync_next_ = no_sync_depth_ == 0;
  if (round_active_) {  // the previous backward failed midway: finish its collectives
    for (Bucket& b : buckets_)
      if (b.work) b.work->wait();
    round_active_ = false;
  }
  if (is_training() && options_.broadcast_buffers && distributed::world_size() > 1)
    for (const Tensor& b : module_->buffers()) broadcast_in_place(b);
  return (*module_)(inputs);
}

double DistributedDataParallel::since_start() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start_).count();
}

void DistributedDataParallel::begin_round() {
  round_active_ = true;
  round_start_ = std::chrono::steady_clock::now();
  current_ = StepTiming();
  current_.start = round_start_;
  for (const Bucket& b : buckets_) {
    BucketTiming t;
    t.bytes = b.flat.nbytes();
    t.num_params = static_cast<int>(b.params.size());
    current_.buckets.push_back(t);
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.params.size());
    b.launched = false;
    b.work.reset();
  }
  next_launch_ = 0;
  autograd::queue_callback([this] { end_of_backward(); });
}

void DistributedDataParallel::on_grad_ready(size_t k) {
  if (!sync_next_) return;  // under no_sync: accumulate locally
  // Communication is not part of compiled programs (see parallel.h).
  capture_state::note_break("DistributedDataParallel's gradient hook ran inside a compiled function");
  if (!round_active_) begin_round();
  if (ready_[k]) return;  // delivered already in this backward
  ready_[k] = 1;
  ++current_.grads_in_backward;
  {
    NoGradGuard ng;
    Tensor s = slices_[k];
    s.copy_(params_[k].grad());
  }
  const size_t b = bucket_of_[k];
  if (--buckets_[b].pending == 0) current_.buckets[b].ready_s = since_start();
  launch_in_order(/*in_backward=*/true);
  poll();
}

void DistributedDataParallel::launch(size_t b, bool in_backward) {
  Bucket& bk = buckets_[b];
  BucketTiming& t = current_.buckets[b];
  t.launch_s = since_start();
  t.launched_in_backward = in_backward;
  t.grads_seen_at_launch = current_.grads_in_backward;
  bk.work = distributed::all_reduce_async(bk.flat, distributed::ReduceOp::kAvg);
  bk.launched = true;
}

void DistributedDataParallel::launch_in_order(bool in_backward) {
  while (next_launch_ < buckets_.size() && buckets_[next_launch_].pending == 0) launch(next_launch_++, in_backward);
}

void DistributedDataParallel::poll() {
  for (size_t b = 0; b < next_launch_; ++b) {
    Bucket& bk = buckets_[b];
    if (bk.work && !bk.work->is_completed() && bk.work->test()) {
      current_.buckets[b].done_s = since_start();
      current_.buckets[b].done_in_backward = true;
    }
  }
}

void DistributedDataParallel::end_of_backward() {
  round_active_ = false;
  current_.backward_end_s = since_start();
  NoGradGuard ng;
  // Gradients no hook delivered: the current .grad (or zeros) goes into the bucket.
  for (size_t k = 0; k < params_.size(); ++k) {
    if (ready_[k]) continue;
    Tensor s = slices_[k];
    const Tensor& g = params_[k].grad();
    if (g.defined()) s.copy_(g);
    else s.zero_();
    Bucket& bk = buckets_[bucket_of_[k]];
    if (--bk.pending == 0) current_.buckets[bucket_of_[k]].ready_s = -1;
  }
  launch_in_order(/*in_backward=*/false);
  std::vector<char> used(ready_.begin(), ready_.end());
  if (options_.find_unused_parameters) {
    Tensor u = zeros({static_cast<int64_t>(used.size())}, DType::Float32);
    float* up = u.data_ptr<float>();
    for (size_t k = 0; k < used.size(); ++k) up[k] = used[k] ? 1.f : 0.f;
    distributed::all_reduce(u);
    for (size_t k = 0; k < used.size(); ++k) used[k] = up[k] > 0;
  } else {
    std::fill(used.begin(), used.end(), 1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t b = 0; b < buckets_.size(); ++b) {
    Bucket& bk = buckets_[b];
    if (!bk.work->is_completed() && bk.work->test()) current_.buckets[b].done_s = since_start();
    bk.work->wait();  // finishes the average
    if (current_.buckets[b].done_s < 0) current_.buckets[b].done_s = since_start();
    bk.work.reset();
  }
  current_.wait_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!used[k]) continue;
    const Tensor& g = params_[k].grad();
    if (g.defined()) {
      Tensor gg = g;
      gg.copy_(slices_[k]);
    } else {
      params_[k].set_grad(slices_[k].clone());
    }
  }
  current_.total_s = since_start();
  last_ = current_;
}

}  // namespace tandem::nn::parallel
