#pragma once
// Reduction and scan loops shared by the reduction ops (ops/reduce*.cpp).
//
// A reduction is described by a policy P (what to compute) and a ReduceIter (which
// elements feed which output). The policy supplies:
//   using in_t, acc_t;            element type read, accumulator type
//   static constexpr int kLanes;  independent accumulators per contiguous row (vectorisation)
//   acc_t identity() const;       value of an empty reduction
//   void step(acc_t&, in_t v, int64_t idx) const;  fold in one element; idx = its position
//                                 along the reduced dims (meaningful for one reduced dim)
//   void merge(acc_t& a, const acc_t& b) const;    a := a (+) b; must not depend on call order
//                                 beyond float reassociation (arg ops break ties by index)
//   void write(int64_t out_offset, const acc_t&) const;  store one result (element offset)
//
// Summation order is a fixed pairwise tree chosen from the shape alone (never from the
// thread count), so results are reproducible across set_num_threads() and float32 sums
// of 10^7 elements keep O(log n) rounding error, like PyTorch's cascade sum.
#include <algorithm>
#include <cstdint>
#include <memory>

#include "tandem/kernels/cpu/loops.h"

namespace tandem::kernels {

/// Input dims split into kept dims (one output element per index) and reduced dims. Each
/// group is ordered innermost-first by input stride and coalesced where memory allows.
/// Strides are in elements.
struct ReduceIter {
  int nkeep = 0;
  int nred = 0;
  int64_t keep_shape[kMaxDims] = {};
  int64_t keep_in[kMaxDims] = {};
  int64_t keep_out[kMaxDims] = {};
  int64_t red_shape[kMaxDims] = {};
  int64_t red_in[kMaxDims] = {};
  int64_t keep_numel = 1;
  int64_t red_numel = 1;

  /// `mask` bit d set = input dim d is reduced (bits >= in.dim() are ignored, so a 0-d
  /// input reduces over "dim 0" to itself). `out` has the keepdim shape or the shape with
  /// reduced dims removed; its strides decide where results go.
  static ReduceIter make(const Tensor& in, const Tensor& out, uint64_t mask);
};

/// Size of a tile of consecutive outputs reduced together in column mode.
template <typename Acc>
inline constexpr int64_t kReduceTile = std::max<int64_t>(16, 2048 / static_cast<int64_t>(sizeof(Acc)));
/// Contiguous elements one pairwise leaf sums with kLanes accumulators before merging.
inline constexpr int64_t kReduceLeaf = 512;
/// Rows summed directly in a column-mode leaf.
inline constexpr int64_t kReduceColLeaf = 16;
/// Fixed chunk size when one output's reduction is split across threads.
inline constexpr int64_t kReduceSplit = 1 << 16;

namespace detail {

/// Heap array of accumulators (std::vector<bool> would not give a bool*).
template <typename T>
struct AccBuf {
  std::unique_ptr<T[]> p;
  explicit AccBuf(int64_t n) : p(new T[static_cast<size_t>(n)]) {}
  T* data() const { return p.get(); }
  T& operator[](int64_t i) const { return p[static_cast<size_t>(i)]; }
};

/// Offset of flattened index `lin` (innermost-first) over n dims.
inline int64_t offset_of(int64_t lin, int n, const int64_t* shape, const int64_t* stride) {
  int64_t off = 0;
  for (int d = 0; d < n && lin > 0; ++d) {
    int64_t q = lin / shape[d];
    off += (lin - q * shape[d]) * stride[d];
    lin = q;
  }
  return off;
}

template <class P>
struct ReduceRunner {
  using in_t = typename P::in_t;
  using acc_t = typename P::acc_t;
  static constexpr int L = P::kLanes;
  const ReduceIter& it;
  const in_t* in;
  const P& p;

  // ---- row mode: the innermost input dim is reduced; each output walks its rows.
  acc_t leaf(const in_t* x, int64_t n, int64_t s, int64_t idx0) const {
    if constexpr (L == 1) {
      acc_t a = p.identity();
      if (s == 1)
        for (int64_t i = 0; i < n; ++i) p.step(a, x[i], idx0 + i);
      else
        for (int64_t i = 0; i < n; ++i) p.step(a, x[i * s], idx0 + i);
      return a;
    } else {
      acc_t lanes[L];
      for (int k = 0; k < L; ++k) lanes[k] = p.identity();
      int64_t i = 0;
      if (s == 1) {
        for (; i + L <= n; i += L)
          for (int k = 0; k < L; ++k) p.step(lanes[k], x[i + k], idx0 + i + k);
      } else {
        for (; i + L <= n; i += L)
          for (int k = 0; k < L; ++k) p.step(lanes[k], x[(i + k) * s], idx0 + i + k);
      }
      for (int k = 0; i < n; ++i, ++k) p.step(lanes[k], x[i * s], idx0 + i);
      for (int w = L / 2; w >= 1; w /= 2)
        for (int k = 0; k < w; ++k) p.merge(lanes[k], lanes[k + w]);
      return lanes[0];
    }
  }
  // Pairwise over one row [lo, hi) of n0 elements with stride s.
  acc_t row(const in_t* x, int64_t lo, int64_t hi, int64_t s, int64_t idx0) const {
    if (hi - lo <= kReduceLeaf) return leaf(x + lo * s, hi - lo, s, idx0 + lo);
    int64_t mid = lo + ((hi - lo) / 2 + L - 1) / L * L;
    acc_t a = row(x, lo, mid, s, idx0);
    p.merge(a, row(x, mid, hi, s, idx0));
    return a;
  }
  // Pairwise over rows [lo, hi) of the outer reduced dims (1..nred-1).
  acc_t rows(const in_t* base, int64_t lo, int64_t hi) const {
    const int64_t n0 = it.nred ? it.red_shape[0] : 1, s0 = it.nred ? it.red_in[0] : 0;
    if (hi - lo == 1) {
      int64_t off = it.nred > 1 ? offset_of(lo, it.nred - 1, it.red_shape + 1, it.red_in + 1) : 0;
      return row(base + off, 0, n0, s0, lo * n0);
    }
    int64_t mid = lo + (hi - lo) / 2;
    acc_t a = rows(base, lo, mid);
    p.merge(a, rows(base, mid, hi));
    return a;
  }
  acc_t merge_parts(const acc_t* parts, int64_t lo, int64_t hi) const {
    if (hi - lo == 1) return parts[lo];
    int64_t mid = lo + (hi - lo) / 2;
    acc_t a = merge_parts(parts, lo, mid);
    p.merge(a, merge_parts(parts, mid, hi));
    return a;
  }

  void run_rows() const {
    const int64_t n0 = it.nred ? it.red_shape[0] : 1, s0 = it.nred ? it.red_in[0] : 0;
    const int64_t R = it.red_numel / n0;
    const int64_t total = it.keep_numel * it.red_numel;
    auto keep_in_off = [&](int64_t o) { return offset_of(o, it.nkeep, it.keep_shape, it.keep_in); };
    auto keep_out_off = [&](int64_t o) { return offset_of(o, it.nkeep, it.keep_shape, it.keep_out); };
    // Few outputs with long reductions: split each reduction into fixed chunks.
    int64_t chunks = 1;
    if (it.keep_numel < 4 && (R == 1 || R >= 64)) chunks = std::clamp<int64_t>(it.red_numel / kReduceSplit, 1, 64);
    if (chunks > 1) {
      AccBuf<acc_t> parts(it.keep_numel * chunks);
      parallel_for(0, it.keep_numel * chunks, 1, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
          int64_t o = t / chunks, c = t % chunks;
          const in_t* base = in + keep_in_off(o);
          if (R == 1) {
            int64_t lo = n0 * c / chunks / L * L, hi = c + 1 == chunks ? n0 : n0 * (c + 1) / chunks / L * L;
            parts[t] = lo < hi ? row(base, lo, hi, s0, 0) : p.identity();
          } else {
            parts[t] = rows(base, R * c / chunks, R * (c + 1) / chunks);
          }
        }
      });
      for (int64_t o = 0; o < it.keep_numel; ++o) p.write(keep_out_off(o), merge_parts(parts.data(), o * chunks, (o + 1) * chunks));
      return;
    }
    auto body = [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) p.write(keep_out_off(o), rows(in + keep_in_off(o), 0, R));
    };
    if (total < kGrainSize) body(0, it.keep_numel);
    else parallel_for(0, it.keep_numel, 1, body);
  }

  // ---- column mode: the innermost input dim is kept; a tile of w outputs advances
  // together over the reduced index space, so loads along the tile are contiguous.
  void col_leaf(const in_t* base, int64_t w, int64_t lo, int64_t hi, acc_t* acc) const {
    const int64_t ks = it.keep_in[0];
    for (int64_t j = 0; j < w; ++j) acc[j] = p.identity();
    for (int64_t r = lo; r < hi; ++r) {
      const in_t* x = base + offset_of(r, it.nred, it.red_shape, it.red_in);
      if (ks == 1)
        for (int64_t j = 0; j < w; ++j) p.step(acc[j], x[j], r);
      else
        for (int64_t j = 0; j < w; ++j) p.step(acc[j], x[j * ks], r);
    }
  }
  void cols(const in_t* base, int64_t w, int64_t lo, int64_t hi, acc_t* acc, acc_t* scratch) const {
    if (hi - lo <= kReduceColLeaf) return col_leaf(base, w, lo, hi, acc);
    constexpr int64_t W = kReduceTile<acc_t>;
    int64_t mid = lo + (hi - lo) / 2;
    cols(base, w, lo, mid, acc, scratch + W);
    cols(base, w, mid, hi, scratch, scratch + W);
    for (int64_t j = 0; j < w; ++j) p.merge(acc[j], scratch[j]);
  }
  static int64_t col_depth(int64_t rows) {
    int64_t d = 1;
    while (rows > kReduceColLeaf) { rows = (rows + 1) / 2; ++d; }
    return d;
  }

  void run_cols() const {
    constexpr int64_t W = kReduceTile<acc_t>;
    const int64_t K0 = it.keep_shape[0], kos = it.keep_out[0], ks = it.keep_in[0];
    const int64_t tiles = (K0 + W - 1) / W, outer = it.keep_numel / K0, tasks = outer * tiles;
    const int64_t R = it.red_numel, total = it.keep_numel * R;
    int64_t chunks = 1;
    if (tasks < 4 && R >= 64 * kReduceColLeaf) chunks = std::clamp<int64_t>(R * std::min(K0, W) / kReduceSplit, 1, 64);
    auto tile_geom = [&](int64_t t, int64_t& in_off, int64_t& out_off, int64_t& w) {
      int64_t q = t / tiles, j0 = (t % tiles) * W;
      w = std::min(W, K0 - j0);
      in_off = offset_of(q, it.nkeep - 1, it.keep_shape + 1, it.keep_in + 1) + j0 * ks;
      out_off = offset_of(q, it.nkeep - 1, it.keep_shape + 1, it.keep_out + 1) + j0 * kos;
    };
    if (chunks > 1) {
      AccBuf<acc_t> parts(tasks * chunks * W);
      parallel_for(0, tasks * chunks, 1, [&](int64_t b, int64_t e) {
        int64_t lo_r = R / chunks + 1;
        AccBuf<acc_t> scratch(col_depth(lo_r) * W);
        for (int64_t tc = b; tc < e; ++tc) {
          int64_t t = tc / chunks, c = tc % chunks, in_off, out_off, w;
          tile_geom(t, in_off, out_off, w);
          cols(in + in_off, w, R * c / chunks, R * (c + 1) / chunks, parts.data() + tc * W, scratch.data());
        }
      });
      AccBuf<acc_t> col(chunks);
      for (int64_t t = 0; t < tasks; ++t) {
        int64_t in_off, out_off, w;
        tile_geom(t, in_off, out_off, w);
        for (int64_t j = 0; j < w; ++j) {
          for (int64_t c = 0; c < chunks; ++c) col[c] = parts[(t * chunks + c) * W + j];
          p.write(out_off + j * kos, merge_parts(col.data(), 0, chunks));
        }
      }
      return;
    }
    auto body = [&](int64_t b, int64_t e) {
      AccBuf<acc_t> buf((col_depth(R) + 1) * W);
      for (int64_t t = b; t < e; ++t) {
        int64_t in_off, out_off, w;
        tile_geom(t, in_off, out_off, w);
        cols(in + in_off, w, 0, R, buf.data(), buf.data() + W);
        for (int64_t j = 0; j < w; ++j) p.write(out_off + j * kos, buf[j]);
      }
    };
    if (total < kGrainSize) body(0, tasks);
    else parallel_for(0, tasks, 1, body);
  }
};

}  // namespace detail

/// Runs policy `p` over `it` reading elements of `in` (pointer to the input's first
/// element). Outputs with no elements to reduce get p.identity().
template <class P>
void reduce_kernel(const ReduceIter& it, const typename P::in_t* in, const P& p) {
  if (it.keep_numel == 0) return;
  if (it.red_numel == 0) {
    for (int64_t o = 0; o < it.keep_numel; ++o)
      p.write(detail::offset_of(o, it.nkeep, it.keep_shape, it.keep_out), p.identity());
    return;
  }
  detail::ReduceRunner<P> r{it, in, p};
  // Row mode when the innermost input dim is a reduced one (or nothing is kept); column
  // mode otherwise (also when nothing is reduced: a vectorised copy-like pass).
  auto key = [](int64_t s) { return s == 0 ? INT64_MAX : s; };
  bool row_mode = it.nkeep == 0 || (it.nred > 0 && key(it.red_in[0]) <= key(it.keep_in[0]));
  if (row_mode) r.run_rows();
  else r.run_cols();
}

/// Scan (cumulative) loop along `dim` of a contiguous input with contiguous outputs of
/// the same shape. Policy: in_t, acc_t, identity(), step(acc&, in_t, int64_t k) with k the
/// position along dim, write(int64_t offset, const acc_t&). Lines run in parallel.
template <class P>
void scan_kernel(const typename P::in_t* in, IntArrayRef sizes, int64_t dim, const P& p) {
  using acc_t = typename P::acc_t;
  int64_t outer = 1, inner = 1, n = sizes.empty() ? 1 : sizes[static_cast<size_t>(dim)];
  for (int64_t d = 0; d < dim; ++d) outer *= sizes[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < sizes.size(); ++d) inner *= sizes[d];
  const int64_t numel = outer * n * inner;
  if (numel == 0) return;
  constexpr int64_t W = kReduceTile<acc_t>;
  const int64_t tiles = (inner + W - 1) / W, tasks = outer * tiles;
  auto body = [&](int64_t b, int64_t e) {
    acc_t acc[W];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / tiles, j0 = (t % tiles) * W, w = std::min(W, inner - j0);
      int64_t base = o * n * inner + j0;
      for (int64_t j = 0; j < w; ++j) acc[j] = p.identity();
      if (w == 1) {
        acc_t a = acc[0];
        for (int64_t k = 0; k < n; ++k) {
          p.step(a, in[base + k * inner], k);
          p.write(base + k * inner, a);
        }
      } else {
        for (int64_t k = 0; k < n; ++k) {
          const int64_t off = base + k * inner;
          for (int64_t j = 0; j < w; ++j) p.step(acc[j], in[off + j], k);
          for (int64_t j = 0; j < w; ++j) p.write(off + j, acc[j]);
        }
      }
    }
  };
  if (numel < kGrainSize) body(0, tasks);
  else parallel_for(0, tasks, 1, body);
}

}  // namespace tandem::kernels
