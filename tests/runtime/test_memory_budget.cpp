// Programs under a memory budget (runtime/memory_budget.h): the planner recomputes cheap
// values and offloads others to a spill file until the estimated peak fits; the results
// stay bitwise those of the unconstrained program, and the measured peak (allocator
// statistics, exact) stays under the budget.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

#include "tandem/core/allocator.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/random.h"
#include "tandem/runtime/executor.h"

using namespace tandem;

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kN = 512;  // [512, 512] float32: 1 MiB per value

TensorMeta mat_meta() { return TensorMeta{DType::Float32, {kN, kN}, {kN, 1}}; }

int out0(ir::Graph& g, int node) { return g.nodes()[static_cast<size_t>(node)].outputs[0]; }

// Shaped like a training step: a = relu(x) and b = a @ x are made early and read again late,
// with a chain of products between (the live bytes peak in the middle):
//   0 a = relu(x); 1 b = a @ x; 2 c = b @ x; 3 d = c @ x; 4 e = d @ x; 5 e += b; 6 e *= a.
// Live 1 MiB values per position: a | a b | a b c | a b c d | a b d e | a b e | a e: peak 4.
// relu is cheap to recompute from x (an input); b, a product, can only be offloaded.
ir::Graph step_like() {
  ir::Graph g;
  const int x = g.add_input(mat_meta(), "x");
  const int a = out0(g, g.add_node(get_op("relu"), {x}, {}));
  const int b = out0(g, g.add_node(get_op("mm"), {a, x}, {}));
  const int c = out0(g, g.add_node(get_op("mm"), {b, x}, {}));
  const int d = out0(g, g.add_node(get_op("mm"), {c, x}, {}));
  const int e = out0(g, g.add_node(get_op("mm"), {d, x}, {}));
  const int e2 = out0(g, g.add_node(get_op("add_"), {e, b}, {AttrValue(Scalar(1))}));
  const int e3 = out0(g, g.add_node(get_op("mul_"), {e2, a}, {}));
  g.set_outputs({e3});
  return g;
}

Tensor input() {
  manual_seed(3);
  return randn({kN, kN}).mul(0.05);  // keeps the products of the chain finite
}

// Runs `ex` on x and returns (output, peak bytes above the level before the run).
std::pair<Tensor, int64_t> run_measured(runtime::Executor& ex, const Tensor& x) {
  ex.run({x});  // warm-up: the spill file and the allocator's cache
  memory::reset_peak_stats();
  const int64_t before = memory::stats().bytes_in_use;
  Tensor out = ex.run({x})[0];
  return {out, memory::stats().peak_bytes_in_use - before};
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.sizes().equals(b.sizes()) && a.dtype() == b.dtype() && std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST(MemoryBudget, RecomputesCheapValuesThenOffloadsAndKeepsTheBytes) {
  const Tensor x = input();
  runtime::Executor free_run(step_like());
  free_run.set_use_arena(false);
  const Tensor want = run_measured(free_run, x).first;
  EXPECT_EQ(runtime::estimate_peak(free_run.graph(), false, {}), 4 * kMiB);

  struct Case {
    int64_t budget;
    size_t recomputed, offloaded;
  };
  int64_t last_peak = INT64_MAX;
  // Half a MiB above each step of the estimate leaves room for what the products' kernels
  // allocate for themselves (measured by the first run, then planned for).
  for (const Case& c : {Case{9 * kMiB / 2, 0, 0}, Case{7 * kMiB / 2, 1, 0}, Case{5 * kMiB / 2, 1, 1}}) {
    SCOPED_TRACE("budget " + std::to_string(c.budget));
    runtime::Executor ex(step_like());
    ex.set_use_arena(false);
    // Fixed costs (the defaults: streaming 10 GB/s, spill write 2 GB/s, read 4 GB/s), not
    // the ones measured on a machine that may be busy: which choice wins depends on them.
    ex.fit_memory_budget(c.budget, runtime::BudgetCosts{});
    const auto& plan = ex.budget_plan();
    ASSERT_EQ(plan.recomputed.size(), c.recomputed) << plan.to_text();
    EXPECT_EQ(plan.offloads.size(), c.offloaded) << plan.to_text();
    if (c.recomputed) {
      EXPECT_NE(plan.recomputed[0].find("relu"), std::string::npos) << plan.to_text();
    }
    EXPECT_LE(plan.planned_peak, c.budget);
    auto [got, peak] = run_measured(ex, x);
    EXPECT_TRUE(same_bytes(got, want)) << "the budget changed the result";
    EXPECT_LE(peak, c.budget) << "measured peak above the budget; " << plan.to_text();
    EXPECT_LE(peak, last_peak) << "the peak rose as the budget fell";
    last_peak = peak;
  }
}

// The first run measures what each node's kernel allocates for itself; a budget that fits
// the buffers but not those temporaries is extended before the next run (here: it cannot
// be, so that run raises before computing anything).
TEST(MemoryBudget, TheKernelsOwnAllocationsAreMeasuredAndPlannedFor) {
  const Tensor x = input();
  runtime::Executor ex(step_like());
  ex.set_use_arena(false);
  ex.fit_memory_budget(2 * kMiB);  // fits the values exactly, with nothing to spare
  ex.run({x});
  // Whether the products allocated scratch memory depends on the library's kernels: when
  // they did, the next run must not silently exceed the budget.
  try {
    memory::reset_peak_stats();
    const int64_t before = memory::stats().bytes_in_use;
    ex.run({x});
    EXPECT_LE(memory::stats().peak_bytes_in_use - before, 2 * kMiB) << ex.memory_summary();
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("expected at least"), std::string::npos) << e.what();
    // ... and keeps raising: the plan known to be over the budget never runs.
    EXPECT_THROW(ex.run({x}), OutOfMemoryError);
  }
}

TEST(MemoryBudget, BelowTheSmallestReachablePeakRaisesNamingIt) {
  runtime::Executor ex(step_like());
  ex.set_use_arena(false);
  try {
    ex.fit_memory_budget(3 * kMiB / 2);
    FAIL() << "a budget of 1.5 MiB fitted: " << ex.budget_plan().to_text();
  } catch (const OutOfMemoryError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("[memory_budget]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::to_string(2 * kMiB)), std::string::npos) << "names the minimum: " << msg;
    EXPECT_NE(msg.find("mm"), std::string::npos) << "names the node where memory peaks: " << msg;
    // Nothing has run: the figure cannot include the kernels' own allocations, and says so.
    EXPECT_NE(msg.find("not measured yet"), std::string::npos) << msg;
  }
  EXPECT_THROW(ex.fit_memory_budget(0), ValueError);
  EXPECT_THROW(ex.fit_memory_budget(-1), ValueError);
}

// With an arena the same choices shrink the planned arena; the bytes are unchanged.
TEST(MemoryBudget, ArenaProgramsFitTheirArenaUnderTheBudget) {
  const Tensor x = input();
  runtime::Executor free_run(step_like());
  const Tensor want = free_run.run({x})[0];
  // The arena estimate adds the outputs' bytes (e, 1 MiB) to the arena of the rest.
  for (int64_t budget : {9 * kMiB / 2, 7 * kMiB / 2}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    runtime::Executor ex(step_like());
    ex.fit_memory_budget(budget);
    EXPECT_LE(ex.budget_plan().planned_peak, budget);
    EXPECT_LE(ex.plan().arena_bytes, budget) << ex.memory_summary();
    EXPECT_TRUE(same_bytes(ex.run({x})[0], want));
    EXPECT_TRUE(same_bytes(ex.run({x})[0], want)) << "second run (the spill file reused)";
  }
}

// An offload with nowhere to spill raises when the program runs, naming the directory.
TEST(MemoryBudget, AnUnwritableSpillDirectoryRaisesNamingIt) {
  const char* old = std::getenv("TANDEM_SPILL_DIR");
  const std::string saved = old ? old : "";
  setenv("TANDEM_SPILL_DIR", "/nonexistent/tandem-spill", 1);
  runtime::Executor ex(step_like());
  ex.set_use_arena(false);
  ex.fit_memory_budget(5 * kMiB / 2, runtime::BudgetCosts{});  // fixed costs: one recompute, one offload
  ASSERT_EQ(ex.budget_plan().offloads.size(), 1u);
  try {
    ex.run({input()});
    ADD_FAILURE() << "ran without a spill file";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tandem-spill"), std::string::npos) << e.what();
  }
  if (old) setenv("TANDEM_SPILL_DIR", saved.c_str(), 1); else unsetenv("TANDEM_SPILL_DIR");
}

TEST(MemoryBudget, ASpillFileGivesBackWhatWasWritten) {
  runtime::SpillFile f(runtime::spill_directory());
  std::vector<char> a(100000), b(100000);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i * 7);
  f.write(8192, a.data(), a.size());
  f.read(8192, b.data(), b.size());
  EXPECT_EQ(a, b);
  EXPECT_THROW(f.read(1 << 30, b.data(), 16), RuntimeError) << "reading past the end";
}

namespace {

// Shaped like a convolution backward split by batch: a = relu(x) is read whole early, then
// in four row blocks, each block's product copied into its rows of o (made by `empty`),
// which four more nodes read back block by block:
//   a = relu(x); b = a @ x; c = b @ x; o = empty; per block i: o[i] = a[i] @ c;
//   outputs relu(o[j]) per block j.
// Sliced offloads send a and o to the spill file once and move only the blocks.
struct Blocks {
  ir::Graph g;
  int a = -1, o = -1;
  std::vector<int> piece_reads, piece_copies, slices;  // node positions
};

Blocks blocks_graph() {
  Blocks s;
  ir::Graph& g = s.g;
  const int x = g.add_input(mat_meta(), "x");
  s.a = out0(g, g.add_node(get_op("relu"), {x}, {}));
  const int b = out0(g, g.add_node(get_op("mm"), {s.a, x}, {}));
  const int c = out0(g, g.add_node(get_op("mm"), {b, x}, {}));
  s.o = out0(g, g.add_node(get_op("empty"), {},
                            {AttrValue(std::vector<int64_t>{kN, kN}), AttrValue(std::monostate{}), AttrValue(DType::Float32)}));
  auto rows = [&](int v, int64_t i) {
    const int id = g.add_node(get_op("slice"), {v},
                              {AttrValue(int64_t{0}), AttrValue(i * kN / 4), AttrValue((i + 1) * kN / 4), AttrValue(int64_t{1})});
    s.slices.push_back(id);
    return out0(g, id);
  };
  for (int64_t i = 0; i < 4; ++i) {
    const int ai = rows(s.a, i);
    const int id = g.add_node(get_op("mm"), {ai, c}, {});
    s.piece_reads.push_back(id);
    const int m = out0(g, id);
    s.piece_copies.push_back(g.add_node(get_op("copy_"), {rows(s.o, i), m}, {}));
  }
  std::vector<int> outs;
  for (int64_t j = 0; j < 4; ++j) outs.push_back(out0(g, g.add_node(get_op("relu"), {rows(s.o, j)}, {})));
  g.set_outputs(outs);
  return s;
}

}  // namespace

// What each node does to a storage offloaded in pieces: the producer needs it whole, views
// of it are not made, a read of a contiguous block names its byte offset, a copy_ into a
// block writes there; a read of a non-contiguous view needs the storage whole.
TEST(MemoryBudget, SlicedAccessClassifiesEachUseOfAStorage) {
  using K = runtime::SlicedAccess;
  Blocks s = blocks_graph();
  const int a_producer = s.g.value(s.a).producer;
  EXPECT_EQ(runtime::sliced_access(s.g, a_producer, s.a).kind, K::Whole);
  const auto whole_read = runtime::sliced_access(s.g, a_producer + 1, s.a);  // b = a @ x
  ASSERT_EQ(whole_read.kind, K::Read);
  ASSERT_EQ(whole_read.pieces.size(), 1u);
  EXPECT_EQ(whole_read.pieces[0].offset, 0);
  EXPECT_EQ(whole_read.pieces[0].bytes, kMiB);
  EXPECT_EQ(runtime::sliced_access(s.g, a_producer + 2, s.a).kind, K::Untouched);  // c = b @ x
  for (int i = 0; i < 4; ++i) {
    const auto rd = runtime::sliced_access(s.g, s.piece_reads[static_cast<size_t>(i)], s.a);
    ASSERT_EQ(rd.kind, K::Read) << "block " << i;
    ASSERT_EQ(rd.pieces.size(), 1u);
    EXPECT_EQ(rd.pieces[0].slot, 0);
    EXPECT_EQ(rd.pieces[0].offset, i * kMiB / 4);
    EXPECT_EQ(rd.pieces[0].bytes, kMiB / 4);
    const auto wr = runtime::sliced_access(s.g, s.piece_copies[static_cast<size_t>(i)], s.o);
    ASSERT_EQ(wr.kind, K::Write) << "block " << i;
    EXPECT_EQ(wr.pieces[0].offset, i * kMiB / 4);
    EXPECT_EQ(wr.pieces[0].bytes, kMiB / 4);
  }
  EXPECT_EQ(runtime::sliced_access(s.g, s.slices[0], s.a).kind, K::View);
  EXPECT_EQ(runtime::sliced_access(s.g, s.g.value(s.o).producer, s.o).kind, K::Whole);

  // A transposed view of the whole storage is one dense block (read with its strides, as
  // a channels-last batch slice is); half of each row is not one block of bytes; a block at
  // an offset that is not a multiple of 64 bytes would give the kernel another alignment.
  ir::Graph g;
  const int x = g.add_input(mat_meta(), "x");
  const int a = out0(g, g.add_node(get_op("relu"), {x}, {}));
  const int t = out0(g, g.add_node(get_op("transpose"), {a}, {AttrValue(int64_t{0}), AttrValue(int64_t{1})}));
  const int rt = g.add_node(get_op("mm"), {t, x}, {});
  const int half = out0(g, g.add_node(get_op("slice"), {a}, {AttrValue(int64_t{1}), AttrValue(int64_t{0}),
                                                            AttrValue(kN / 2), AttrValue(int64_t{1})}));
  const int rh = g.add_node(get_op("relu"), {half}, {});
  const int odd = out0(g, g.add_node(get_op("slice"), {a},
                                     {AttrValue(int64_t{1}), AttrValue(int64_t{1}), AttrValue(kN), AttrValue(int64_t{1})}));
  const int row = out0(g, g.add_node(get_op("slice"), {odd}, {AttrValue(int64_t{0}), AttrValue(int64_t{0}), AttrValue(int64_t{1}), AttrValue(int64_t{1})}));
  const int rr = g.add_node(get_op("relu"), {row}, {});
  g.set_outputs({out0(g, rt), out0(g, rh), out0(g, rr)});
  const auto tr = runtime::sliced_access(g, rt, a);
  EXPECT_EQ(tr.kind, K::Read);
  ASSERT_EQ(tr.pieces.size(), 1u);
  EXPECT_EQ(tr.pieces[0].offset, 0);
  EXPECT_EQ(tr.pieces[0].bytes, kMiB);
  EXPECT_EQ(runtime::sliced_access(g, rh, a).kind, K::Whole) << "half of each row";
  EXPECT_EQ(runtime::sliced_access(g, rr, a).kind, K::Whole) << "a row starting 4 bytes into the storage";
}

// Under budgets down to the smallest reachable, the planner sends a and o to the spill file
// in pieces (the storages are never whole in memory while the blocks run); the outputs keep
// their bytes and the measured peak its budget.
TEST(MemoryBudget, StoragesReadAndWrittenInBlocksAreOffloadedInPieces) {
  const Tensor x = input();
  runtime::Executor free_run(blocks_graph().g);
  free_run.set_use_arena(false);
  const std::vector<Tensor> want = free_run.run({x});
  const int64_t full = runtime::estimate_peak(free_run.graph(), false, {});
  bool sliced = false;
  int64_t last_peak = INT64_MAX, smallest = 0;
  for (int64_t budget = full; budget > 0; budget -= kMiB / 4) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    runtime::Executor ex(blocks_graph().g);
    ex.set_use_arena(false);
    try {
      ex.fit_memory_budget(budget, runtime::BudgetCosts{});
      ex.run({x});  // measures the kernels' own allocations; refits if needed
      memory::reset_peak_stats();
      const int64_t before = memory::stats().bytes_in_use;
      const std::vector<Tensor> got = ex.run({x});
      const int64_t peak = memory::stats().peak_bytes_in_use - before;
      ASSERT_EQ(got.size(), want.size());
      for (size_t j = 0; j < got.size(); ++j) EXPECT_TRUE(same_bytes(got[j], want[j])) << "output " << j;
      EXPECT_LE(peak, budget) << ex.memory_summary();
      EXPECT_LE(peak, last_peak) << "the peak rose as the budget fell";
      last_peak = peak;
      smallest = budget;
      sliced = sliced || ex.budget_plan().sliced() > 0;
      if (ex.budget_plan().sliced() > 0) {
        EXPECT_NE(ex.budget_plan().to_text().find("in pieces"), std::string::npos) << ex.budget_plan().to_text();
      }
    } catch (const OutOfMemoryError& e) {
      EXPECT_NE(std::string(e.what()).find("expected at least"), std::string::npos) << e.what();
      break;
    }
  }
  EXPECT_TRUE(sliced) << "no budget offloaded a storage in pieces";
  // a, c and o whole (3 MiB) would be the working set of a block without pieces.
  EXPECT_LT(smallest, 3 * kMiB) << "the smallest budget that fitted";
}

namespace {

// A random program over [256, 128] float32 values (128 KiB each): pointwise ops and
// products of whole values, blocks of a value (rows) run through an op and copied into
// their rows of an `empty` value, and outputs that read whole values and blocks. Its
// storages are read whole, in blocks and both, so budgets below its peak mix recomputation,
// whole offloads and offloads in pieces.
ir::Graph random_program(uint32_t seed) {
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  constexpr int64_t R = 256, C = 128;
  ir::Graph g;
  const int x = g.add_input(TensorMeta{DType::Float32, {R, C}, {C, 1}}, "x");
  const int w = g.add_input(TensorMeta{DType::Float32, {C, C}, {C, 1}}, "w");
  std::vector<int> whole{x};
  auto rows = [&](int v, int64_t r0, int64_t r1) {
    return out0(g, g.add_node(get_op("slice"), {v},
                              {AttrValue(int64_t{0}), AttrValue(r0), AttrValue(r1), AttrValue(int64_t{1})}));
  };
  // Ops that keep [n, C]: relu, tanh, mul, add, a product with w.
  auto unary_or_binary = [&](int a, int b) {
    switch (pick(5)) {
      case 0: return out0(g, g.add_node(get_op("relu"), {a}, {}));
      case 1: return out0(g, g.add_node(get_op("tanh"), {a}, {}));
      case 2: return out0(g, g.add_node(get_op("mul"), {a, b}, {}));
      case 3: return out0(g, g.add_node(get_op("add"), {a, b}, {AttrValue(Scalar(1))}));
      default: return out0(g, g.add_node(get_op("mm"), {a, w}, {}));
    }
  };
  std::vector<int> outs;
  const int steps = 8 + pick(8);
  for (int s = 0; s < steps; ++s) {
    const int a = whole[static_cast<size_t>(pick(static_cast<int>(whole.size())))];
    const int b = whole[static_cast<size_t>(pick(static_cast<int>(whole.size())))];
    const int kind = pick(4);
    if (kind <= 1) {
      whole.push_back(unary_or_binary(a, b));
    } else if (kind == 2) {
      // Per block of rows: an op on the block(s), copied into its rows of an empty value.
      const int64_t nb = int64_t{2} << pick(3);
      const int o = out0(g, g.add_node(get_op("empty"), {},
                                       {AttrValue(std::vector<int64_t>{R, C}), AttrValue(std::monostate{}),
                                        AttrValue(DType::Float32)}));
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t r0 = i * R / nb, r1 = (i + 1) * R / nb;
        const int piece = unary_or_binary(rows(a, r0, r1), rows(b, r0, r1));
        g.add_node(get_op("copy_"), {rows(o, r0, r1), piece}, {});
      }
      whole.push_back(o);
    } else {
      // An output read block by block.
      const int64_t nb = int64_t{2} << pick(2);
      for (int64_t i = 0; i < nb; ++i) {
        const int64_t r0 = i * R / nb, r1 = (i + 1) * R / nb;
        outs.push_back(out0(g, g.add_node(get_op("relu"), {rows(a, r0, r1)}, {})));
      }
    }
  }
  outs.push_back(whole.back());
  g.set_outputs(outs);
  return g;
}

}  // namespace

// Random programs under budgets from their peak down to the smallest one reachable: every
// fitted plan gives the unconstrained program's outputs byte for byte, with the measured
// peak at most the budget. (What the planner chooses depends on the fixed costs; every
// kind of choice shows up over the seeds, which the counts check.)
TEST(MemoryBudget, RandomProgramsKeepTheirBytesUnderEveryBudget) {
  manual_seed(9);
  const Tensor x = randn({256, 128}).mul(0.1);
  const Tensor w = randn({128, 128}).mul(0.1);
  int sliced = 0, whole_offloads = 0, recomputed = 0, fitted = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    runtime::Executor free_run(random_program(seed));
    free_run.set_use_arena(false);
    const std::vector<Tensor> want = free_run.run({x, w});
    const int64_t full = runtime::estimate_peak(free_run.graph(), false, {});
    for (int64_t budget = full; budget > 0; budget -= 64 * 1024) {
      SCOPED_TRACE("budget " + std::to_string(budget) + " of " + std::to_string(full));
      runtime::Executor ex(random_program(seed));
      ex.set_use_arena(false);
      try {
        ex.fit_memory_budget(budget, runtime::BudgetCosts{});
        ex.run({x, w});  // measures the kernels' own allocations; the next run refits if needed
        memory::reset_peak_stats();
        const int64_t before = memory::stats().bytes_in_use;
        const std::vector<Tensor> got = ex.run({x, w});
        const int64_t peak = memory::stats().peak_bytes_in_use - before;
        ASSERT_EQ(got.size(), want.size());
        for (size_t j = 0; j < got.size(); ++j) ASSERT_TRUE(same_bytes(got[j], want[j])) << "output " << j << "; " << ex.memory_summary();
        EXPECT_LE(peak, budget) << ex.memory_summary();
        ++fitted;
        const auto& plan = ex.budget_plan();
        sliced += plan.sliced();
        whole_offloads += static_cast<int>(plan.offloads.size()) - plan.sliced();
        recomputed += static_cast<int>(plan.recomputed.size());
      } catch (const OutOfMemoryError& e) {
        EXPECT_NE(std::string(e.what()).find("expected at least"), std::string::npos) << e.what();
        break;
      }
    }
  }
  EXPECT_GT(fitted, 24);
  EXPECT_GT(sliced, 0) << "no plan offloaded in pieces";
  EXPECT_GT(whole_offloads, 0) << "no plan offloaded a storage whole";
  EXPECT_GT(recomputed, 0) << "no plan recomputed";
}
