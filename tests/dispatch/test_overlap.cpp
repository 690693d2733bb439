// Memory overlap: the exact geometry checks (core/mem_overlap.h) against brute-force
// enumeration, and the dispatcher's one check of every in-place write (PyTorch 1.13's
// "unsupported operation: ... refer to a single memory location" errors, checked there by
// running the same calls in torch; tandem additionally rejects self-overlapping layouts
// that PyTorch calls "too hard" and lets through, e.g. unfold with step < size).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/core_test_util.h"
#include "tandem/core/mem_overlap.h"

using namespace tandem;

namespace {

// Every byte address (relative to the storage) of every element of t.
std::vector<int64_t> bytes_of(const Tensor& t) {
  std::vector<int64_t> out;
  const int64_t n = t.numel(), es = t.element_size();
  for (int64_t lin = 0; lin < n; ++lin) {
    int64_t rem = lin, off = t.storage_offset();
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      off += (rem % t.size(d)) * t.stride(d);
      rem /= t.size(d);
    }
    for (int64_t k = 0; k < es; ++k) out.push_back(off * es + k);
  }
  return out;
}

bool naive_internal_overlap(const Tensor& t) {
  std::vector<int64_t> b = bytes_of(t);
  std::set<int64_t> s(b.begin(), b.end());
  return s.size() != b.size();
}

TEST(MemOverlap, InternalOverlapOfCommonViews) {
  Tensor x = zeros({4, 6});
  EXPECT_FALSE(has_internal_overlap(x));
  EXPECT_FALSE(has_internal_overlap(x.t()));
  EXPECT_FALSE(has_internal_overlap(x.slice(1, 0, 6, 2)));
  EXPECT_TRUE(has_internal_overlap(x[0].expand({3, 6})));
  EXPECT_FALSE(has_internal_overlap(x[0].unsqueeze(0).expand({1, 6})));  // size-1 dims never overlap
  Tensor v = zeros({8});
  EXPECT_TRUE(has_internal_overlap(v.unfold(0, 3, 1)));   // windows share elements
  EXPECT_FALSE(has_internal_overlap(v.unfold(0, 2, 2)));  // windows side by side
  EXPECT_FALSE(has_internal_overlap(v.unfold(0, 2, 3)));  // gaps between windows
  // Interleaved strides (not sorted-separable) that still never collide: enumerated.
  EXPECT_FALSE(has_internal_overlap(IntArrayRef({3, 2}), IntArrayRef({2, 3})));  // 0 3 2 5 4 7
  EXPECT_TRUE(has_internal_overlap(IntArrayRef({3, 3}), IntArrayRef({1, 2})));   // 0 2 4 1 3 5 2 ...
  EXPECT_TRUE(has_internal_overlap(IntArrayRef({2, 2}), IntArrayRef({1, 1})));
  EXPECT_FALSE(has_internal_overlap(IntArrayRef({0, 5}), IntArrayRef({0, 0})));  // empty
  const DimVector none;
  EXPECT_FALSE(has_internal_overlap(none, none));  // 0-d
}

TEST(MemOverlap, InternalOverlapMatchesBruteForce) {
  std::mt19937 rng(7);
  Tensor storage = zeros({400});
  int overlapping = 0, checked = 0;
  for (int it = 0; it < 3000; ++it) {
    const int nd = static_cast<int>(rng() % 4);
    DimVector sizes, strides;
    int64_t reach = 0;
    for (int d = 0; d < nd; ++d) {
      sizes.push_back(static_cast<int64_t>(rng() % 5));
      strides.push_back(static_cast<int64_t>(rng() % 7));
      if (sizes.back() > 0) reach += (sizes.back() - 1) * strides.back();
    }
    if (reach >= 400) continue;
    Tensor t = storage.as_strided(sizes, strides, 0);
    const bool want = naive_internal_overlap(t);
    EXPECT_EQ(has_internal_overlap(t), want) << "sizes " << IntArrayRef(sizes) << " strides " << IntArrayRef(strides);
    overlapping += want;
    ++checked;
  }
  EXPECT_GT(checked, 2000);
  EXPECT_GT(overlapping, 200) << "the random geometries must exercise both answers";
  EXPECT_LT(overlapping, checked - 200);
}

TEST(MemOverlap, NonOverlappingAndDenseMatchesBruteForce) {
  // Dense: the elements cover exactly [min, min + numel) of the storage; compared with the
  // byte addresses themselves over random non-negative geometries, plus named cases.
  std::mt19937 rng(11);
  Tensor storage = zeros({400});
  int dense = 0, checked = 0;
  for (int it = 0; it < 3000; ++it) {
    const int nd = 1 + static_cast<int>(rng() % 4);
    DimVector sizes, strides;
    int64_t reach = 0;
    for (int d = 0; d < nd; ++d) {
      sizes.push_back(1 + static_cast<int64_t>(rng() % 4));
      strides.push_back(static_cast<int64_t>(rng() % 13));
      reach += (sizes.back() - 1) * strides.back();
    }
    if (reach >= 400) continue;
    Tensor t = storage.as_strided(sizes, strides, 0);
    std::vector<int64_t> b = bytes_of(t);
    std::set<int64_t> s(b.begin(), b.end());
    const bool want = s.size() == b.size() && *s.rbegin() - *s.begin() + 1 == static_cast<int64_t>(b.size());
    EXPECT_EQ(is_non_overlapping_and_dense(sizes, strides), want)
        << "sizes " << IntArrayRef(sizes) << " strides " << IntArrayRef(strides);
    dense += want;
    ++checked;
  }
  EXPECT_GT(checked, 2000);
  EXPECT_GT(dense, 100) << "the random geometries must exercise both answers";
  EXPECT_LT(dense, checked - 100);
  const Tensor x = zeros({2, 3, 4, 5});
  EXPECT_TRUE(is_non_overlapping_and_dense(x.sizes(), x.strides()));
  const Tensor cl = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // channels last
  EXPECT_TRUE(is_non_overlapping_and_dense(cl.sizes(), cl.strides()));
  EXPECT_TRUE(is_non_overlapping_and_dense(cl.slice(0, 1, 2).sizes(), cl.slice(0, 1, 2).strides()));
  EXPECT_FALSE(is_non_overlapping_and_dense(x.slice(1, 0, 2).sizes(), x.slice(1, 0, 2).strides()));
  EXPECT_FALSE(is_non_overlapping_and_dense(IntArrayRef({3, 2}), IntArrayRef({-1, 3})));  // negative stride
  EXPECT_TRUE(is_non_overlapping_and_dense(IntArrayRef({3}), IntArrayRef{}));  // empty strides: contiguous
}

TEST(MemOverlap, OverlapStatusMatchesBruteForce) {
  std::mt19937 rng(11);
  Tensor storage = zeros({300});
  int counts[3] = {0, 0, 0};
  for (int it = 0; it < 3000; ++it) {
    auto make = [&](DimVector& sizes, DimVector& strides, int64_t& off) {
      const int nd = 1 + static_cast<int>(rng() % 3);
      int64_t reach = 0;
      sizes.clear();
      strides.clear();
      for (int d = 0; d < nd; ++d) {
        sizes.push_back(1 + static_cast<int64_t>(rng() % 4));
        strides.push_back(static_cast<int64_t>(rng() % 6));
        reach += (sizes.back() - 1) * strides.back();
      }
      off = static_cast<int64_t>(rng() % 30);
      return off + reach < 300;
    };
    DimVector sa, ta, sb, tb;
    int64_t oa, ob;
    if (!make(sa, ta, oa) || !make(sb, tb, ob)) continue;
    if (rng() % 4 == 0) {  // same geometry: Full
      sb = sa;
      tb = ta;
      ob = oa;
    }
    Tensor a = storage.as_strided(sa, ta, oa), b = storage.as_strided(sb, tb, ob);
    std::vector<int64_t> ba = bytes_of(a), bb = bytes_of(b);
    std::set<int64_t> s(ba.begin(), ba.end());
    bool shared = false;
    for (int64_t x : bb) shared = shared || s.count(x);
    const MemOverlapStatus st = get_overlap_status(a, b);
    const bool same = oa == ob && IntArrayRef(sa).equals(IntArrayRef(sb)) && IntArrayRef(ta).equals(IntArrayRef(tb));
    if (!shared) {
      EXPECT_EQ(st, MemOverlapStatus::No);
    } else if (same) {
      EXPECT_EQ(st, MemOverlapStatus::Full);
    } else {
      // Same positions with different strides only where the differing dims have size 1.
      EXPECT_NE(st, MemOverlapStatus::No);
    }
    counts[static_cast<int>(st)]++;
  }
  for (int k = 0; k < 3; ++k) EXPECT_GT(counts[k], 100) << k;
  // Different storages never overlap; element sizes are compared in bytes.
  EXPECT_EQ(get_overlap_status(zeros({4}), zeros({4})), MemOverlapStatus::No);
  Tensor x = zeros({4, 4});
  EXPECT_EQ(get_overlap_status(x, x.view({16})), MemOverlapStatus::Partial);  // other positions
  EXPECT_EQ(get_overlap_status(x, x[0]), MemOverlapStatus::Partial);          // broadcast row
  EXPECT_EQ(get_overlap_status(x[0], x[1]), MemOverlapStatus::No);
  EXPECT_EQ(get_overlap_status(x, x.t()), MemOverlapStatus::Partial);
  EXPECT_EQ(get_overlap_status(x.slice(1, 0, 4, 2), x.slice(1, 1, 4, 2)), MemOverlapStatus::No);  // interleaved
  EXPECT_EQ(get_overlap_status(x, x.view({4, 4})), MemOverlapStatus::Full);
  EXPECT_EQ(get_overlap_status(x.unsqueeze(0), x), MemOverlapStatus::Full);  // b broadcast to a's shape
}

// ---------------------------------------------------------------- the dispatcher's check
TEST(InplaceOverlap, PartialOverlapWithAnotherInputIsRejectedBeforeAnyWrite) {
  // Issue 19: this killed the process with SIGFPE (the zero-divisor check ran before the
  // loop, which then wrote zeros it read as divisors).
  Tensor x = arange(Scalar(1), Scalar(7), Scalar(1), kInt64);
  EXPECT_TANDEM_ERROR(x.slice(0, 1).remainder_(x.slice(0, 0, -1)), ValueError, "remainder",
                      "some elements of the input tensor and the written-to tensor refer to a single memory location",
                      "remainder_", "clone()");
  EXPECT_EQ(x.sum().item<int64_t>(), 21) << "nothing was written";
  Tensor f = arange(Scalar(6), kFloat32).reshape({2, 3});
  const int64_t v0 = f._version();
  EXPECT_TANDEM_ERROR(f.slice(1, 1).add_(f.slice(1, 0, 2)), ValueError, "add", "single memory location");
  EXPECT_TANDEM_ERROR(f.add_(f[0]), ValueError, "add", "single memory location");  // broadcast row of self
  Tensor sq = arange(Scalar(9), kFloat32).reshape({3, 3});
  EXPECT_TANDEM_ERROR(sq.add_(sq.t()), ValueError, "add", "single memory location");
  EXPECT_TANDEM_ERROR(f.view({6}).slice(0, 1).copy_(f.view({6}).slice(0, 0, 5)), ValueError, "copy",
                      "single memory location");
  EXPECT_TANDEM_ERROR(sq.addcmul_(sq[0], sq), ValueError, "addcmul", "single memory location");
  EXPECT_TANDEM_ERROR(sq.clamp_(sq[0], sq[1]), ValueError, "clamp_tensor", "single memory location");
  EXPECT_EQ(f._version(), v0) << "a rejected write bumps no version";
}

TEST(InplaceOverlap, FullOverlapAndDisjointViewsOfOneStorageAreAllowed) {
  Tensor x = arange(Scalar(1), Scalar(7), Scalar(1), kFloat32);
  x.add_(x);  // the same elements: each read before it is written
  EXPECT_EQ(x.sum().item<float>(), 42.f);
  x.mul_(x.view({2, 3}).view({6}));
  EXPECT_EQ(x[5].item<float>(), 144.f);
  Tensor m = arange(Scalar(12), kFloat32).reshape({3, 4});
  m[0].add_(m[1]);  // disjoint rows
  EXPECT_EQ(m[0].sum().item<float>(), 6.f + 22.f);
  m.slice(1, 0, 4, 2).sub_(m.slice(1, 1, 4, 2));  // interleaved columns: never the same element
  EXPECT_EQ(m[2][0].item<float>(), -1.f);
  Tensor i = arange(Scalar(1), Scalar(7), Scalar(1), kInt64);
  i.remainder_(i);
  EXPECT_EQ(i.abs().sum().item<int64_t>(), 0);
  m.copy_(m);
  Tensor b = ones({4}, kBool);
  b.masked_fill_(b, false);  // mask is self: elementwise, allowed as in PyTorch
  EXPECT_FALSE(b.any().item<bool>());
  // masked_fill reads its 0-d value before writing (InputOverlap::Any), as PyTorch does.
  Tensor w = arange(Scalar(4), kFloat32) + 5.0;
  w.masked_fill_(w > 6.0, w[0]);
  EXPECT_EQ(w.sum().item<float>(), 5.f + 6.f + 5.f + 5.f);
}

TEST(InplaceOverlap, SelfOverlappingWritesAreRejected) {
  // Issue 19: abs_() through unfold(step < size) raced across threads; PyTorch lets it
  // through ("too hard"), tandem raises.
  Tensor x = arange(Scalar(-4), Scalar(4), Scalar(1), kFloat32);
  EXPECT_TANDEM_ERROR(x.unfold(0, 3, 1).abs_(), ValueError, "abs", "more than one element of the written-to tensor",
                      "abs_");
  EXPECT_EQ(x[0].item<float>(), -4.f) << "nothing was written";
  EXPECT_TANDEM_ERROR(x[0].expand({3}).add_(1), ValueError, "add", "more than one element");
  EXPECT_TANDEM_ERROR(x.as_strided({3, 3}, {1, 2}).zero_(), ValueError, "fill", "more than one element");
  x.unfold(0, 2, 2).abs_();  // windows side by side: fine
  EXPECT_EQ(x.min().item<float>(), 0.f);
}

TEST(InplaceOverlap, IndexOpsMayNotReadTheirIndicesFromSelf) {
  // PyTorch's assert_no_overlap: an index may not share memory with self even as the very
  // same elements (the kernel reads it while writing elsewhere).
  Tensor l = arange(Scalar(6), kInt64);
  EXPECT_TANDEM_ERROR(l.scatter_(0, l, l.clone()), ValueError, "scatter", "single memory location", "'index'",
                      "the same elements");
  EXPECT_TANDEM_ERROR(l.index_add_(0, l, l.clone()), ValueError, "index_add", "single memory location");
  EXPECT_TANDEM_ERROR(l.index_fill_(0, l, 0), ValueError, "index_fill", "single memory location");
  EXPECT_TANDEM_ERROR(l.index_copy_(0, l, l.clone()), ValueError, "index_copy", "'index'");
  EXPECT_TANDEM_ERROR(l.index_put_(std::vector<Tensor>{l}, l.clone(), false), ValueError, "index_put", "'indices'");
  EXPECT_EQ(l.sum().item<int64_t>(), 15) << "nothing was written";
  // Sources: the kernels copy a source in self's storage first, so the very same elements
  // give the clone() result (PyTorch refuses these); a partial overlap is rejected as for
  // every op.
  Tensor x = arange(Scalar(12), kFloat32).reshape({3, 4});
  Tensor idx = tensor({2, 1, 0}, kInt64).unsqueeze(1).expand({3, 4}).contiguous();
  Tensor want = x.scatter(0, idx, x.clone());
  x.scatter_(0, idx, x);
  EXPECT_EQ(x[0][0].item<float>(), 8.f);
  EXPECT_EQ(x.sub(want).abs().sum().item<float>(), 0.f);
  EXPECT_TANDEM_ERROR(x.slice(0, 1).scatter_add_(0, idx.slice(0, 0, 2), x.slice(0, 0, 2)), ValueError, "scatter_add",
                      "'src'", "single memory location");
  Tensor perm = tensor({2, 0, 1}, kInt64);
  EXPECT_TANDEM_ERROR(x.slice(1, 1).index_copy_(0, perm, x.slice(1, 0, 3)), ValueError, "index_copy", "'source'");
  EXPECT_TANDEM_ERROR(x.view({12}).slice(0, 2).index_put_(std::vector<Tensor>{perm}, x.view({12}).slice(0, 0, 3), false),
                      ValueError, "index_put", "'values'");
}

TEST(InplaceOverlap, MutatedInputsAreCheckedToo) {
  // native_batch_norm writes running_mean/running_var (OpDef::mutates_inputs) in training.
  Tensor input = randn({4, 3});
  Tensor stats = zeros({3});
  Tensor w = ones({3});
  EXPECT_TANDEM_ERROR(native_batch_norm(input, stats, Tensor(), stats, ones({3}), true, 0.1, 1e-5), ValueError,
                      "native_batch_norm", "single memory location", "'running_mean'", "'weight'");
  EXPECT_TANDEM_ERROR(native_batch_norm(input, w, Tensor(), stats, stats, true, 0.1, 1e-5), ValueError,
                      "native_batch_norm", "single memory location");
  EXPECT_EQ(stats.abs().sum().item<float>(), 0.f) << "nothing was written";
  // In eval nothing is written: aliasing is harmless there.
  (void)native_batch_norm(input, stats, Tensor(), stats, stats, false, 0.1, 1e-5);
}

// ---------------------------------------------------------------- error names
TEST(InplaceErrors, NameTheFunctionalOp) {
  // Compiled mode may run an in-place call as functional op + copy_; both must name the op
  // the user's eager call names.
  auto message = [](auto&& fn) -> std::string {
    try {
      fn();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  };
  Tensor i = arange(Scalar(4), kInt64);
  const std::string functional = message([&] { (void)remainder(i, zeros({4}, kInt64)); });
  const std::string inplace = message([&] { i.remainder_(zeros({4}, kInt64)); });
  EXPECT_EQ(functional.rfind("[remainder] ", 0), 0u) << functional;
  EXPECT_EQ(inplace, functional);
  Tensor f = ones({3});
  const std::string bad_f = message([&] { (void)add(f, ones({4})); });
  const std::string bad_i = message([&] { f.add_(ones({4})); });
  EXPECT_EQ(bad_i, bad_f);
  EXPECT_EQ(bad_i.rfind("[add] ", 0), 0u) << bad_i;
  // Checks only the in-place form has still name the functional op, and the variant.
  EXPECT_TANDEM_ERROR(f.add_(ones({2, 3})), ShapeError, "add", "doesn't match the broadcast shape", "add_");
  EXPECT_TANDEM_ERROR(i.div_(2), TypeError, "div", "can't be cast", "div_");
  EXPECT_TANDEM_ERROR(f.clamp_(std::nullopt, std::nullopt), ValueError, "clamp");
  // Registry names are unchanged.
  EXPECT_EQ(get_op("div_").name, "div_");
}

}  // namespace
