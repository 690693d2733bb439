// The executor's memory behaviour: arenas taken per run, values released after their last
// use, inputs passed by move freed during the run (allocator statistics are exact, so these
// are deterministic).
#include <gtest/gtest.h>

#include "tandem/core/allocator.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/creation.h"
#include "tandem/runtime/executor.h"

using namespace tandem;

namespace {

constexpr int64_t kN = 1 << 21;  // float32 elements: 8 MiB per value

TensorMeta vec_meta() { return TensorMeta{DType::Float32, {kN}, {1}}; }

// x -> a = x * 2 -> b = a * 3 -> c = b + 1 (the output).
ir::Graph chain() {
  ir::Graph g;
  const int x = g.add_input(vec_meta(), "x");
  const int two = g.add_constant(full({}, 2.0));
  const int three = g.add_constant(full({}, 3.0));
  const int one = g.add_constant(full({}, 1.0));
  const int a = g.nodes()[static_cast<size_t>(g.add_node(get_op("mul"), {x, two}, {}))].outputs[0];
  const int b = g.nodes()[static_cast<size_t>(g.add_node(get_op("mul"), {a, three}, {}))].outputs[0];
  const int c = g.nodes()[static_cast<size_t>(g.add_node(get_op("add"), {b, one}, {AttrValue(Scalar(1))}))].outputs[0];
  g.set_outputs({c});
  return g;
}

int64_t mib(int64_t bytes) { return bytes >> 20; }

}  // namespace

TEST(Executor, AnInputPassedByMoveAndEachValueAreFreedAfterTheirLastUse) {
  runtime::Executor ex(chain());
  ex.set_use_arena(false);
  std::vector<Tensor> in{full({kN}, 1.5)};
  const int64_t before = memory::stats().bytes_in_use;
  memory::reset_peak_stats();
  std::vector<Tensor> out = ex.run(std::move(in));
  const int64_t peak = memory::stats().peak_bytes_in_use - before;
  EXPECT_TRUE(in.empty());
  EXPECT_EQ(static_cast<const float*>(out[0].data_ptr())[kN - 1], 10.0f);  // 1.5 * 2 * 3 + 1
  // Never more than two values alive at once (x and a, a and b, b and c): 16 MiB above
  // the level before, where x (8 MiB) already was. Holding x, a and b to the end: 24.
  EXPECT_LE(mib(peak), 8) << "peak " << peak << " bytes above the level with x alive";
  // After the run x and the intermediates are gone and the output (as large as x) is new.
  EXPECT_EQ(memory::stats().bytes_in_use, before);
}

TEST(Executor, TheArenaIsHeldOnlyDuringARun) {
  runtime::Executor ex(chain());
  ASSERT_GT(ex.plan().arena_bytes, 0);
  Tensor x = full({kN}, 1.5);
  const int64_t before = memory::stats().bytes_in_use;
  std::vector<Tensor> out = ex.run({x});
  EXPECT_EQ(static_cast<const float*>(out[0].data_ptr())[kN - 1], 10.0f);
  // Between runs the program holds nothing: only the output is new.
  EXPECT_EQ(memory::stats().bytes_in_use - before, static_cast<int64_t>(cpu_allocator_round_size(kN * 4)));
  out.clear();
  EXPECT_EQ(memory::stats().bytes_in_use, before);
}

// A buffer shared by a value and its in-place result is freed once the last of them has
// been read (here: a = x * 2, then relu_ writes a, and only the relu_ result is read
// later), and a view of a view still finds its root's offset after the root's own tensor
// was dropped (as_strided counts from the start of the root's storage).
TEST(Executor, BuffersSharedWithAliasesAreFreedAndViewsOfDroppedRootsWork) {
  auto make = [] {
    ir::Graph g;
    const int x = g.add_input(vec_meta(), "x");
    const int two = g.add_constant(full({}, 2.0));
    const int a = g.nodes()[static_cast<size_t>(g.add_node(get_op("mul"), {x, two}, {}))].outputs[0];
    const int r = g.nodes()[static_cast<size_t>(g.add_node(*get_op("relu").inplace, {a}, {}))].outputs[0];
    const int s = g.nodes()[static_cast<size_t>(g.add_node(
        get_op("slice"), {r}, {AttrValue(int64_t{0}), AttrValue(int64_t{8}), AttrValue(int64_t{kN}), AttrValue(int64_t{1})}))].outputs[0];
    const int v = g.nodes()[static_cast<size_t>(g.add_node(
        get_op("as_strided"), {s}, {AttrValue(DimVector{4}), AttrValue(DimVector{2}), AttrValue(int64_t{1})}))].outputs[0];
    const int b = g.nodes()[static_cast<size_t>(g.add_node(get_op("mul"), {v, two}, {}))].outputs[0];
    const int c = g.nodes()[static_cast<size_t>(g.add_node(get_op("mul"), {x, two}, {}))].outputs[0];
    g.set_outputs({b, c});
    return g;
  };
  for (bool arena : {false, true}) {
    SCOPED_TRACE(arena ? "arena" : "per value");
    runtime::Executor ex(make());
    ex.set_use_arena(arena);
    Tensor in = arange(kN, DType::Float32);
    const int64_t before = memory::stats().bytes_in_use;
    memory::reset_peak_stats();
    std::vector<Tensor> out = ex.run({in});
    const float* o = static_cast<const float*>(out[0].data_ptr());
    for (int k = 0; k < 4; ++k) EXPECT_EQ(o[k], 4.0f * static_cast<float>(1 + 2 * k)) << k;  // (x * 2) at 1, 3, 5, 7, doubled
    if (!arena) {  // a's buffer is gone before c is made: never three 8 MiB buffers at once
      EXPECT_LE(mib(memory::stats().peak_bytes_in_use - before), 16);
    }
  }
}
