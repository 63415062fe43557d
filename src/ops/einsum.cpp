// Einsum: parses the equation (repeated labels, ellipsis, implicit output),
// takes diagonals, sums labels no one else needs, then contracts operands
// left to right as batched GEMMs ([batch, M, K] x [batch, K, N]), with
// every layout change done by one strided gather.
#include <map>

#include "ops/common.h"
#include "ops/gemm_util.h"

namespace kestrel::ops {
namespace {

// A dense operand whose dims carry labels (0..51 letters, 52+ ellipsis dims).
template <typename T>
struct Labeled {
  std::vector<T> data;
  std::vector<int64_t> dims;
  std::vector<int> labels;
};

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> st(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) st[i - 1] = st[i] * dims[i];
  return st;
}

// out[idx] = src[sum idx[d] * stride[d]]: permutes, broadcasts (stride 0) and
// takes diagonals (summed strides) in one pass.
template <typename T>
std::vector<T> gather(const T* src, const std::vector<int64_t>& dims, const std::vector<int64_t>& stride) {
  int64_t n = shape_numel(dims);
  std::vector<T> out(static_cast<size_t>(n));
  if (n == 0) return out;
  size_t r = dims.size();
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[size_t(i)] = src[off];
    for (size_t d = r; d-- > 0;) {
      off += stride[d];
      if (++idx[d] < dims[d]) break;
      off -= stride[d] * dims[d];
      idx[d] = 0;
    }
  }
  return out;
}

// Rearranges t so its labels are `order` (each label once), with sizes
// `sizes` (a dim of size 1 broadcasts). Returns false without copying when
// t already has exactly that layout.
template <typename T>
bool relayout(Labeled<T>& t, const std::vector<int>& order, const std::map<int, int64_t>& sizes) {
  std::vector<int64_t> dims, stride;
  std::vector<int64_t> st = strides_of(t.dims);
  for (int l : order) {
    int64_t s = 0, own = 1;
    for (size_t d = 0; d < t.labels.size(); ++d)
      if (t.labels[d] == l) s += st[d], own = t.dims[d];
    int64_t want = sizes.at(l);
    dims.push_back(want);
    stride.push_back(own == want ? s : 0);
  }
  if (t.labels == order && t.dims == dims) return false;
  t.data = gather(t.data.data(), dims, stride);
  t.dims = dims;
  t.labels = order;
  return true;
}

// Sums away every label of t not in `keep`.
template <typename T>
void sum_out(Labeled<T>& t, const std::vector<int>& keep_labels) {
  std::vector<int> kept, dropped;
  for (int l : t.labels) (std::count(keep_labels.begin(), keep_labels.end(), l) ? kept : dropped).push_back(l);
  if (dropped.empty()) return;
  std::map<int, int64_t> sizes;
  for (size_t d = 0; d < t.labels.size(); ++d) sizes[t.labels[d]] = t.dims[d];
  std::vector<int> order = kept;
  order.insert(order.end(), dropped.begin(), dropped.end());
  relayout(t, order, sizes);
  int64_t inner = 1;
  for (int l : dropped) inner *= sizes[l];
  std::vector<int64_t> dims;
  for (int l : kept) dims.push_back(sizes[l]);
  int64_t outer = shape_numel(dims);
  std::vector<T> out(static_cast<size_t>(outer), T(0));
  for (int64_t i = 0; i < outer; ++i)
    for (int64_t j = 0; j < inner; ++j) out[size_t(i)] += t.data[size_t(i * inner + j)];
  t.data = std::move(out);
  t.dims = dims;
  t.labels = kept;
}

template <typename T>
void batched_matmul(const KernelContext& ctx, int64_t batch, int64_t M, int64_t N, int64_t K, bool ta, bool tb,
                    const T* a, const T* b, T* c) {
  if constexpr (std::is_same_v<T, float>) {
    std::vector<int64_t> ao, bo, co;
    for (int64_t i = 0; i < batch; ++i) ao.push_back(i * M * K), bo.push_back(i * K * N), co.push_back(i * M * N);
    sgemm_batched(ctx, ta, tb, M, N, K, a, ta ? M : K, ao.data(), b, tb ? K : N, bo.data(), c, N, co.data(), batch);
  } else {
    parallel_for(ctx, batch * M, 1, [&](int64_t r) {
      int64_t bi = r / M, i = r % M;
      const T* ab = a + bi * M * K;
      const T* bb = b + bi * K * N;
      for (int64_t j = 0; j < N; ++j) {
        T acc = T(0);
        for (int64_t k = 0; k < K; ++k) acc += (ta ? ab[k * M + i] : ab[i * K + k]) * (tb ? bb[j * K + k] : bb[k * N + j]);
        c[bi * M * N + i * N + j] = acc;
      }
    });
  }
}

// Contracts a and b; `needed` are labels the output or later operands use.
template <typename T>
Labeled<T> contract(const KernelContext& ctx, Labeled<T>& a, Labeled<T>& b, const std::vector<int>& needed) {
  auto has = [](const std::vector<int>& v, int l) { return std::count(v.begin(), v.end(), l) != 0; };
  std::vector<int> batch, aonly, con, bonly;
  std::map<int, int64_t> sizes;
  for (size_t d = 0; d < a.labels.size(); ++d) sizes[a.labels[d]] = a.dims[d];
  for (size_t d = 0; d < b.labels.size(); ++d) {
    int l = b.labels[d];
    auto it = sizes.find(l);
    if (it != sizes.end() && it->second != b.dims[d] && it->second != 1 && b.dims[d] != 1)
      ctx.fail("label size mismatch: ", it->second, " vs ", b.dims[d]);
    sizes[l] = it == sizes.end() ? b.dims[d] : std::max(it->second, b.dims[d]);
  }
  for (int l : a.labels) (has(b.labels, l) ? (has(needed, l) ? batch : con) : aonly).push_back(l);
  for (int l : b.labels)
    if (!has(a.labels, l)) bonly.push_back(l);
  auto cat = [](std::vector<int> x, const std::vector<int>& y, const std::vector<int>& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  auto prod = [&](const std::vector<int>& ls) {
    int64_t p = 1;
    for (int l : ls) p *= sizes[l];
    return p;
  };
  // Prefer the transposed GEMM operand over copying when the layout already fits.
  bool ta = a.labels == cat(batch, con, aonly) && a.labels != cat(batch, aonly, con);
  bool tb = b.labels == cat(batch, bonly, con) && b.labels != cat(batch, con, bonly);
  relayout(a, ta ? cat(batch, con, aonly) : cat(batch, aonly, con), sizes);
  relayout(b, tb ? cat(batch, bonly, con) : cat(batch, con, bonly), sizes);
  Labeled<T> r;
  r.labels = cat(batch, aonly, bonly);
  for (int l : r.labels) r.dims.push_back(sizes[l]);
  r.data.assign(static_cast<size_t>(shape_numel(r.dims)), T(0));
  if (!r.data.empty())
    batched_matmul(ctx, prod(batch), prod(aonly), prod(bonly), prod(con), ta, tb, a.data.data(), b.data.data(),
                   r.data.data());
  return r;
}

struct Equation {
  std::vector<std::vector<int>> terms;  // per input: labels, -1 marks the ellipsis
  std::vector<int> out;
  bool explicit_out = false;
};

Equation parse(const KernelContext& ctx, std::string eq) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  Equation e;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  auto parse_term = [&](const std::string& s) {
    std::vector<int> t;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c == '.') {
        if (s.compare(i, 3, "...") != 0 || std::count(t.begin(), t.end(), -1)) ctx.fail("malformed ellipsis in '", s, "'");
        t.push_back(-1);
        i += 2;
      } else if (c >= 'a' && c <= 'z') {
        t.push_back(c - 'a');
      } else if (c >= 'A' && c <= 'Z') {
        t.push_back(26 + c - 'A');
      } else {
        ctx.fail("equation has invalid character '", c, "'");
      }
    }
    return t;
  };
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    e.terms.push_back(parse_term(lhs.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (arrow != std::string::npos) {
    e.explicit_out = true;
    e.out = parse_term(eq.substr(arrow + 2));
  }
  return e;
}

template <typename T>
void run_typed(KernelContext& ctx, const Equation& eq) {
  const int kEll = 52;  // label of the first ellipsis dim
  int n_in = ctx.num_inputs();
  if (int(eq.terms.size()) != n_in) ctx.fail("equation has ", eq.terms.size(), " operands but the node has ", n_in, " inputs");
  // Ellipsis dims align to the right across operands, like numpy broadcasting.
  int ell_rank = 0;
  for (int i = 0; i < n_in; ++i) {
    int letters = int(std::count_if(eq.terms[size_t(i)].begin(), eq.terms[size_t(i)].end(), [](int l) { return l >= 0; }));
    bool ell = std::count(eq.terms[size_t(i)].begin(), eq.terms[size_t(i)].end(), -1) != 0;
    int r = ctx.input(i).rank();
    if (ell ? r < letters : r != letters)
      ctx.fail("operand ", i, " has rank ", r, " but its term names ", letters, " dims");
    if (ell) ell_rank = std::max(ell_rank, r - letters);
  }
  std::vector<Labeled<T>> ops;
  std::map<int, int> count;  // label -> number of operands using it
  for (int i = 0; i < n_in; ++i) {
    const Tensor& x = ctx.input(i);
    if (x.dtype() != ctx.input(0).dtype()) ctx.fail("operand types differ");
    Labeled<T> t;
    t.data.assign(x.data<T>(), x.data<T>() + x.numel());
    t.dims = x.shape();
    int e = x.rank() - int(eq.terms[size_t(i)].size()) + 1;  // dims the ellipsis covers
    for (int l : eq.terms[size_t(i)]) {
      if (l >= 0) {
        t.labels.push_back(l);
        continue;
      }
      for (int k = 0; k < e; ++k) t.labels.push_back(kEll + ell_rank - e + k);
    }
    // Repeated labels: take the diagonal.
    std::vector<int> uniq;
    for (int l : t.labels)
      if (!std::count(uniq.begin(), uniq.end(), l)) uniq.push_back(l);
    if (uniq.size() != t.labels.size()) {
      std::map<int, int64_t> sizes;
      for (size_t d = 0; d < t.labels.size(); ++d) {
        auto it = sizes.find(t.labels[d]);
        if (it != sizes.end() && it->second != t.dims[d]) ctx.fail("repeated label spans dims of sizes ", it->second, " and ", t.dims[d]);
        sizes[t.labels[d]] = t.dims[d];
      }
      relayout(t, uniq, sizes);
    }
    for (int l : t.labels) ++count[l];
    ops.push_back(std::move(t));
  }
  std::vector<int> out;
  if (eq.explicit_out) {
    for (int l : eq.out) {
      if (l >= 0) {
        if (!count.count(l) || std::count(out.begin(), out.end(), l)) ctx.fail("output label is missing from the inputs or repeated");
        out.push_back(l);
      } else {
        for (int k = 0; k < ell_rank; ++k) out.push_back(kEll + k);
      }
    }
  } else {  // implicit: ellipsis dims, then letters used exactly once, alphabetically
    for (int k = 0; k < ell_rank; ++k) out.push_back(kEll + k);
    std::map<int, int> uses;
    for (auto& term : eq.terms)
      for (int l : term)
        if (l >= 0) ++uses[l];
    for (auto& [l, c] : uses)
      if (c == 1) out.push_back(l);
  }
  for (int l : out)
    if (l >= kEll && !count.count(l)) ctx.fail("ellipsis dims are in the output but in no input");

  auto needed_after = [&](size_t i) {  // labels of the output and of operands after i
    std::vector<int> need = out;
    for (size_t j = i + 1; j < ops.size(); ++j) need.insert(need.end(), ops[j].labels.begin(), ops[j].labels.end());
    return need;
  };
  auto needed_except = [&](size_t i) {
    std::vector<int> need = out;
    for (size_t j = 0; j < ops.size(); ++j)
      if (j != i) need.insert(need.end(), ops[j].labels.begin(), ops[j].labels.end());
    return need;
  };
  for (size_t i = 0; i < ops.size(); ++i) sum_out(ops[i], needed_except(i));
  Labeled<T> acc = std::move(ops[0]);
  for (size_t i = 1; i < ops.size(); ++i) acc = contract(ctx, acc, ops[i], needed_after(i));
  sum_out(acc, out);
  std::map<int, int64_t> sizes;
  for (size_t d = 0; d < acc.labels.size(); ++d) sizes[acc.labels[d]] = acc.dims[d];
  relayout(acc, out, sizes);
  Tensor& Y = ctx.output(0, ctx.input(0).dtype(), acc.dims);
  std::copy(acc.data.begin(), acc.data.end(), Y.data<T>());
}

void run_einsum(KernelContext& ctx) {
  Equation eq = parse(ctx, ctx.node.attr_s("equation", ""));
  switch (ctx.input(0).dtype()) {
    case DType::Float32: return run_typed<float>(ctx, eq);
    case DType::Float64: return run_typed<double>(ctx, eq);
    case DType::Int32: return run_typed<int32_t>(ctx, eq);
    case DType::Int64: return run_typed<int64_t>(ctx, eq);
    default: ctx.fail("element type ", dtype_name(ctx.input(0).dtype()), " is not supported");
  }
}

}  // namespace

KESTREL_OP(Einsum, {.min_opset = 12, .run = run_einsum, .uses_products = true});

}  // namespace kestrel::ops
