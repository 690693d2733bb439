// einsum as a composite: parse the equation, take diagonals for repeated labels, sum out
// labels no one else needs, then contract operands left to right with permute/reshape +
// bmm (or mul when nothing is contracted), and permute to the output order. Every step
// is an op with (or composed of ops with) a backward rule, so einsum is differentiable.
#include <algorithm>
#include <array>

#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/linalg.h"
#include "tandem/ops/op_utils.h"
#include "tandem/ops/shape.h"

namespace tandem {

namespace ops {
void check_matmul_dtypes(const char* op, ArrayRef<MetaRef> in);  // linalg.cpp
}

namespace {

constexpr const char* kOp = "einsum";
constexpr int kLetters = 52;  // 'A'-'Z' -> 0..25, 'a'-'z' -> 26..51 (ASCII order); ellipsis dims after
constexpr int kEllipsis = -1;

int letter_id(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -2;
}

std::string label_name(int id) {
  if (id < 26) return std::string(1, static_cast<char>('A' + id));
  if (id < kLetters) return std::string(1, static_cast<char>('a' + id - 26));
  return str_cat("...[", id - kLetters, "]");
}

/// Parses eq[begin, end) ("ij", "...ij") into label ids with kEllipsis for "...".
std::vector<int> parse_term(const std::string& eq, size_t begin, size_t end, const std::string& what) {
  std::vector<int> out;
  bool ell = false;
  for (size_t i = begin; i < end; ++i) {
    const char ch = eq[i];
    if (ch == '.') {
      TANDEM_CHECK(i + 2 < end && eq[i + 1] == '.' && eq[i + 2] == '.', ValueError, kOp, "found '.' for ", what,
                   " that is not part of any ellipsis");
      TANDEM_CHECK(!ell, ValueError, kOp, "found more than one ellipsis ('...') for ", what);
      ell = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    const int id = letter_id(ch);
    TANDEM_CHECK(id >= 0, ValueError, kOp, "invalid subscript '", ch, "' given at index ", i,
                 " in the equation string, subscripts must be in [a-zA-Z]");
    out.push_back(id);
  }
  return out;
}

struct Operand {
  Tensor t;
  std::vector<int> labels;  // one per dim, unique after take_diagonals
};

/// Sums `t` over the dims listed in `dims` (ascending), as a matrix-vector product with
/// ones so it needs only ops this family owns (mm has a backward rule).
Tensor sum_dims(const Tensor& t, const std::vector<int64_t>& dims) {
  if (dims.empty()) return t;
  DimVector perm, keep_sizes;
  int64_t S = 1;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) {
      perm.push_back(d);
      keep_sizes.push_back(t.size(d));
    }
  for (int64_t d : dims) {
    perm.push_back(d);
    S *= t.size(d);
  }
  const int64_t K = multiply_integers(keep_sizes);
  Tensor m = reshape(permute(t, perm), {K, S});
  Tensor r = mm(m, ones({S, 1}, t.dtype()));
  return view(r, keep_sizes);
}

/// Replaces repeated labels of one operand by their diagonal.
void take_diagonals(Operand& op, int index) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < op.labels.size() && !again; ++i)
      for (size_t j = i + 1; j < op.labels.size() && !again; ++j) {
        if (op.labels[i] != op.labels[j]) continue;
        const int64_t a = op.t.size(static_cast<int64_t>(i)), b = op.t.size(static_cast<int64_t>(j));
        TANDEM_CHECK(a == b, ShapeError, kOp, "subscript ", label_name(op.labels[i]), " is repeated for operand ", index,
                     " but the sizes don't match, ", b, " != ", a);
        const int l = op.labels[i];
        op.t = diagonal(op.t, 0, static_cast<int64_t>(i), static_cast<int64_t>(j));
        op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(j));
        op.labels.erase(op.labels.begin() + static_cast<std::ptrdiff_t>(i));
        op.labels.push_back(l);
        again = true;
      }
  }
}

/// Sums out the labels of `op` for which keep[label] is false.
void sum_unneeded(Operand& op, const std::vector<bool>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> labels;
  for (size_t d = 0; d < op.labels.size(); ++d) {
    if (keep[static_cast<size_t>(op.labels[d])]) labels.push_back(op.labels[d]);
    else dims.push_back(static_cast<int64_t>(d));
  }
  if (dims.empty()) return;
  op.t = sum_dims(op.t, dims);
  op.labels = std::move(labels);
}

int64_t find(const std::vector<int>& v, int l) {
  auto it = std::find(v.begin(), v.end(), l);
  return it == v.end() ? -1 : static_cast<int64_t>(it - v.begin());
}

/// Contracts two operands; keep[label] says whether a label is needed afterwards.
Operand contract(Operand A, Operand B, const std::vector<bool>& keep) {
  std::vector<int> batch, left, con, right;
  for (int l : A.labels) {
    if (find(B.labels, l) >= 0) (keep[static_cast<size_t>(l)] ? batch : con).push_back(l);
    else left.push_back(l);
  }
  for (int l : B.labels)
    if (find(A.labels, l) < 0) right.push_back(l);
  auto size_of = [](const Operand& o, int l) { return o.t.size(find(o.labels, l)); };
  auto sizes_of = [&](const Operand& o, const std::vector<int>& ls) {
    DimVector s;
    for (int l : ls) s.push_back(size_of(o, l));
    return s;
  };
  auto perm_of = [&](const Operand& o, std::initializer_list<const std::vector<int>*> groups) {
    DimVector p;
    for (auto* g : groups)
      for (int l : *g) p.push_back(find(o.labels, l));
    return p;
  };
  Operand R;
  R.labels = batch;
  R.labels.insert(R.labels.end(), left.begin(), left.end());
  R.labels.insert(R.labels.end(), right.begin(), right.end());
  if (con.empty()) {
    // Elementwise: A as [batch, left, 1...], B as [batch, 1..., right]; mul broadcasts.
    DimVector sa = sizes_of(A, batch), sb = sizes_of(B, batch);
    for (int l : left) {
      sa.push_back(size_of(A, l));
      sb.push_back(1);
    }
    for (int l : right) {
      sa.push_back(1);
      sb.push_back(size_of(B, l));
    }
    Tensor a = reshape(permute(A.t, perm_of(A, {&batch, &left})), sa);
    Tensor b = reshape(permute(B.t, perm_of(B, {&batch, &right})), sb);
    R.t = mul(a, b);
    return R;
  }
  // Shared labels broadcast (a size-1 dim takes the other operand's size).
  DimVector bs, cs;
  for (int l : batch) bs.push_back(std::max(size_of(A, l), size_of(B, l)));
  for (int l : con) cs.push_back(std::max(size_of(A, l), size_of(B, l)));
  const DimVector ls = sizes_of(A, left), rs = sizes_of(B, right);
  DimVector ea = bs, eb = bs;
  ea.insert(ea.end(), ls.begin(), ls.end());
  ea.insert(ea.end(), cs.begin(), cs.end());
  eb.insert(eb.end(), cs.begin(), cs.end());
  eb.insert(eb.end(), rs.begin(), rs.end());
  const int64_t nb = multiply_integers(bs), nl = multiply_integers(ls), nc = multiply_integers(cs),
                nr = multiply_integers(rs);
  Tensor a = reshape(expand(permute(A.t, perm_of(A, {&batch, &left, &con})), ea), {nb, nl, nc});
  Tensor b = reshape(expand(permute(B.t, perm_of(B, {&batch, &con, &right})), eb), {nb, nc, nr});
  DimVector out = bs;
  out.insert(out.end(), ls.begin(), ls.end());
  out.insert(out.end(), rs.begin(), rs.end());
  R.t = view(bmm(a, b), out);
  return R;
}

Tensor einsum_impl(const std::string& equation, ArrayRef<Tensor> operands) {
  std::string eq;
  for (char ch : equation)
    if (ch != ' ') eq.push_back(ch);
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  // Split the left side into terms.
  std::vector<std::vector<int>> terms;
  for (size_t b = 0;;) {
    const size_t e = lhs.find(',', b);
    const size_t end = e == std::string::npos ? lhs.size() : e;
    terms.push_back(parse_term(lhs, b, end, str_cat("operand ", terms.size())));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  TANDEM_CHECK(!operands.empty(), ValueError, kOp, "must provide at least one operand");
  TANDEM_CHECK(terms.size() <= operands.size(), ValueError, kOp,
               "fewer operands were provided than specified in the equation");
  TANDEM_CHECK(terms.size() >= operands.size(), ValueError, kOp,
               "more operands were provided than specified in the equation");
  {
    SmallVec<MetaRef, 4> metas;
    for (const Tensor& t : operands) metas.push_back(MetaRef::of(t));
    ops::check_matmul_dtypes(kOp, metas.ref());
  }
  // Expand ellipses into labels kLetters.. (right-aligned across operands).
  int64_t E = 0;
  std::vector<int64_t> ell_dims(terms.size(), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    const bool has_ell = find(terms[k], kEllipsis) >= 0;
    const int64_t nlab = static_cast<int64_t>(terms[k].size()) - (has_ell ? 1 : 0);
    const int64_t nd = operands[k].dim();
    if (has_ell) {
      TANDEM_CHECK(nlab <= nd, ShapeError, kOp, "the number of subscripts in the equation (", nlab,
                   ") is more than the number of dimensions (", nd, ") for operand ", k);
      ell_dims[k] = nd - nlab;
      E = std::max(E, ell_dims[k]);
    } else {
      TANDEM_CHECK(nlab == nd, ShapeError, kOp, "the number of subscripts in the equation (", nlab,
                   ") does not match the number of dimensions (", nd, ") for operand ", k,
                   " and no ellipsis was given");
    }
  }
  const int nlabels = kLetters + static_cast<int>(E);
  std::vector<Operand> ops(terms.size());
  std::vector<int> count(static_cast<size_t>(nlabels), 0);
  for (size_t k = 0; k < terms.size(); ++k) {
    ops[k].t = operands[k];
    for (int l : terms[k]) {
      if (l == kEllipsis) {
        for (int64_t i = E - ell_dims[k]; i < E; ++i) ops[k].labels.push_back(kLetters + static_cast<int>(i));
      } else {
        ops[k].labels.push_back(l);
      }
    }
    for (int l : ops[k].labels) ++count[static_cast<size_t>(l)];
  }
  // Output labels.
  std::vector<int> out;
  if (arrow != std::string::npos) {
    const std::vector<int> rhs = parse_term(eq, arrow + 2, eq.size(), "the output");
    for (int l : rhs) {
      if (l == kEllipsis) {
        for (int64_t i = 0; i < E; ++i) out.push_back(kLetters + static_cast<int>(i));
        continue;
      }
      TANDEM_CHECK(count[static_cast<size_t>(l)] > 0, ValueError, kOp, "output subscript ", label_name(l),
                   " does not appear in the equation for any input operand");
      TANDEM_CHECK(find(out, l) < 0, ValueError, kOp, "output subscript ", label_name(l),
                   " appears more than once in the output");
      out.push_back(l);
    }
  } else {
    for (int64_t i = 0; i < E; ++i) out.push_back(kLetters + static_cast<int>(i));
    for (int l = 0; l < kLetters; ++l)
      if (count[static_cast<size_t>(l)] == 1) out.push_back(l);
  }
  // Label sizes must agree up to broadcasting of size-1 dims.
  std::vector<int64_t> size(static_cast<size_t>(nlabels), -1);
  for (size_t k = 0; k < ops.size(); ++k) {
    take_diagonals(ops[k], static_cast<int>(k));
    for (size_t d = 0; d < ops[k].labels.size(); ++d) {
      const int64_t s = ops[k].t.size(static_cast<int64_t>(d));
      int64_t& seen = size[static_cast<size_t>(ops[k].labels[d])];
      if (seen == -1 || seen == 1) {
        seen = s;
      } else {
        TANDEM_CHECK(s == seen || s == 1, ShapeError, kOp, "subscript ", label_name(ops[k].labels[d]), " has size ", s,
                     " for operand ", k, " which does not broadcast with previously seen size ", seen);
      }
    }
  }
  // Operands that use each label (after diagonals), to know when a label can go.
  auto needed_after = [&](size_t k) {
    std::vector<bool> keep(static_cast<size_t>(nlabels), false);
    for (int l : out) keep[static_cast<size_t>(l)] = true;
    for (size_t j = k + 1; j < ops.size(); ++j)
      for (int l : ops[j].labels) keep[static_cast<size_t>(l)] = true;
    return keep;
  };
  // Sum out labels that appear in exactly one operand and not in the output.
  for (size_t k = 0; k < ops.size(); ++k) {
    std::vector<bool> keep(static_cast<size_t>(nlabels), false);
    for (int l : out) keep[static_cast<size_t>(l)] = true;
    for (size_t j = 0; j < ops.size(); ++j)
      if (j != k)
        for (int l : ops[j].labels) keep[static_cast<size_t>(l)] = true;
    sum_unneeded(ops[k], keep);
  }
  Operand acc = std::move(ops[0]);
  for (size_t k = 1; k < ops.size(); ++k) {
    const std::vector<bool> keep = needed_after(k);
    sum_unneeded(acc, [&] {
      std::vector<bool> kk = keep;  // labels of acc needed now: kept ones or shared with ops[k]
      for (int l : ops[k].labels) kk[static_cast<size_t>(l)] = true;
      return kk;
    }());
    acc = contract(std::move(acc), std::move(ops[k]), keep);
  }
  sum_unneeded(acc, needed_after(ops.size()));
  // Permute into the output order.
  DimVector perm;
  for (int l : out) perm.push_back(find(acc.labels, l));
  return permute(acc.t, perm);
}

}  // namespace

TANDEM_REGISTER_OP(einsum) {
  OpDef d;
  d.name = "einsum";
  d.inputs = {{"operands"}};
  d.variadic = true;
  d.attrs = {{"equation", std::string()}};
  d.composite = [](ArrayRef<Tensor> in, const AttrReader& a) {
    return std::vector<Tensor>{einsum_impl(a.str(0), in)};
  };
  return d;
}

Tensor einsum(const std::string& equation, const std::vector<Tensor>& operands) {
  return dispatch1(op_einsum(), operands, {AttrValue(equation)});
}

}  // namespace tandem
