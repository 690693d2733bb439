#include "tandem/kernels/cpu/onednn.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tandem/core/allocator.h"
#include "tandem/core/error.h"
#include "tandem/core/parallel.h"

namespace tandem::kernels::onednn {

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);  // leaked: used until exit
  return *e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

/// A temporary block from tandem's caching allocator (scratchpads, reordered tensors):
/// cheap to get again, and returned to the pool other tensors draw from.
class TempBuffer {
 public:
  explicit TempBuffer(size_t bytes) : bytes_(bytes), ptr_(cpu_allocator().allocate(bytes)) {}
  ~TempBuffer() {
    if (ptr_) cpu_allocator().deallocate(ptr_, bytes_);
  }
  TempBuffer(const TempBuffer&) = delete;
  TempBuffer& operator=(const TempBuffer&) = delete;
  void* get() const { return ptr_; }

 private:
  size_t bytes_;
  void* ptr_;
};

/// While alive (and `active`), OpenMP regions started by this thread (oneDNN's) use one
/// thread. The count is a per-thread OpenMP setting, so other threads are unaffected; it
/// is part of the cache key (see lookup), so small problems get single-thread primitives.
class SerialRegion {
 public:
  explicit SerialRegion(bool active) : prev_(active ? omp_get_max_threads() : 0) {
    if (prev_ > 1) omp_set_num_threads(1);
  }
  ~SerialRegion() {
    if (prev_ > 1) omp_set_num_threads(prev_);
  }
  SerialRegion(const SerialRegion&) = delete;
  SerialRegion& operator=(const SerialRegion&) = delete;

 private:
  int prev_;
};

dnnl::primitive_attr user_scratchpad_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

// ---------------------------------------------------------------- LRU cache
using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t v : k) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ULL;
    return static_cast<size_t>(h);
  }
};

/// A cached primitive and, for convolutions, the layouts it wants and the reorders
/// between them and the user's layouts.
struct Entry {
  dnnl::primitive prim;
  size_t scratch_bytes = 0;
  dnnl::memory::desc src_md, wei_md, dst_md;            // what the primitive wants
  dnnl::memory::desc user_src, user_wei, user_dst;      // what the caller has
  bool reorder_src = false, reorder_wei = false, reorder_dst = false;
  dnnl::reorder r_src, r_wei, r_dst;
  /// Backward convolutions: one slot per argument, in the order the caller passes pointers.
  struct Slot {
    int arg = 0;                       ///< DNNL_ARG_*
    bool output = false;               ///< written by the primitive (reordered back after it)
    dnnl::memory::desc user, prim;     ///< the caller's layout, the primitive's
    bool reorder = false;
    dnnl::reorder r;                   ///< user -> prim for inputs, prim -> user for outputs
  };
  std::vector<Slot> slots;
};

class Cache {
 public:
  std::shared_ptr<const Entry> get(const Key& k) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it == map_.end()) {
      ++misses_;
      return nullptr;
    }
    ++hits_;
    items_.splice(items_.begin(), items_, it->second);
    return it->second->second;
  }
  void put(const Key& k, std::shared_ptr<const Entry> e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_ == 0) return;
    auto it = map_.find(k);
    if (it != map_.end()) {
      it->second->second = std::move(e);
      items_.splice(items_.begin(), items_, it->second);
      return;
    }
    items_.emplace_front(k, std::move(e));
    map_[k] = items_.begin();
    trim();
  }
  CacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return CacheStats{hits_, misses_, static_cast<int64_t>(map_.size()), static_cast<int64_t>(capacity_)};
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    map_.clear();
    items_.clear();
    hits_ = misses_ = 0;
  }
  void set_capacity(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    capacity_ = n;
    trim();
  }

 private:
  void trim() {
    while (map_.size() > capacity_) {
      map_.erase(items_.back().first);
      items_.pop_back();
    }
  }
  std::mutex mu_;
  size_t capacity_ = 256;
  std::list<std::pair<Key, std::shared_ptr<const Entry>>> items_;
  std::unordered_map<Key, std::list<std::pair<Key, std::shared_ptr<const Entry>>>::iterator, KeyHash> map_;
  int64_t hits_ = 0, misses_ = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // leaked: primitives may be used during static destruction
  return *c;
}

/// Looks `key` up, creating (and caching) the entry with make() on a miss. The thread
/// count is part of every key: oneDNN plans a primitive's work split for the OpenMP
/// thread count at creation and must run with the same count.
template <typename Make>
std::shared_ptr<const Entry> lookup(Key key, Make make) {
  key.push_back(omp_get_max_threads());
  if (auto e = cache().get(key)) return e;
  std::shared_ptr<const Entry> e;
  try {
    e = std::make_shared<const Entry>(make());
  } catch (const dnnl::error& err) {
    throw RuntimeError(str_cat("[onednn] primitive creation failed: ", err.what()));
  }
  cache().put(key, e);
  return e;
}

int64_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return static_cast<int64_t>(u);
}

// The innermost ScratchpadLoan of this thread (none: 0 bytes).
thread_local void* loan_data = nullptr;
thread_local size_t loan_bytes = 0;

void execute(const dnnl::primitive& p, std::unordered_map<int, dnnl::memory>& args, const Entry& e) {
  const bool lent = e.scratch_bytes > 0 && e.scratch_bytes <= loan_bytes;
  TempBuffer scratch(lent ? 0 : e.scratch_bytes);
  if (e.scratch_bytes > 0) {
    dnnl::memory::desc sd({static_cast<int64_t>(e.scratch_bytes)}, dt::u8, tag::a);
    args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, engine(), lent ? loan_data : scratch.get()));
  }
  try {
    p.execute(stream(), args);
    stream().wait();
  } catch (const dnnl::error& err) {
    throw RuntimeError(str_cat("[onednn] execution failed: ", err.what()));
  }
}

// ---------------------------------------------------------------- matmul layouts
/// Normalises the strides of a rows x cols operand into a layout oneDNN's fast kernels
/// take (row-major with ld >= cols, or column-major with ld >= rows). False if none.
bool plain_2d(int64_t rows, int64_t cols, int64_t& rs, int64_t& cs) {
  if (rows == 1 && cols == 1) {
    rs = cs = 1;
    return true;
  }
  if (rows == 1) {  // a row vector: any column stride works as a column-major ld
    if (cs == 1) rs = cols;
    else rs = 1;
    return cs >= 1;
  }
  if (cols == 1) {
    if (rs == 1) cs = rows;
    else cs = 1;
    return rs >= 1;
  }
  if (cs == 1 && rs >= cols) return true;
  if (rs == 1 && cs >= rows) return true;
  return false;
}

int64_t extent_2d(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return (rows - 1) * rs + (cols - 1) * cs + 1;
}

}  // namespace

// ---------------------------------------------------------------- matmul
namespace {
// C = alpha * A @ B + beta * C with operands of type `t` (f32 or bf16: oneDNN accumulates
// bf16 products in f32 and rounds the result once). `kind` tags the cache key.
bool matmul_typed(dt t, int64_t kind, int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A,
                  const GemmMatrix& B, const GemmMatrix& C, float alpha, float beta) {
  int64_t ars = A.row_stride, acs = A.col_stride, brs = B.row_stride, bcs = B.col_stride;
  int64_t crs = C.row_stride, ccs = C.col_stride;
  if (!plain_2d(M, K, ars, acs) || !plain_2d(K, N, brs, bcs) || !plain_2d(M, N, crs, ccs)) return false;
  if (ccs != 1) return false;  // destination must be row-major
  const int64_t ab = (batch == 1 || A.batch_stride == 0) ? 1 : batch;
  const int64_t bb = (batch == 1 || B.batch_stride == 0) ? 1 : batch;
  if (batch > 1 && ab == 1 && bb == 1) return false;
  const int64_t aext = extent_2d(M, K, ars, acs), bext = extent_2d(K, N, brs, bcs), cext = extent_2d(M, N, crs, ccs);
  const int64_t abs = ab == 1 ? aext : A.batch_stride, bbs = bb == 1 ? bext : B.batch_stride;
  const int64_t cbs = batch == 1 ? cext : C.batch_stride;
  if (abs < aext || bbs < bext || cbs < cext) return false;  // overlapping batches: not a plain layout

  SerialRegion serial(static_cast<double>(batch) * M * N * K <= kParallelMinWork);
  const Key key{kind, ab, bb, batch, M, N, K, abs, ars, acs, bbs, brs, bcs, cbs, crs, float_bits(alpha), float_bits(beta)};
  auto e = lookup(key, [&] {
    dnnl::memory::desc amd({ab, M, K}, t, dims{abs, ars, acs});
    dnnl::memory::desc bmd({bb, K, N}, t, dims{bbs, brs, bcs});
    dnnl::memory::desc cmd({batch, M, N}, t, dims{cbs, crs, ccs});
    dnnl::primitive_attr attr = user_scratchpad_attr();
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(beta);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(amd, bmd, cmd), attr, engine());
    Entry en;
    en.prim = dnnl::matmul(pd);
    en.scratch_bytes = pd.scratchpad_desc().get_size();
    en.src_md = amd;
    en.wei_md = bmd;
    en.dst_md = cmd;
    return en;
  });
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(e->src_md, engine(), A.data)},
      {DNNL_ARG_WEIGHTS, dnnl::memory(e->wei_md, engine(), B.data)},
      {DNNL_ARG_DST, dnnl::memory(e->dst_md, engine(), C.data)},
  };
  execute(e->prim, args, *e);
  return true;
}
}  // namespace

namespace {
// Large float32 products go to oneDNN's GEMM (dnnl_sgemm, its jit gemm kernels) rather than
// its matmul primitive (brgemm): measured on this machine (AVX-512, 2 threads), 2048^3 takes
// 38-39 ms there against 41-43 ms, 1536^3 17.4 against 20.7 ms; at 1024^3 they tie, and
// with a short depth (2048 x 2048 x 512: 14.5 against 10.4 ms) or narrow sides the
// primitive wins. Both are a function of the shape and the thread count, as before.
bool large_sgemm_shape(int64_t M, int64_t N, int64_t K) {
  return K >= 1024 && M >= 512 && N >= 512 && static_cast<double>(M) * N * K >= 2147483648.0;
}

bool sgemm_large(int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B, const GemmMatrix& C,
                 float alpha, float beta) {
  int64_t ars = A.row_stride, acs = A.col_stride, brs = B.row_stride, bcs = B.col_stride;
  int64_t crs = C.row_stride, ccs = C.col_stride;
  if (!plain_2d(M, K, ars, acs) || !plain_2d(K, N, brs, bcs) || !plain_2d(M, N, crs, ccs)) return false;
  if (ccs != 1) return false;  // row-major destination
  // Row-major GEMM: an operand with unit column stride is 'N' with ld = row stride, one
  // with unit row stride is its transpose ('T') with ld = column stride.
  const char ta = acs == 1 ? 'N' : 'T', tb = bcs == 1 ? 'N' : 'T';
  const int64_t lda = acs == 1 ? ars : acs, ldb = bcs == 1 ? brs : bcs;
  const dnnl_status_t st = dnnl_sgemm(ta, tb, M, N, K, alpha, static_cast<const float*>(A.data), lda,
                                      static_cast<const float*>(B.data), ldb, beta, static_cast<float*>(C.data), crs);
  if (st != dnnl_success) throw RuntimeError(str_cat("[onednn] dnnl_sgemm failed with status ", static_cast<int>(st)));
  return true;
}
}  // namespace

bool matmul_f32(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
                const GemmMatrix& C, float alpha, float beta) {
  if (batch == 1 && large_sgemm_shape(M, N, K) && sgemm_large(M, N, K, A, B, C, alpha, beta)) return true;
  return matmul_typed(dt::f32, 1, batch, M, N, K, A, B, C, alpha, beta);
}

ScratchpadLoan::ScratchpadLoan(void* data, size_t bytes) : prev_data_(loan_data), prev_bytes_(loan_bytes) {
  // oneDNN lays its scratch out from the base on 64-byte boundaries (cache lines).
  const auto addr = reinterpret_cast<uintptr_t>(data);
  const uintptr_t aligned = (addr + 63) & ~uintptr_t{63};
  loan_data = reinterpret_cast<void*>(aligned);
  loan_bytes = data != nullptr && bytes >= aligned - addr ? bytes - (aligned - addr) : 0;
}

ScratchpadLoan::~ScratchpadLoan() {
  loan_data = prev_data_;
  loan_bytes = prev_bytes_;
}

bool matmul_bf16(int64_t batch, int64_t M, int64_t N, int64_t K, const GemmMatrix& A, const GemmMatrix& B,
                 const GemmMatrix& C, float alpha, float beta) {
  return matmul_typed(dt::bf16, 7, batch, M, N, K, A, B, C, alpha, beta);
}

// ---------------------------------------------------------------- convolution
namespace {

dnnl::memory::desc strided_4d(int64_t a, int64_t b, int64_t c, int64_t d, const Strides4& st, dt t = dt::f32) {
  return dnnl::memory::desc({a, b, c, d}, t, dims{st.s[0], st.s[1], st.s[2], st.s[3]});
}

/// Weight descriptor in oneDNN's (g, oc, ic, kh, kw) order for a tensor whose memory is
/// tandem's conv ([OC, C/g, KH, KW]) or conv-transpose ([C, OC/g, KH, KW]) weight.
dnnl::memory::desc weight_md(const Conv2dGeometry& g, const Strides4& w, bool transposed, dt t = dt::f32) {
  const int64_t G = g.groups, ocg = g.OC / G, icg = g.C / G;
  // Per-(oc, ic) strides of the tandem tensor.
  const int64_t s_oc = transposed ? w.s[1] : w.s[0];
  const int64_t s_ic = transposed ? w.s[0] : w.s[1];
  const int64_t s_g = transposed ? w.s[0] * icg : w.s[0] * ocg;
  if (G == 1) return dnnl::memory::desc({g.OC, g.C, g.KH, g.KW}, t, dims{s_oc, s_ic, w.s[2], w.s[3]});
  return dnnl::memory::desc({G, ocg, icg, g.KH, g.KW}, t, dims{s_g, s_oc, s_ic, w.s[2], w.s[3]});
}

/// A forward (or transposed) convolution entry on data of type `t` (f32, or bf16: oneDNN
/// accumulates in f32 and rounds the result once).
Entry make_conv_entry(const Conv2dGeometry& g, const Strides4& in_st, const Strides4& w_st, bool has_bias,
                      bool transposed, dt t = dt::f32) {
  Entry en;
  en.user_src = strided_4d(g.N, g.C, g.H, g.W, in_st, t);
  en.user_wei = weight_md(g, w_st, transposed, t);
  en.user_dst = dnnl::memory::desc({g.N, g.OC, g.OH, g.OW}, t, tag::nchw);
  const dnnl::memory::desc any_src({g.N, g.C, g.H, g.W}, t, tag::any);
  const dnnl::memory::desc any_dst({g.N, g.OC, g.OH, g.OW}, t, tag::any);
  dnnl::memory::desc any_wei = g.groups == 1
      ? dnnl::memory::desc({g.OC, g.C, g.KH, g.KW}, t, tag::any)
      : dnnl::memory::desc({g.groups, g.OC / g.groups, g.C / g.groups, g.KH, g.KW}, t, tag::any);
  const dnnl::memory::desc bias_md = has_bias ? dnnl::memory::desc({g.OC}, t, tag::a) : dnnl::memory::desc();
  const dims strides{g.stride_h, g.stride_w}, dil{g.dil_h - 1, g.dil_w - 1};
  const dims pl{g.pad_t, g.pad_l}, pr{g.pad_b, g.pad_r};
  dnnl::primitive_attr attr = user_scratchpad_attr();
  auto take = [&](const auto& pd) {
    en.prim = dnnl::primitive(pd);
    en.scratch_bytes = pd.scratchpad_desc().get_size();
    en.src_md = pd.src_desc();
    en.wei_md = pd.weights_desc();
    en.dst_md = pd.dst_desc();
  };
  if (!transposed) {
    auto forward = [&](const dnnl::memory::desc& src, const dnnl::memory::desc& dst) {
      dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src,
                                        any_wei, bias_md, dst, strides, dil, pl, pr);
      return dnnl::convolution_forward::primitive_desc(d, attr, engine());
    };
    // With "any" layouts oneDNN 2.6 picks its brgconv kernel on channels-last data for
    // 16-multiple channel counts; its direct kernel on 16-channel blocks is faster here
    // (measured on this machine: [256,32,14,14] * 64x32x3x3, 7.5 ms against 8.5 ms on 2
    // threads), so ask for nChw16c first and keep it only if a JIT kernel takes it (on a
    // CPU without AVX-512 a reference kernel would).
    bool done = false;
    if (t == dt::f32 && g.groups == 1 && g.C % 16 == 0 && g.OC % 16 == 0) {
      try {
        auto pd = forward(dnnl::memory::desc({g.N, g.C, g.H, g.W}, dt::f32, tag::nChw16c),
                          dnnl::memory::desc({g.N, g.OC, g.OH, g.OW}, dt::f32, tag::nChw16c));
        const std::string impl = pd.impl_info_str();
        if (impl.rfind("jit", 0) == 0 || impl.rfind("brg", 0) == 0) {
          take(pd);
          done = true;
        }
      } catch (const dnnl::error&) {
        // no kernel for this layout: oneDNN's own choice below
      }
    }
    if (!done) take(forward(any_src, any_dst));
  } else {
    dnnl::deconvolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct,
                                        any_src, any_wei, bias_md, any_dst, strides, dil, pl, pr);
    take(dnnl::deconvolution_forward::primitive_desc(d, attr, engine()));
  }
  auto make_reorder = [&](const dnnl::memory::desc& from, const dnnl::memory::desc& to) {
    dnnl::reorder::primitive_desc rpd(engine(), from, engine(), to, attr);
    en.scratch_bytes = std::max(en.scratch_bytes, rpd.scratchpad_desc().get_size());
    return dnnl::reorder(rpd);
  };
  if (en.src_md != en.user_src) {
    en.reorder_src = true;
    en.r_src = make_reorder(en.user_src, en.src_md);
  }
  if (en.wei_md != en.user_wei) {
    en.reorder_wei = true;
    en.r_wei = make_reorder(en.user_wei, en.wei_md);
  }
  if (en.dst_md != en.user_dst) {
    en.reorder_dst = true;
    en.r_dst = make_reorder(en.dst_md, en.user_dst);
  }
  return en;
}

/// Channel blocking of a 4-D (n, c, h, w) layout: plain (cblock 1) or one inner block of
/// channels (oneDNN's nChw16c / nChw8c); `st` gets the element strides of n, the channel
/// block, h and w. False for anything else (other blockings, padded channels).
bool channel_blocking(const dnnl::memory::desc& md, int64_t& cblock, int64_t st[4]) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.ndims != 4 || d.offset0 != 0 || d.padded_dims[1] != d.dims[1]) return false;
  const auto& b = d.format_desc.blocking;
  if (b.inner_nblks == 0 && b.strides[1] == 1 && (d.dims[1] % 16 == 0 || d.dims[1] % 8 == 0)) {
    // Channels last (NHWC, brgconv's choice): channel blocks of 16 (or 8) one after another.
    cblock = d.dims[1] % 16 == 0 ? 16 : 8;
    st[0] = b.strides[0];
    st[1] = cblock;
    st[2] = b.strides[2];
    st[3] = b.strides[3];
    return true;
  }
  if (b.inner_nblks == 0) {
    cblock = 1;
  } else if (b.inner_nblks == 1 && b.inner_idxs[0] == 1 && (b.inner_blks[0] == 8 || b.inner_blks[0] == 16) &&
             d.dims[1] % b.inner_blks[0] == 0) {
    cblock = b.inner_blks[0];
  } else {
    return false;
  }
  for (int k = 0; k < 4; ++k) st[k] = b.strides[k];
  return true;
}

/// Cache key of a convolution primitive: `kind` (2 forward, 3 transposed, 5/6 the
/// backward primitives), every geometry field, two operands' strides and a flag.
Key conv_key(int kind, const Conv2dGeometry& g, const Strides4& a, const Strides4& b, int64_t flag) {
  return Key{kind, g.N, g.C, g.H, g.W, g.OC, g.KH, g.KW, g.OH, g.OW, g.groups,
             g.stride_h, g.stride_w, g.pad_t, g.pad_l, g.pad_b, g.pad_r, g.dil_h, g.dil_w,
             a.s[0], a.s[1], a.s[2], a.s[3], b.s[0], b.s[1], b.s[2], b.s[3], flag};
}

double conv_work(const Conv2dGeometry& g) {
  return static_cast<double>(g.N) * g.OC * g.OH * g.OW * (g.C / g.groups) * g.KH * g.KW;
}

/// Bytes of a convolution's result (in its dtype: a bfloat16 slice holds twice the images)
/// per batch slice that the slices aim at: small enough that the result is still in the
/// core's L2 cache when the reorder or the fused epilogue reads it back (measured on the
/// Fashion-MNIST CNN at batch 256: 64 KiB to 1 MiB slices all run within noise of each
/// other, about 3 ms faster than one whole-batch call; bfloat16 slices counted as float32
/// ones made the cnn's conv blocks 2-5% slower in the node profile).
constexpr int64_t kConvSliceBytes = 256 * 1024;

/// Images per slice of a batched forward convolution (g.N when the batch runs whole).
/// Slices are spread over the threads, each running a single-thread primitive, so a
/// slice's result is reordered (or consumed by the epilogue) while it is in that core's
/// cache instead of after the whole batch went through memory. One image runs whole:
/// oneDNN's own threads split it.
int64_t conv_slice_batch(const Conv2dGeometry& g, int threads, int64_t element_bytes) {
  if (g.N <= 1) return g.N;
  const int64_t per_image = std::max<int64_t>(1, g.OC * g.OH * g.OW * element_bytes);
  int64_t n = std::max<int64_t>(1, kConvSliceBytes / per_image);
  n = std::min(n, (g.N + threads - 1) / threads);  // every thread gets work
  return std::min(n, g.N);
}

/// Runs entry `e` (made for batch g.N) on batch rows [n0, n0 + g.N) of the caller's
/// tensors: `input` and `out` point at row 0; `wei` is already in e.wei_md's layout. The
/// result goes to `out` (contiguous NCHW) or, with `epilogue`, to the epilogue.
void conv_slice(const Entry& e, const Conv2dGeometry& g, int64_t n0, const void* input, const Strides4& in_st,
                const void* wei, const void* bias, void* out, const LayoutEpilogue* epilogue) {
  auto& eng = engine();
  const dt t = e.user_dst.data_type();
  const int64_t elem = t == dt::f32 ? 4 : 2;
  auto at = [elem](const void* p, int64_t elements) {
    return const_cast<char*>(static_cast<const char*>(p)) + elements * elem;
  };
  dnnl::memory user_src(e.user_src, eng, at(input, n0 * in_st.s[0]));
  dnnl::memory src = user_src, dst;
  auto reorder = [&](const dnnl::reorder& r, dnnl::memory& from, dnnl::memory& to) {
    std::unordered_map<int, dnnl::memory> a{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
    execute(r, a, e);
  };
  TempBuffer src_buf(e.reorder_src ? e.src_md.get_size() : 0);
  if (e.reorder_src) {
    src = dnnl::memory(e.src_md, eng, src_buf.get());
    reorder(e.r_src, user_src, src);
  }
  const size_t dst_bytes = e.reorder_dst ? e.dst_md.get_size() : epilogue ? e.user_dst.get_size() : 0;
  TempBuffer dst_buf(dst_bytes);
  void* user_out = out ? at(out, n0 * g.OC * g.OH * g.OW) : nullptr;
  if (e.reorder_dst) dst = dnnl::memory(e.dst_md, eng, dst_buf.get());
  else dst = dnnl::memory(e.user_dst, eng, epilogue ? dst_buf.get() : user_out);
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, src},
                                             {DNNL_ARG_WEIGHTS, dnnl::memory(e.wei_md, eng, const_cast<void*>(wei))},
                                             {DNNL_ARG_DST, dst}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory({{g.OC}, t, tag::a}, eng, const_cast<void*>(bias)));
  execute(e.prim, args, e);
  if (!epilogue) {
    if (e.reorder_dst) {
      dnnl::memory user_dst(e.user_dst, eng, user_out);
      reorder(e.r_dst, dst, user_dst);
    }
    return;
  }
  int64_t cblock = 1, st[4];
  if (channel_blocking(e.dst_md, cblock, st)) {
    (*epilogue)(n0, g.N, dst.get_data_handle(), cblock, st);
    return;
  }
  // A layout the epilogue cannot read: hand it plain NCHW.
  TempBuffer plain(e.user_dst.get_size());
  dnnl::memory plain_dst(e.user_dst, eng, plain.get());
  reorder(e.r_dst, dst, plain_dst);
  const int64_t plain_st[4] = {g.OC * g.OH * g.OW, g.OH * g.OW, g.OW, 1};
  (*epilogue)(n0, g.N, plain.get(), 1, plain_st);
}

/// The caller's weights in entry e's layout: `weight` itself, or a reorder of it into
/// `buf` (resized to fit).
const void* weights_for(const Entry& e, const void* weight, std::unique_ptr<TempBuffer>& buf) {
  if (!e.reorder_wei) return weight;
  buf = std::make_unique<TempBuffer>(e.wei_md.get_size());
  dnnl::memory from(e.user_wei, engine(), const_cast<void*>(weight)), to(e.wei_md, engine(), buf->get());
  std::unordered_map<int, dnnl::memory> a{{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  execute(e.r_wei, a, e);
  return buf->get();
}

/// Runs a (non-transposed or transposed) convolution. With `epilogue`, the result is not
/// reordered into `out`: the epilogue gets it in the primitive's own layout (see
/// conv2d_f32_to_layout) and `out` is unused. A forward convolution of a batch runs in
/// slices (conv_slice_batch); eager conv2d and compiled mode's fused block both come here,
/// so they run the same primitives and give the same bits.
void run_conv(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* weight, Strides4 w_st,
              const void* bias, void* out, bool transposed, const LayoutEpilogue* epilogue = nullptr,
              dt t = dt::f32) {
  // Key kinds: 2/3 float32 forward/transposed, 8/9 bfloat16.
  const int kind = (transposed ? 3 : 2) + (t == dt::bf16 ? 6 : 0);
  auto entry_for = [&](const Conv2dGeometry& gs) {
    return lookup(conv_key(kind, gs, in_st, w_st, bias != nullptr),
                  [&] { return make_conv_entry(gs, in_st, w_st, bias != nullptr, transposed, t); });
  };
  const int threads = in_parallel_region() ? 1 : get_num_threads();
  const int64_t slice = transposed ? g.N : conv_slice_batch(g, threads, t == dt::f32 ? 4 : 2);
  if (slice >= g.N) {
    SerialRegion serial(conv_work(g) <= kParallelMinWork);
    auto e = entry_for(g);
    std::unique_ptr<TempBuffer> wbuf;
    conv_slice(*e, g, 0, input, in_st, weights_for(*e, weight, wbuf), bias, out, epilogue);
    return;
  }
  // Entries for one thread (the slices are the parallelism), looked up once per call: the
  // full slices' and, when the batch does not divide, the shorter last slice's.
  const int64_t slices = (g.N + slice - 1) / slice, last = g.N - (slices - 1) * slice;
  std::shared_ptr<const Entry> full, tail;
  {
    SerialRegion serial(true);
    Conv2dGeometry gs = g;
    gs.N = slice;
    full = entry_for(gs);
    gs.N = last;
    tail = last == slice ? full : entry_for(gs);
  }
  parallel_for(0, slices, 1, [&](int64_t lo, int64_t hi) {
    SerialRegion serial(true);
    const Entry* wei_entry = nullptr;
    std::unique_ptr<TempBuffer> wbuf;
    const void* wei = nullptr;
    for (int64_t k = lo; k < hi; ++k) {
      const Entry& e = k == slices - 1 ? *tail : *full;
      if (!wei_entry || e.wei_md != wei_entry->wei_md) {  // the shorter slice may want another layout
        wei = weights_for(e, weight, wbuf);
        wei_entry = &e;
      }
      Conv2dGeometry gs = g;
      gs.N = k == slices - 1 ? last : slice;
      conv_slice(e, gs, k * slice, input, in_st, wei, bias, out, epilogue);
    }
  });
}

/// Fills slot layouts and reorders of a backward entry; `prim_md` gives each slot's
/// primitive layout.
void finish_slots(Entry& en, const dnnl::primitive_attr& attr) {
  for (Entry::Slot& s : en.slots) {
    if (s.prim == s.user) continue;
    s.reorder = true;
    dnnl::reorder::primitive_desc rpd = s.output ? dnnl::reorder::primitive_desc(engine(), s.prim, engine(), s.user, attr)
                                                 : dnnl::reorder::primitive_desc(engine(), s.user, engine(), s.prim, attr);
    en.scratch_bytes = std::max(en.scratch_bytes, rpd.scratchpad_desc().get_size());
    s.r = dnnl::reorder(rpd);
  }
}

/// Runs a slot entry: reorders the inputs that need it into temporary buffers, runs the
/// primitive, reorders the outputs back into the caller's memory. ptrs[i] is slot i's.
/// `preset_slot` >= 0: that input slot is already in the primitive's layout in `preset`
/// (reordered once for two primitives).
void run_slots(const Entry& e, const std::vector<void*>& ptrs, int preset_slot = -1,
               const dnnl::memory* preset = nullptr) {
  auto& eng = engine();
  std::vector<std::unique_ptr<TempBuffer>> bufs;
  std::vector<dnnl::memory> user(e.slots.size()), prim(e.slots.size());
  for (size_t i = 0; i < e.slots.size(); ++i) {
    const Entry::Slot& s = e.slots[i];
    user[i] = dnnl::memory(s.user, eng, ptrs[i]);
    prim[i] = user[i];
    if (static_cast<int>(i) == preset_slot) {
      prim[i] = *preset;
      continue;
    }
    if (!s.reorder) continue;
    bufs.push_back(std::make_unique<TempBuffer>(s.prim.get_size()));
    prim[i] = dnnl::memory(s.prim, eng, bufs.back()->get());
    if (!s.output) {
      std::unordered_map<int, dnnl::memory> a{{DNNL_ARG_FROM, user[i]}, {DNNL_ARG_TO, prim[i]}};
      execute(s.r, a, e);
    }
  }
  std::unordered_map<int, dnnl::memory> args;
  for (size_t i = 0; i < e.slots.size(); ++i) args.emplace(e.slots[i].arg, prim[i]);
  execute(e.prim, args, e);
  for (size_t i = 0; i < e.slots.size(); ++i) {
    const Entry::Slot& s = e.slots[i];
    if (!s.reorder || !s.output) continue;
    std::unordered_map<int, dnnl::memory> a{{DNNL_ARG_FROM, prim[i]}, {DNNL_ARG_TO, user[i]}};
    execute(s.r, a, e);
  }
}

Entry::Slot slot(int arg, bool output, const dnnl::memory::desc& user, const dnnl::memory::desc& prim) {
  Entry::Slot s;
  s.arg = arg;
  s.output = output;
  s.user = user;
  s.prim = prim;
  return s;
}

/// The forward-training primitive descriptor oneDNN wants as a hint for backward ones.
dnnl::memory::desc any_weights(const Conv2dGeometry& g, dt t) {
  return g.groups == 1 ? dnnl::memory::desc({g.OC, g.C, g.KH, g.KW}, t, tag::any)
                       : dnnl::memory::desc({g.groups, g.OC / g.groups, g.C / g.groups, g.KH, g.KW}, t, tag::any);
}

dnnl::convolution_forward::primitive_desc conv_hint(const Conv2dGeometry& g, bool has_bias, dt t) {
  const dnnl::memory::desc any_src({g.N, g.C, g.H, g.W}, t, tag::any);
  const dnnl::memory::desc any_dst({g.N, g.OC, g.OH, g.OW}, t, tag::any);
  const dnnl::memory::desc any_wei = any_weights(g, t);
  const dnnl::memory::desc bias_md = has_bias ? dnnl::memory::desc({g.OC}, t, tag::a) : dnnl::memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_src,
                                    any_wei, bias_md, any_dst, dims{g.stride_h, g.stride_w},
                                    dims{g.dil_h - 1, g.dil_w - 1}, dims{g.pad_t, g.pad_l}, dims{g.pad_b, g.pad_r});
  return dnnl::convolution_forward::primitive_desc(d, engine());
}


}  // namespace

namespace {
/// Float32 backward convolutions whose output gradient is larger than this run in chunks
/// of images of about this many bytes of output gradient each (for_each_batch_chunk).
constexpr int64_t kBackwardChunkBytes = int64_t{4} << 20;

// Backward primitives on data of type t (f32, or bf16 with f32 accumulation). Key kinds:
// 5/6 float32 data/weights, 10/11 bfloat16.
std::shared_ptr<const Entry> backward_data_entry(dt t, const Conv2dGeometry& g, Strides4 go_st, Strides4 w_st) {
  return lookup(conv_key(t == dt::f32 ? 5 : 10, g, go_st, w_st, 0), [&] {
    const auto hint = conv_hint(g, false, t);
    const dnnl::memory::desc any_src({g.N, g.C, g.H, g.W}, t, tag::any);
    const dnnl::memory::desc any_dst({g.N, g.OC, g.OH, g.OW}, t, tag::any);
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, any_src, any_weights(g, t),
                                            any_dst, dims{g.stride_h, g.stride_w}, dims{g.dil_h - 1, g.dil_w - 1},
                                            dims{g.pad_t, g.pad_l}, dims{g.pad_b, g.pad_r});
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    dnnl::convolution_backward_data::primitive_desc pd(d, attr, engine(), hint);
    Entry en;
    en.prim = dnnl::convolution_backward_data(pd);
    en.scratch_bytes = pd.scratchpad_desc().get_size();
    en.slots.push_back(slot(DNNL_ARG_DIFF_DST, false, strided_4d(g.N, g.OC, g.OH, g.OW, go_st, t), pd.diff_dst_desc()));
    en.slots.push_back(slot(DNNL_ARG_WEIGHTS, false, weight_md(g, w_st, false, t), pd.weights_desc()));
    en.slots.push_back(slot(DNNL_ARG_DIFF_SRC, true, dnnl::memory::desc({g.N, g.C, g.H, g.W}, t, tag::nchw),
                            pd.diff_src_desc()));
    finish_slots(en, attr);
    return en;
  });
}

std::shared_ptr<const Entry> backward_weights_entry(dt t, const Conv2dGeometry& g, Strides4 in_st, Strides4 go_st,
                                                    bool has_bias) {
  return lookup(conv_key(t == dt::f32 ? 6 : 11, g, in_st, go_st, has_bias), [&] {
    const auto hint = conv_hint(g, has_bias, t);
    const dnnl::memory::desc any_src({g.N, g.C, g.H, g.W}, t, tag::any);
    const dnnl::memory::desc any_dst({g.N, g.OC, g.OH, g.OW}, t, tag::any);
    const dnnl::memory::desc bias_md = has_bias ? dnnl::memory::desc({g.OC}, t, tag::a) : dnnl::memory::desc();
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any_src, any_weights(g, t),
                                               bias_md, any_dst, dims{g.stride_h, g.stride_w},
                                               dims{g.dil_h - 1, g.dil_w - 1}, dims{g.pad_t, g.pad_l},
                                               dims{g.pad_b, g.pad_r});
    const dnnl::primitive_attr attr = user_scratchpad_attr();
    dnnl::convolution_backward_weights::primitive_desc pd(d, attr, engine(), hint);
    Entry en;
    en.prim = dnnl::convolution_backward_weights(pd);
    en.scratch_bytes = pd.scratchpad_desc().get_size();
    en.slots.push_back(slot(DNNL_ARG_SRC, false, strided_4d(g.N, g.C, g.H, g.W, in_st, t), pd.src_desc()));
    en.slots.push_back(slot(DNNL_ARG_DIFF_DST, false, strided_4d(g.N, g.OC, g.OH, g.OW, go_st, t), pd.diff_dst_desc()));
    Strides4 wc;  // contiguous [OC, C/groups, KH, KW]
    wc.s[3] = 1;
    wc.s[2] = g.KW;
    wc.s[1] = g.KH * g.KW;
    wc.s[0] = (g.C / g.groups) * g.KH * g.KW;
    en.slots.push_back(slot(DNNL_ARG_DIFF_WEIGHTS, true, weight_md(g, wc, false, t), pd.diff_weights_desc()));
    if (has_bias) en.slots.push_back(slot(DNNL_ARG_DIFF_BIAS, true, bias_md, pd.diff_bias_desc()));
    finish_slots(en, attr);
    return en;
  });
}

// Backward convolutions over a large float32 batch run in chunks of images: oneDNN copies
// the output gradient (and the input or the input gradient, when their layouts differ)
// into its blocked layouts for the call, so one call over the whole batch holds a second
// copy of those tensors at the training step's memory peak; a chunk's copies are a few MiB
// (kBackwardChunkBytes of output gradient). The input gradient of an image depends on that
// image alone; the weight and bias gradients are sums over images: each chunk after the
// first writes its partial sums to scratch, added in chunk order. So the result depends
// only on the geometry, and eager and compiled runs agree bitwise. bfloat16 runs whole
// (partial sums would be rounded to bfloat16 once per chunk).
// Images per float32 chunk: about kBackwardChunkBytes of output gradient, at least one.
int64_t chunk_images(const Conv2dGeometry& g) {
  const int64_t per_image = g.OC * g.OH * g.OW * static_cast<int64_t>(sizeof(float));
  return std::max<int64_t>(1, kBackwardChunkBytes / std::max<int64_t>(1, per_image));
}

template <typename F>
void for_each_batch_chunk(dt t, const Conv2dGeometry& g, bool weights, void* grad_weight, void* grad_bias, F run) {
  const int64_t chunk = t == dt::f32 ? chunk_images(g) : g.N;
  if (chunk >= g.N) {
    run(g, int64_t{0}, grad_weight, grad_bias);
    return;
  }
  if (!weights) {  // the input gradient of each image is its own: nothing to add up
    for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
      Conv2dGeometry gc = g;
      gc.N = std::min(chunk, g.N - n0);
      run(gc, n0, nullptr, nullptr);
    }
    return;
  }
  const int64_t wn = g.OC * (g.C / g.groups) * g.KH * g.KW;
  TempBuffer part_w(static_cast<size_t>(wn) * sizeof(float));
  TempBuffer part_b(static_cast<size_t>(grad_bias ? g.OC : 1) * sizeof(float));
  // Elementwise adds (any split of the range gives the same bytes).
  auto add = [](void* to, const void* from, int64_t n) {
    auto* d = static_cast<float*>(to);
    const auto* f = static_cast<const float*>(from);
    parallel_for(0, n, kGrainSize, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] += f[i];
    });
  };
  for (int64_t n0 = 0; n0 < g.N; n0 += chunk) {
    Conv2dGeometry gc = g;
    gc.N = std::min(chunk, g.N - n0);
    const bool first = n0 == 0;
    run(gc, n0, first ? grad_weight : part_w.get(), first || !grad_bias ? grad_bias : part_b.get());
    if (first) continue;
    add(grad_weight, part_w.get(), wn);
    if (grad_bias) add(grad_bias, part_b.get(), g.OC);
  }
}

// Strides of a contiguous [N, b, c, d] tensor (the input gradient the callers hand in).
Strides4 contiguous_strides4(int64_t b, int64_t c, int64_t d) {
  Strides4 st;
  st.s[3] = 1;
  st.s[2] = d;
  st.s[1] = c * d;
  st.s[0] = b * c * d;
  return st;
}

// Pointer to image n0 of a batch with strides st and elements of type t.
void* image(const void* p, int64_t n0, const Strides4& st, dt t) {
  const size_t esize = t == dt::f32 ? sizeof(float) : sizeof(uint16_t);
  return static_cast<char*>(const_cast<void*>(p)) + static_cast<size_t>(n0 * st.s[0]) * esize;
}

void backward_data_typed(dt t, const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* weight,
                         Strides4 w_st, void* grad_input) {
  SerialRegion serial(conv_work(g) <= kParallelMinWork);
  const Strides4 gi_st = contiguous_strides4(g.C, g.H, g.W);
  for_each_batch_chunk(t, g, false, nullptr, nullptr, [&](const Conv2dGeometry& gc, int64_t n0, void*, void*) {
    auto e = backward_data_entry(t, gc, go_st, w_st);
    run_slots(*e, {image(grad_out, n0, go_st, t), const_cast<void*>(weight), image(grad_input, n0, gi_st, t)});
  });
}

void backward_weights_typed(dt t, const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* grad_out,
                            Strides4 go_st, void* grad_weight, void* grad_bias) {
  SerialRegion serial(conv_work(g) <= kParallelMinWork);
  for_each_batch_chunk(t, g, true, grad_weight, grad_bias, [&](const Conv2dGeometry& gc, int64_t n0, void* gw, void* gb) {
    auto e = backward_weights_entry(t, gc, in_st, go_st, gb != nullptr);
    std::vector<void*> ptrs{image(input, n0, in_st, t), image(grad_out, n0, go_st, t), gw};
    if (gb) ptrs.push_back(gb);
    run_slots(*e, ptrs);
  });
}
}  // namespace

int64_t backward_chunk_images_f32(const Conv2dGeometry& g, bool with_input_grad) {
  const int64_t chunk = chunk_images(g);
  if (chunk >= g.N) return 0;
  // Only where oneDNN takes the geometry (both primitives when the input gradient is wanted
  // too): the portable fallback sums the whole batch in one pass, which per-chunk calls
  // would not reproduce.
  try {
    Conv2dGeometry gc = g;
    gc.N = chunk;
    const Strides4 in_st = contiguous_strides4(g.C, g.H, g.W), go_st = contiguous_strides4(g.OC, g.OH, g.OW);
    backward_weights_entry(dt::f32, gc, in_st, go_st, true);
    if (with_input_grad) backward_data_entry(dt::f32, gc, go_st, contiguous_strides4(g.C / g.groups, g.KH, g.KW));
  } catch (const std::exception&) {
    return 0;
  }
  return chunk;
}

void conv2d_backward_data_f32(const Conv2dGeometry& g, const float* grad_out, Strides4 go_st, const float* weight,
                              Strides4 w_st, float* grad_input) {
  backward_data_typed(dt::f32, g, grad_out, go_st, weight, w_st, grad_input);
}

void conv2d_backward_weights_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* grad_out,
                                 Strides4 go_st, float* grad_weight, float* grad_bias) {
  backward_weights_typed(dt::f32, g, input, in_st, grad_out, go_st, grad_weight, grad_bias);
}

void conv2d_backward_data_bf16(const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* weight,
                               Strides4 w_st, void* grad_input) {
  backward_data_typed(dt::bf16, g, grad_out, go_st, weight, w_st, grad_input);
}

void conv2d_backward_weights_bf16(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* grad_out,
                                  Strides4 go_st, void* grad_weight, void* grad_bias) {
  backward_weights_typed(dt::bf16, g, input, in_st, grad_out, go_st, grad_weight, grad_bias);
}

namespace {
/// Both gradients of a convolution on data of type t: backward-data and backward-weights,
/// grad_output reordered once when both primitives want the same layout for it.
void backward_both_typed(dt t, const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* input,
                         Strides4 in_st, const void* weight, Strides4 w_st, void* grad_input, void* grad_weight,
                         void* grad_bias) {
  SerialRegion serial(conv_work(g) <= kParallelMinWork);
  const Strides4 gi_st = contiguous_strides4(g.C, g.H, g.W);
  for_each_batch_chunk(t, g, true, grad_weight, grad_bias, [&](const Conv2dGeometry& gc, int64_t n0, void* gw, void* gb) {
    auto ed = backward_data_entry(t, gc, go_st, w_st);
    auto ew = backward_weights_entry(t, gc, in_st, go_st, gb != nullptr);
    void* go = image(grad_out, n0, go_st, t);
    std::vector<void*> wptrs{image(input, n0, in_st, t), go, gw};
    if (gb) wptrs.push_back(gb);
    const std::vector<void*> dptrs{go, const_cast<void*>(weight), image(grad_input, n0, gi_st, t)};
    // Slot 0 of the data entry and slot 1 of the weights entry are grad_output: when both
    // primitives want it in the same layout, reorder it once.
    const Entry::Slot &sd = ed->slots[0], &sw = ew->slots[1];
    if (!sd.reorder || !sw.reorder || sd.prim != sw.prim) {
      run_slots(*ed, dptrs);
      run_slots(*ew, wptrs);
      return;
    }
    auto& eng = engine();
    TempBuffer buf(sd.prim.get_size());
    dnnl::memory user(sd.user, eng, go), prim(sd.prim, eng, buf.get());
    std::unordered_map<int, dnnl::memory> a{{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, prim}};
    execute(sd.r, a, *ed);
    run_slots(*ed, dptrs, 0, &prim);
    run_slots(*ew, wptrs, 1, &prim);
  });
}
}  // namespace

void conv2d_backward_f32(const Conv2dGeometry& g, const float* grad_out, Strides4 go_st, const float* input,
                         Strides4 in_st, const float* weight, Strides4 w_st, float* grad_input, float* grad_weight,
                         float* grad_bias) {
  backward_both_typed(dt::f32, g, grad_out, go_st, input, in_st, weight, w_st, grad_input, grad_weight, grad_bias);
}

void conv2d_backward_bf16(const Conv2dGeometry& g, const void* grad_out, Strides4 go_st, const void* input,
                          Strides4 in_st, const void* weight, Strides4 w_st, void* grad_input, void* grad_weight,
                          void* grad_bias) {
  backward_both_typed(dt::bf16, g, grad_out, go_st, input, in_st, weight, w_st, grad_input, grad_weight, grad_bias);
}

void conv2d_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight, Strides4 w_st,
                const float* bias, float* out) {
  run_conv(g, input, in_st, weight, w_st, bias, out, false);
}

void conv2d_f32_to_layout(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight,
                          Strides4 w_st, const float* bias, const LayoutEpilogue& epilogue) {
  run_conv(g, input, in_st, weight, w_st, bias, nullptr, false, &epilogue);
}

void conv_transpose2d_f32(const Conv2dGeometry& g, const float* input, Strides4 in_st, const float* weight,
                          Strides4 w_st, const float* bias, float* out) {
  run_conv(g, input, in_st, weight, w_st, bias, out, true);
}

void conv2d_bf16(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* weight, Strides4 w_st,
                 const void* bias, void* out, bool transposed) {
  run_conv(g, input, in_st, weight, w_st, bias, out, transposed, nullptr, dt::bf16);
}

void conv2d_bf16_to_layout(const Conv2dGeometry& g, const void* input, Strides4 in_st, const void* weight,
                           Strides4 w_st, const void* bias, const LayoutEpilogue& epilogue) {
  run_conv(g, input, in_st, weight, w_st, bias, nullptr, false, &epilogue, dt::bf16);
}

// ---------------------------------------------------------------- pooling
void pool2d_f32(PoolKind kind, const Pool2dGeometry& g, PoolPadding pad, const float* input, float* out) {
  SerialRegion serial(static_cast<double>(g.N) * g.C * g.OH * g.OW * g.KH * g.KW <= kGrainSize);
  const Key key{4, static_cast<int64_t>(kind), g.N, g.C, g.H, g.W, g.OH, g.OW, g.KH, g.KW,
                g.stride_h, g.stride_w, pad.t, pad.l, pad.b, pad.r};
  auto e = lookup(key, [&] {
    const dnnl::algorithm alg = kind == PoolKind::Max ? dnnl::algorithm::pooling_max
                                : kind == PoolKind::AvgIncludePad ? dnnl::algorithm::pooling_avg_include_padding
                                                                  : dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::memory::desc src({g.N, g.C, g.H, g.W}, dt::f32, tag::nchw);
    dnnl::memory::desc dst({g.N, g.C, g.OH, g.OW}, dt::f32, tag::nchw);
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src, dst, dims{g.stride_h, g.stride_w},
                                  dims{g.KH, g.KW}, dims{pad.t, pad.l}, dims{pad.b, pad.r});
    dnnl::pooling_forward::primitive_desc pd(d, user_scratchpad_attr(), engine());
    Entry en;
    en.prim = dnnl::pooling_forward(pd);
    en.scratch_bytes = pd.scratchpad_desc().get_size();
    en.src_md = src;
    en.dst_md = dst;
    return en;
  });
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory(e->src_md, engine(), const_cast<float*>(input))},
      {DNNL_ARG_DST, dnnl::memory(e->dst_md, engine(), out)},
  };
  execute(e->prim, args, *e);
}

// ---------------------------------------------------------------- cache control
CacheStats cache_stats() { return cache().stats(); }
void clear_cache() { cache().clear(); }
void set_cache_capacity(size_t n) { cache().set_capacity(n); }

}  // namespace tandem::kernels::onednn
