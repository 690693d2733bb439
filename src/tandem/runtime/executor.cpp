#include "tandem/runtime/executor.h"

#include "tandem/core/allocator.h"
#include "tandem/core/memory_watch.h"

#include <algorithm>
#include <sstream>

namespace tandem::runtime {


Executor::Executor(ir::Graph graph) : graph_(std::move(graph)) { prepare(); }

void Executor::set_use_arena(bool on) {
  TANDEM_INTERNAL_ASSERT(budget_plan_.budget == 0, "set_use_arena after fit_memory_budget: the plan assumed the other mode");
  use_arena_ = on;
}

void Executor::fit_memory_budget(int64_t budget, const BudgetCosts& costs) {
  workspace_.assign(graph_.nodes().size(), 0);
  budget_costs_ = costs;
  budget_plan_ = runtime::fit_memory_budget(graph_, budget, use_arena_, costs, &workspace_);
  calibrated_ = false;
  refit_ = false;
  prepare();
}

void Executor::prepare() {
  const auto& values = graph_.values();
  const auto& nodes = graph_.nodes();
  const size_t nv = values.size();
  buffer_of_.assign(nv, -1);
  per_call_.assign(nv, false);
  // Roots that graph outputs alias are allocated per call.
  for (int o : graph_.outputs()) per_call_[static_cast<size_t>(graph_.storage_root(o))] = true;
  // Last use of every storage root: any read or write of a value aliasing it.
  std::vector<int> last_use(nv, -1), first_def(nv, -1);
  for (const auto& n : nodes) {
    for (int i : n.inputs)
      if (i >= 0) {
        int r = graph_.storage_root(i);
        last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], n.id);
      }
    for (int o : n.outputs) {
      int r = graph_.storage_root(o);
      if (r == o) first_def[static_cast<size_t>(o)] = n.id;
      last_use[static_cast<size_t>(r)] = std::max(last_use[static_cast<size_t>(r)], n.id);
    }
  }
  // Offloaded storages: each gap cuts the storage's lifetime; the bytes after a gap get a
  // buffer of their own (with an arena) and the values read after it are rebuilt there.
  offload_runs_.clear();
  spill_at_.assign(nodes.size(), {});
  reload_at_.assign(nodes.size(), {});
  sliced_at_.assign(nodes.size(), {});
  std::vector<std::vector<size_t>> gaps_of(nv);
  int64_t file_offset = 0;
  for (const auto& o : budget_plan_.offloads) {
    OffloadRun run;
    run.o = o;
    run.file_offset = file_offset;
    file_offset += (o.bytes + 4095) / 4096 * 4096;
    for (size_t k = static_cast<size_t>(o.before); k < nodes.size(); ++k)
      for (int i : nodes[k].inputs)
        if (i >= 0 && graph_.storage_root(i) == o.value && values[static_cast<size_t>(i)].producer <= o.after &&
            std::find(run.rebuilt.begin(), run.rebuilt.end(), i) == run.rebuilt.end())
          run.rebuilt.push_back(i);
    for (const auto& v : values)
      if (v.kind == ir::ValueKind::Node && graph_.storage_root(v.id) == o.value) run.on_storage.push_back(v.id);
    spill_at_[static_cast<size_t>(o.after)].push_back(offload_runs_.size());
    if (o.sliced) {
      // Out for good: the nodes after the spill touch it in pieces, through the file.
      TANDEM_INTERNAL_ASSERT(!use_arena_, "a sliced offload in a program with an arena");
      run.write = spill_writes(graph_, o);
      for (size_t k = static_cast<size_t>(o.after) + 1; k < nodes.size(); ++k) {
        SlicedAccess acc = sliced_access(graph_, static_cast<int>(k), o.value);
        if (acc.kind == SlicedAccess::Untouched) continue;
        TANDEM_INTERNAL_ASSERT(acc.kind != SlicedAccess::Whole, "node ", k, " needs sliced-offloaded value %", o.value,
                               " whole");
        sliced_at_[k].push_back({offload_runs_.size(), std::move(acc)});
      }
    } else {
      reload_at_[static_cast<size_t>(o.before)].push_back(offload_runs_.size());
    }
    gaps_of[static_cast<size_t>(o.value)].push_back(offload_runs_.size());
    offload_runs_.push_back(std::move(run));
  }
  for (auto& g : gaps_of)
    std::sort(g.begin(), g.end(), [&](size_t a, size_t b) { return offload_runs_[a].o.after < offload_runs_[b].o.after; });
  std::vector<BufferRequest> reqs;
  std::vector<int> req_value;
  for (const auto& v : values) {
    // Values of nodes passes removed stay in the value table: plan only live ones.
    if (v.kind != ir::ValueKind::Node || v.alias_of >= 0 || per_call_[static_cast<size_t>(v.id)] ||
        first_def[static_cast<size_t>(v.id)] < 0)
      continue;
    BufferRequest r;
    r.size = span_bytes(v.meta);
    // An empty value needs no memory; it is made per call (free). Planning it would put it
    // in an arena that does not exist when every value is empty (batch 0 crashed).
    if (r.size == 0) continue;
    r.first = first_def[static_cast<size_t>(v.id)];
    r.last = std::max(r.first, last_use[static_cast<size_t>(v.id)]);
    buffer_of_[static_cast<size_t>(v.id)] = static_cast<int>(reqs.size());
    const int last = r.last;
    bool back = true;  // the storage is in memory again after its last gap
    for (size_t j : gaps_of[static_cast<size_t>(v.id)]) {
      OffloadRun& run = offload_runs_[j];
      r.last = run.o.after;
      run.spill_buffer = static_cast<int>(reqs.size());
      reqs.push_back(r);
      req_value.push_back(v.id);
      if (run.o.sliced) {
        back = false;
        break;
      }
      run.reload_buffer = static_cast<int>(reqs.size());
      r.first = run.o.before;
    }
    if (back) {
      r.last = last;
      reqs.push_back(r);
      req_value.push_back(v.id);
    }
  }
  plan_ = plan_memory(reqs);
  buffer_offset_ = plan_.offsets;
  // What to drop from a run's environment after each node: the values read there for the
  // last time and results nothing reads, unless they are graph outputs. Each value counts
  // its own reads only: a view or an in-place result holds the storage itself, so the
  // buffer a value shares with its aliases is freed when the last of them is dropped (a
  // root kept until its aliases' last read would hold, say, a ReLU's input buffer through
  // the whole backward). A per-call buffer, or an input the caller passed by move (the
  // backward program's saved values), is then freed as soon as nothing needs it, as eager
  // mode frees a tensor.
  std::vector<int> last_read(nv, -1);
  std::vector<bool> is_output(nv, false);
  for (int o : graph_.outputs()) is_output[static_cast<size_t>(o)] = true;
  for (size_t k = 0; k < nodes.size(); ++k)
    for (int i : nodes[k].inputs)
      if (i >= 0) last_read[static_cast<size_t>(i)] = static_cast<int>(k);
  release_after_.assign(nodes.size(), {});
  for (size_t k = 0; k < nodes.size(); ++k) {
    auto& rel = release_after_[k];
    auto add = [&](int v) {
      if (v >= 0 && !is_output[static_cast<size_t>(v)] && std::find(rel.begin(), rel.end(), v) == rel.end())
        rel.push_back(v);
    };
    for (int i : nodes[k].inputs)
      if (i >= 0 && last_read[static_cast<size_t>(i)] == static_cast<int>(k)) add(i);
    for (int o : nodes[k].outputs)
      if (last_read[static_cast<size_t>(o)] < 0) add(o);
  }
  profile_.assign(nodes.size(), NodeProfile{});
  for (const auto& n : nodes) {
    profile_[static_cast<size_t>(n.id)].op = n.op->name;
    profile_[static_cast<size_t>(n.id)].node = n.id;
  }
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) { return run(std::vector<Tensor>(inputs)); }

std::vector<Tensor> Executor::run(std::vector<Tensor>&& inputs) {
  // First: a refit adds nodes and values (recomputations, split pieces), so the value
  // table and everything sized by it come after it.
  if (refit_) {
    // Cleared only once a plan fits: after OutOfMemoryError every later run raises too,
    // rather than running the plan the measurement showed to be over the budget.
    budget_plan_ = runtime::fit_memory_budget(graph_, budget_plan_.budget, use_arena_, budget_costs_, &workspace_,
                                              &budget_plan_);
    refit_ = false;
    prepare();
  }
  const auto& values = graph_.values();
  TANDEM_CHECK(inputs.size() == graph_.inputs().size(), ValueError, "compiled function", "got ", inputs.size(),
               " inputs, expected ", graph_.inputs().size());
  std::vector<Tensor> env(values.size());
  for (size_t i = 0; i < inputs.size(); ++i) env[static_cast<size_t>(graph_.inputs()[i])] = std::move(inputs[i]);
  inputs.clear();
  for (const auto& v : values)
    if (v.kind == ir::ValueKind::Constant) env[static_cast<size_t>(v.id)] = v.constant;

  // The arena lives for one run: between runs its memory goes back to the caching
  // allocator (which hands the same block back next time), so a program holds no memory
  // while eager code or other programs run; a training step's forward and backward
  // programs then peak no higher than their own plans.
  if (plan_.arena_bytes > 0 && use_arena_) arena_ = empty_tensor({plan_.arena_bytes}, DType::UInt8);
  struct ReleaseArena {
    Tensor& arena;
    ~ReleaseArena() { arena = Tensor(); }
  } release{arena_};
  auto run_start = std::chrono::steady_clock::now();
  if (!offload_runs_.empty() && !spill_) spill_ = std::make_unique<SpillFile>(spill_directory());
  const bool measure = !calibrated_;
  std::vector<int64_t> measured;
  if (measure) measured.assign(graph_.nodes().size(), 0);
  SmallVec<Tensor, 4> ins;
  for (const auto& n : graph_.nodes()) {
    auto t0 = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const size_t pos = static_cast<size_t>(&n - graph_.nodes().data());
    if (!reload_at_[pos].empty()) reload_before(pos, env);
    ins.clear();
    for (int i : n.inputs) ins.push_back(i >= 0 ? env[static_cast<size_t>(i)] : Tensor());
    // Sliced offloads: pieces read into buffers of their own (before the watch, which
    // measures what the kernel allocates itself), or the node stands for a file write.
    const bool through_file = !sliced_at_[pos].empty() && sliced_through_file(pos, ins);
    if (measure) memory::watch_reset();
    const OpDef& op = *n.op;
    if (through_file) {
      // A view of a storage that is out, or a copy into it that went to the file: nothing
      // to make.
    } else if (op.view) {
      // An absolute offset (as_strided's) counts from the start of the storage the viewed
      // value had in eager mode: the caller's storage for inputs, a storage of its own
      // (offset 0) for values made inside, which here may sit anywhere in the arena.
      // Known without the root's tensor, which may already be dropped (released after its
      // own last read while views of it live on).
      const int root = graph_.storage_root(n.inputs[0]);
      const ir::Value& rv = values[static_cast<size_t>(root)];
      int64_t base = 0;
      if (rv.kind == ir::ValueKind::Constant) {
        base = rv.constant.storage_offset();
      } else if (rv.kind == ir::ValueKind::Node && use_arena_ && buffer_of_[static_cast<size_t>(root)] >= 0) {
        base = buffer_offset_[static_cast<size_t>(buffer_of_[static_cast<size_t>(root)])] / element_size(rv.meta.dtype);
      }
      env[static_cast<size_t>(n.outputs[0])] = apply_view(op, ins[0], n.attrs, base);
    } else {
      OpOutputs outs;
      if (op.is_inplace) {
        outs.push_back(ins[0]);
      } else {
        for (int o : n.outputs) {
          const ir::Value& v = values[static_cast<size_t>(o)];
          int b = use_arena_ ? buffer_of_[static_cast<size_t>(o)] : -1;
          if (b >= 0) {
            int64_t off = buffer_offset_[static_cast<size_t>(b)] / element_size(v.meta.dtype);
            outs.push_back(Tensor(IntrusivePtr<TensorImpl>::make(arena_.storage(), v.meta.dtype, v.meta.sizes,
                                                                 v.meta.strides, off)));
          } else if (compute_is_contiguous(v.meta.sizes, v.meta.strides)) {
            outs.push_back(empty_tensor(v.meta.sizes, v.meta.dtype));
          } else {
            outs.push_back(empty_strided_tensor(v.meta.sizes, v.meta.strides, v.meta.dtype));
          }
        }
      }
      // An op with no outputs (the fused optimizer updates) only writes its inputs.
      const DType result_dtype =
          n.outputs.empty() ? DType::Float32 : values[static_cast<size_t>(n.outputs[0])].meta.dtype;
      run_kernel(op, ins.ref(), n.attrs, outs, result_dtype);
      for (size_t k = 0; k < n.outputs.size(); ++k) env[static_cast<size_t>(n.outputs[k])] = std::move(outs[k]);
    }
    if (measure) measured[pos] = std::max<int64_t>(0, memory::watch_peak() - memory::stats().bytes_in_use);
    // A node done through the spill file made nothing in memory to compare.
    if (node_callback_ && !through_file) node_callback_(n, env);
    if (profiling_) {
      auto t1 = std::chrono::steady_clock::now();
      auto& p = profile_[static_cast<size_t>(n.id)];
      ++p.calls;
      p.last_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
      p.total_ns += p.last_ns;
      p.start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t0 - run_start).count();
      p.bytes = 0;
      for (int o : n.outputs)
        if (env[static_cast<size_t>(o)].defined()) p.bytes += env[static_cast<size_t>(o)].nbytes();
    }
    ins.clear();
    if (!node_callback_)  // the checker compares values after later nodes
      for (int v : release_after_[pos]) env[static_cast<size_t>(v)] = Tensor();
    if (!spill_at_[pos].empty()) spill_after(pos, env);
  }
  std::vector<Tensor> out;
  for (int o : graph_.outputs()) out.push_back(env[static_cast<size_t>(o)]);
  if (measure) {
    calibrated_ = true;
    workspace_ = std::move(measured);
    // The estimate with the kernels' own allocations (of the plan's graph; with no choice
    // made that is the unconstrained program's too).
    const bool no_choice =
        budget_plan_.offloads.empty() && budget_plan_.recomputed.empty() && budget_plan_.split.empty();
    budget_plan_.planned_peak = estimate_peak(graph_, use_arena_, budget_plan_.offloads, &workspace_);
    if (no_choice) budget_plan_.unconstrained_peak = budget_plan_.planned_peak;
    refit_ = budget_plan_.planned_peak > budget_plan_.budget;
  }
  return out;
}

void Executor::spill_after(size_t k, std::vector<Tensor>& env) {
  for (size_t j : spill_at_[k]) {
    OffloadRun& run = offload_runs_[j];
    const int root = run.o.value;
    const Tensor* held = nullptr;
    for (int x : run.on_storage)
      if (!held && env[static_cast<size_t>(x)].defined()) held = &env[static_cast<size_t>(x)];
    TANDEM_INTERNAL_ASSERT(held, "offloaded value %", root, " is not in memory after node ", k);
    // Where the storage's bytes start: its arena buffer, or (allocated per value) the start
    // of its own allocation.
    int64_t start = 0;
    if (use_arena_) start = buffer_offset_[static_cast<size_t>(run.spill_buffer)];
    const char* base = static_cast<const char*>(held->storage()->data()) + start;
    if (run.write) spill_->write(run.file_offset, base, static_cast<size_t>(run.o.bytes));
    run.rebuilt_offset.clear();
    for (int x : run.rebuilt) {
      const Tensor& t = env[static_cast<size_t>(x)];
      TANDEM_INTERNAL_ASSERT(t.defined(), "value %", x, " read after an offload gap is not in memory");
      run.rebuilt_offset.push_back(t.storage_offset() * static_cast<int64_t>(element_size(t.dtype())) - start);
    }
    // Every tensor on the storage goes, so (without an arena) its memory is freed now.
    for (int x : run.on_storage) env[static_cast<size_t>(x)] = Tensor();
  }
}

bool Executor::sliced_through_file(size_t k, SmallVec<Tensor, 4>& ins) {
  bool done = false;
  for (const SlicedStep& step : sliced_at_[k]) {
    const OffloadRun& run = offload_runs_[step.run];
    const SlicedAccess& acc = step.access;
    if (acc.kind == SlicedAccess::View) {
      done = true;
    } else if (acc.kind == SlicedAccess::Write) {
      // copy_(piece, src) with a contiguous src of the piece's dtype and sizes: its bytes.
      const Tensor& src = ins[1];
      TANDEM_INTERNAL_ASSERT(src.is_contiguous(), "copy_ into a sliced offload from a non-contiguous value");
      const auto& p = acc.pieces[0];
      spill_->write(run.file_offset + p.offset,
                    static_cast<const char*>(src.storage()->data()) +
                        src.storage_offset() * static_cast<int64_t>(element_size(src.dtype())),
                    static_cast<size_t>(p.bytes));
      done = true;
    } else {
      for (const auto& p : acc.pieces) {
        const ir::Value& v = graph_.value(graph_.nodes()[k].inputs[static_cast<size_t>(p.slot)]);
        // A dense piece keeps its layout (a channels-last slice stays channels last).
        Tensor t = v.meta.strides.empty() ? empty_tensor(v.meta.sizes, v.meta.dtype)
                                          : empty_strided_tensor(v.meta.sizes, v.meta.strides, v.meta.dtype);
        spill_->read(run.file_offset + p.offset, t.storage()->data(), static_cast<size_t>(p.bytes));
        ins[static_cast<size_t>(p.slot)] = std::move(t);
      }
    }
  }
  return done;
}

void Executor::reload_before(size_t k, std::vector<Tensor>& env) {
  const auto& values = graph_.values();
  for (size_t j : reload_at_[k]) {
    OffloadRun& run = offload_runs_[j];
    Tensor holder;
    int64_t start = 0;
    if (use_arena_) {
      holder = arena_;
      start = buffer_offset_[static_cast<size_t>(run.reload_buffer)];
    } else {
      holder = empty_tensor({run.o.bytes}, DType::UInt8);
    }
    spill_->read(run.file_offset, static_cast<char*>(holder.storage()->data()) + start, static_cast<size_t>(run.o.bytes));
    for (size_t i = 0; i < run.rebuilt.size(); ++i) {
      const ir::Value& v = values[static_cast<size_t>(run.rebuilt[i])];
      const int64_t off = (start + run.rebuilt_offset[i]) / static_cast<int64_t>(element_size(v.meta.dtype));
      env[static_cast<size_t>(v.id)] =
          Tensor(IntrusivePtr<TensorImpl>::make(holder.storage(), v.meta.dtype, v.meta.sizes, v.meta.strides, off));
    }
  }
}

std::string Executor::memory_summary() const {
  std::ostringstream os;
  if (!use_arena_) os << "no arena (each value allocated when made, freed after its last use; a plan would take ";
  os << "arena " << plan_.arena_bytes << " bytes, lower bound " << plan_.lower_bound << " bytes";
  if (plan_.lower_bound > 0) os << " (" << static_cast<double>(plan_.arena_bytes) / static_cast<double>(plan_.lower_bound) << "x)";
  if (!use_arena_) os << ")";
  int64_t per_call = 0;
  for (const auto& v : graph_.values())
    if (per_call_[static_cast<size_t>(v.id)] && v.kind == ir::ValueKind::Node && v.alias_of < 0)
      per_call += span_bytes(v.meta);
  os << "; outputs " << per_call << " bytes per call";
  if (budget_plan_.budget > 0) os << "; " << budget_plan_.to_text();
  return os.str();
}

std::string Executor::profile_table() const {
  std::ostringstream os;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%-5s %-24s %8s %12s %12s %12s\n", "node", "op", "calls", "total ms", "us/call", "bytes");
  os << buf;
  for (const auto& p : profile_) {
    if (!p.calls) continue;
    std::snprintf(buf, sizeof buf, "%-5d %-24s %8lld %12.3f %12.2f %12lld\n", p.node, p.op.c_str(),
                  static_cast<long long>(p.calls), p.total_ns / 1e6, p.total_ns / 1e3 / static_cast<double>(p.calls),
                  static_cast<long long>(p.bytes));
    os << buf;
  }
  return os.str();
}

std::string Executor::chrome_trace() const {
  std::ostringstream os;
  os << "{\"traceEvents\":[";
  bool first = true;
  for (const auto& p : profile_) {
    if (!p.calls) continue;
    os << (first ? "" : ",") << "{\"name\":\"" << p.op << "\",\"cat\":\"node\",\"ph\":\"X\",\"ts\":" << p.start_ns / 1000.0
       << ",\"dur\":" << p.last_ns / 1000.0 << ",\"pid\":1,\"tid\":1,\"args\":{\"node\":" << p.node << ",\"bytes\":" << p.bytes << "}}";
    first = false;
  }
  os << "],\"displayTimeUnit\":\"ms\"}\n";
  return os.str();
}

}  // namespace tandem::runtime
