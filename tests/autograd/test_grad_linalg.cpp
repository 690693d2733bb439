// Gradients of the linalg, convolution and pooling ops: gradcheck (float64 finite
// differences) for every backward rule incl. broadcast / batched / non-contiguous cases,
// gradgradcheck for the rules that are linear in the gradient, and float32 gradients
// against PyTorch (tests/data/grad_linalg.json, written by tests/oracle/gen_grad_linalg.py).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "support/grad_helpers.h"
#include "support/tensor_json.h"
#include "tandem/tandem.h"

using namespace tandem;
using tandem_test::Fn;
using tandem_test::wrap;
using tandem_test::leaf;
using autograd::gradcheck;
using autograd::gradgradcheck;
using nlohmann::json;

namespace {

void check(Fn f, const std::vector<Tensor>& in, bool second = false) {
  EXPECT_TRUE(gradcheck(wrap(f), in));
  if (second) {
    EXPECT_TRUE(gradgradcheck(wrap(f), in));
  }
}

}  // namespace

// ---------------------------------------------------------------- linalg
TEST(GradLinalg, Mm) {
  Tensor a = leaf({3, 4}, 1), b = leaf({4, 2}, 2);
  check([](auto& v) { return mm(v[0], v[1]); }, {a, b}, true);
  // Non-contiguous (transposed) operands.
  Tensor at = leaf({4, 3}, 3), bt = leaf({2, 4}, 4);
  check([](auto& v) { return mm(v[0].t(), v[1].t()); }, {at, bt}, true);
}

TEST(GradLinalg, Bmm) {
  Tensor a = leaf({2, 3, 4}, 5), b = leaf({2, 4, 2}, 6);
  check([](auto& v) { return bmm(v[0], v[1]); }, {a, b}, true);
  check([](auto& v) { return bmm(v[0].mT().mT(), v[1].transpose(0, 0)); }, {a, b});
}

TEST(GradLinalg, Addmm) {
  Tensor bias = leaf({2}, 7), a = leaf({3, 4}, 8), b = leaf({4, 2}, 9);
  check([](auto& v) { return addmm(v[0], v[1], v[2]); }, {bias, a, b}, true);
  check([](auto& v) { return addmm(v[0], v[1], v[2], 0.5, -2.0); }, {bias, a, b}, true);
  Tensor col = leaf({3, 1}, 10), full = leaf({3, 2}, 11);
  check([](auto& v) { return addmm(v[0], v[1], v[2], 1.5, 0.25); }, {col, a, b});
  check([](auto& v) { return addmm(v[0], v[1], v[2], 0.0, 1.0); }, {full, a, b});
}

TEST(GradLinalg, Baddbmm) {
  Tensor s = leaf({3, 2}, 12), a = leaf({2, 3, 4}, 13), b = leaf({2, 4, 2}, 14);
  check([](auto& v) { return baddbmm(v[0], v[1], v[2], 0.5, 2.0); }, {s, a, b}, true);
  Tensor s3 = leaf({2, 1, 2}, 15);
  check([](auto& v) { return baddbmm(v[0], v[1], v[2]); }, {s3, a, b});
}

TEST(GradLinalg, Dot) {
  Tensor a = leaf({5}, 16), b = leaf({5}, 17);
  check([](auto& v) { return dot(v[0], v[1]); }, {a, b}, true);
}

TEST(GradLinalg, MatmulComposites) {
  Tensor a3 = leaf({2, 3, 4}, 18), b2 = leaf({4, 2}, 19), v = leaf({4}, 20), m = leaf({3, 4}, 21);
  check([](auto& t) { return matmul(t[0], t[1]); }, {a3, b2});
  check([](auto& t) { return matmul(t[0], t[1]); }, {a3, v});
  check([](auto& t) { return matmul(t[0], t[1]); }, {v, leaf({2, 4, 3}, 22)});
  check([](auto& t) { return mv(t[0], t[1]); }, {m, v});
  // Broadcast batch dims: [2, 1, 3, 4] @ [3, 4, 2].
  Tensor a4 = leaf({2, 1, 3, 4}, 23), b3 = leaf({3, 4, 2}, 24);
  check([](auto& t) { return matmul(t[0], t[1]); }, {a4, b3});
  // Non-foldable (permuted) batch operand.
  Tensor p = leaf({3, 2, 4}, 25);
  check([](auto& t) { return matmul(permute(t[0], {1, 0, 2}), t[1]); }, {p, b2});
  Tensor w = leaf({2, 4}, 26), bias = leaf({2}, 27);
  check([](auto& t) { return linear(t[0], t[1], t[2]); }, {a3, w, bias});
  check([](auto& t) { return outer(t[0], t[1]); }, {v, leaf({3}, 28)});
  check([](auto& t) { return einsum("bij,jk->bik", {t[0], t[1]}); }, {a3, b2});
}

// ---------------------------------------------------------------- convolution
TEST(GradConv, Conv2dBasic) {
  Tensor x = leaf({2, 3, 5, 5}, 30), w = leaf({4, 3, 3, 3}, 31), b = leaf({4}, 32);
  check([](auto& v) { return conv2d(v[0], v[1], v[2]); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, {1}); }, {x, w, b});
}

TEST(GradConv, Conv2dStridePadDilationGroups) {
  Tensor x = leaf({2, 4, 7, 6}, 33), w = leaf({6, 2, 3, 2}, 34), b = leaf({6}, 35);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2, 1}, {1, 2}, {1, 2}, 2); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {3, 2}, {2, 0}, {2, 1}, 2); }, {x, w, b});
  // Depthwise, no bias, non-contiguous input.
  Tensor xp = leaf({2, 6, 5, 4}, 36), wd = leaf({4, 1, 2, 2}, 37);
  check([](auto& v) { return conv2d(v[0].transpose(2, 3), v[1], Tensor(), {1}, {1}, {1}, 4); },
        {narrow(xp, 1, 1, 4).detach().requires_grad_(), wd});
}

// Unbatched conv2d (strided, and with padding "same" and dilation) and grouped conv1d.
// The conv1d case used to fail: its weight gradient reshapes a permuted [N, G, Cg, 1, W]
// view, and the elementwise iterator's dim merging compared strides against a dropped
// size-1 dim (fixed in kernels/cpu/loops.cpp; see ViewWrites.CopyOfPermutedTensorWithSizeOneDim).
TEST(GradConv, Conv2dSameUnbatchedConv1d) {
  Tensor x = leaf({3, 6, 5}, 38), w = leaf({2, 3, 2, 3}, 39), b = leaf({2}, 40);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2}, {1}); }, {x, w, b});
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {1}, PaddingMode::Same, {1, 2}); }, {x, w, b});
  Tensor x1 = leaf({2, 4, 9}, 41), w1 = leaf({6, 2, 3}, 42), b1 = leaf({6}, 43);
  check([](auto& v) { return conv1d(v[0], v[1], v[2], {2}, {1}, {2}, 2); }, {x1, w1, b1});
  check([](auto& v) { return conv1d(v[0], v[1], v[2], {1}, PaddingMode::Same, {2}, 2); }, {x1, w1, b1});
  Tensor xu = leaf({4, 9}, 44);
  check([](auto& v) { return conv1d(v[0], v[1], Tensor(), {2}, {0}, {1}, 2); }, {xu, w1});
}

TEST(GradConv, Conv2dDoubleBackward) {
  Tensor x = leaf({1, 2, 4, 4}, 44), w = leaf({2, 1, 2, 2}, 45), b = leaf({2}, 46);
  check([](auto& v) { return conv2d(v[0], v[1], v[2], {2}, {1}, {1}, 2); }, {x, w, b}, true);
}

TEST(GradConv, ConvTranspose2d) {
  Tensor x = leaf({2, 4, 3, 4}, 47), w = leaf({4, 3, 3, 2}, 48), b = leaf({6}, 49);
  check([](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {2}, {1}, {1}, 2); }, {x, w, b});
  check([](auto& v) { return conv_transpose2d(v[0], v[1], v[2], {1, 2}, {0, 1}, {0, 1}, 2, {2, 1}); }, {x, w, b});
  Tensor xu = leaf({4, 3, 3}, 50), w1 = leaf({4, 2, 2, 2}, 51);
  check([](auto& v) { return conv_transpose2d(v[0], v[1], Tensor(), {3}, {0}, {2}); }, {xu, w1});
  check([](auto& v) { return conv_transpose2d(v[0], v[1], Tensor(), {2}, {1}, {0}, 1, {2}); }, {xu, w1}, true);
}

// ---------------------------------------------------------------- pooling
TEST(GradPool, MaxPool2d) {
  Tensor x = leaf({2, 3, 6, 7}, 60);
  check([](auto& v) { return max_pool2d(v[0], {2}); }, {x});
  check([](auto& v) { return max_pool2d(v[0], {3}, {2}, {1}, {1}, true); }, {x});
  check([](auto& v) { return max_pool2d(v[0], {3, 2}, {1}, {1, 0}, {2, 1}); }, {x});  // overlapping windows
  check([](auto& v) { return std::get<0>(max_pool2d_with_indices(v[0], {3}, {2}, {1}, {1}, true)); }, {x});
  Tensor xu = leaf({3, 5, 5}, 61);
  check([](auto& v) { return max_pool2d(v[0].transpose(1, 2), {2}, {1}); }, {xu});
}

TEST(GradPool, AvgPool2d) {
  Tensor x = leaf({2, 3, 6, 7}, 62);
  check([](auto& v) { return avg_pool2d(v[0], {2}); }, {x}, true);
  check([](auto& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, true); }, {x});
  check([](auto& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, false); }, {x});
  check([](auto& v) { return avg_pool2d(v[0], {3, 2}, {1, 2}, {1, 1}, false, false); }, {x});
  check([](auto& v) { return avg_pool2d(v[0], {3}, {2}, {1}, true, true, 4); }, {x});
  Tensor xu = leaf({3, 5, 5}, 63);
  check([](auto& v) { return avg_pool2d(v[0].transpose(1, 2), {2}, {1}, {1}, false, false); }, {xu});
}

TEST(GradPool, Adaptive) {
  Tensor x = leaf({2, 3, 7, 5}, 64);
  check([](auto& v) { return adaptive_avg_pool2d(v[0], {3, 2}); }, {x}, true);
  check([](auto& v) { return adaptive_avg_pool2d(v[0], {7, 8}); }, {x});
  check([](auto& v) { return std::get<0>(adaptive_max_pool2d(v[0], {3, 2})); }, {x});
  Tensor xu = leaf({3, 6, 4}, 65);
  check([](auto& v) { return adaptive_avg_pool2d(v[0].transpose(1, 2), {3, 3}); }, {xu});
  check([](auto& v) { return std::get<0>(adaptive_max_pool2d(v[0], {4, 3})); }, {xu});
}

TEST(GradPool, NoGradPathSkipsIndices) {
  // Inference still works and max_pool2d without grad gives the same values.
  Tensor x = leaf({1, 1, 4, 4}, 66).detach();
  Tensor a = max_pool2d(x, {2});
  Tensor b = std::get<0>(max_pool2d_with_indices(x, {2}));
  EXPECT_EQ(oracle::compare_tensors(a, b, 0, 0), "");
}

// ---------------------------------------------------------------- against PyTorch (float32)
namespace {
Tensor fx(const std::vector<int64_t>& shape, double seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + seed));
  return from_vector<float>(v, shape, kFloat32);
}
}  // namespace

TEST(GradConv, MatchesPyTorchFloat32) {
  std::ifstream f(std::string(TANDEM_TEST_DATA_DIR) + "/grad_linalg.json");
  ASSERT_TRUE(f.good());
  const json cases = json::parse(f);
  ASSERT_EQ(cases.size(), 3u);
  for (const json& cs : cases) {
    const std::string name = cs["name"];
    std::vector<Tensor> in;
    for (size_t i = 0; i < cs["shapes"].size(); ++i)
      in.push_back(fx(cs["shapes"][i].get<std::vector<int64_t>>(), static_cast<double>(i + 1)).requires_grad_());
    Tensor y;
    if (name == "conv_pool") y = max_pool2d(conv2d(in[0], in[1], in[2], {1}, {1}, {1}, 2), {3}, {2}, {1}, {1}, true);
    else if (name == "conv_strided") y = max_pool2d(conv2d(in[0], in[1], in[2], {2}, {2, 1}, {2}), {2});
    else y = avg_pool2d(conv_transpose2d(in[0], in[1], in[2], {2}, {1}, {1}, 2), {3}, {2}, {1}, true, false);
    const std::vector<int64_t> ys(y.sizes().begin(), y.sizes().end());
    sum(y * fx(ys, 0.5)).backward();
    for (size_t i = 0; i < in.size(); ++i) {
      const std::vector<double> want = cs["grads"][i].get<std::vector<double>>();
      const std::vector<double> got = oracle::to_doubles(in[i].grad());
      ASSERT_EQ(got.size(), want.size()) << name << " input " << i;
      for (size_t k = 0; k < got.size(); ++k)
        ASSERT_NEAR(got[k], want[k], 1e-4 + 1e-4 * std::abs(want[k])) << name << " input " << i << " at " << k;
    }
  }
}
