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
