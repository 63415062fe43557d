#include "ops/movement.h"

#include <cstring>

namespace kestrel::ops {

std::vector<int64_t> row_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t k = s.size(); k-- > 1;) st[k - 1] = st[k] * s[k];
  return st;
}

std::vector<int64_t> input_ints(const KernelContext& ctx, int i, const char* what) {
  const Tensor& t = ctx.input(i);
  if (dtype_is_float(t.dtype()) || t.dtype() == DType::Bool)
    ctx.fail(what, " (input ", i, ") must be an integer tensor, got ", dtype_name(t.dtype()));
  return t.to_i64();
}

bool ints_from_input_or_attr(const KernelContext& ctx, int i, int input_since, const char* attr,
                             std::vector<int64_t>& out) {
  if (ctx.node.opset >= input_since) {
    if (!ctx.has_input(i)) return false;
    out = input_ints(ctx, i, attr);
    return true;
  }
  if (!ctx.node.has(attr)) return false;
  out = ctx.node.attr_ints(attr);
  return true;
}

namespace {

// Splits [0, n) into chunks run in parallel when `bytes` of total work pay for threads.
template <typename F>
void for_chunks(const KernelContext& ctx, int64_t n, int64_t bytes, F&& f) {
  int64_t chunks = bytes < (int64_t(1) << 16) ? 1 : std::min<int64_t>(n, int64_t(ctx.threads()) * 4);
  if (chunks <= 1) return f(int64_t(0), n);
  parallel_for(ctx, chunks, 0, [&](int64_t c) { f(n * c / chunks, n * (c + 1) / chunks); });
}

// Offset in elements of the `row`-th combination of dims[0..k) with strides st.
int64_t offset_of(int64_t row, const Shape& dims, const std::vector<int64_t>& st, size_t k) {
  int64_t off = 0;
  for (size_t d = k; d-- > 0;) {
    off += (row % dims[d]) * st[d];
    row /= dims[d];
  }
  return off;
}

// Moves to the next combination of dims[0..k), updating the offset.
void advance(std::vector<int64_t>& idx, int64_t& off, const Shape& dims, const std::vector<int64_t>& st, size_t k) {
  for (size_t d = k; d-- > 0;) {
    off += st[d];
    if (++idx[d] < dims[d]) return;
    off -= st[d] * dims[d];
    idx[d] = 0;
  }
}

void decompose(int64_t row, const Shape& dims, size_t k, std::vector<int64_t>& idx) {
  for (size_t d = k; d-- > 0;) {
    idx[d] = row % dims[d];
    row /= dims[d];
  }
}

// Cache-blocked copy where the source is contiguous along output dim `j`
// (not the last): tiles of dims j x last keep both sides in L1.
template <typename E>
void blocked_transpose(const KernelContext& ctx, const E* src, E* dst, const Shape& d, const std::vector<int64_t>& s,
                       size_t j) {
  constexpr int64_t T = 64;
  size_t r = d.size();
  std::vector<int64_t> dst_st = row_strides(d);
  // Outer dims: every dim except j and the last one.
  Shape od;
  std::vector<int64_t> os, ods;
  for (size_t k = 0; k + 1 < r; ++k)
    if (k != j) od.push_back(d[k]), os.push_back(s[k]), ods.push_back(dst_st[k]);
  int64_t outer = shape_numel(od), nj = d[j], nl = d[r - 1], sl = s[r - 1], dj = dst_st[j];
  int64_t strips = (nj + T - 1) / T;
  int64_t tasks = outer * strips;
  parallel_for(ctx, tasks, (int64_t(1) << 15) / (T * std::max<int64_t>(nl, 1)), [&](int64_t t) {
    int64_t o = t / strips, a0 = (t % strips) * T, a1 = std::min(a0 + T, nj);
    const E* sp = src + offset_of(o, od, os, od.size());
    E* dp = dst + offset_of(o, od, ods, od.size());
    for (int64_t b0 = 0; b0 < nl; b0 += T) {
      int64_t b1 = std::min(b0 + T, nl);
      // The inner loop takes the smaller of the two strides.
      if (sl <= dj) {
        for (int64_t a = a0; a < a1; ++a) {
          const E* s = sp + a;
          E* d = dp + a * dj;
          for (int64_t b = b0; b < b1; ++b) d[b] = s[b * sl];
        }
      } else {
        for (int64_t b = b0; b < b1; ++b) {
          const E* s = sp + b * sl;
          E* d = dp + b;
          for (int64_t a = a0; a < a1; ++a) d[a * dj] = s[a];
        }
      }
    }
  });
}

template <typename E>
void copy_typed(const KernelContext& ctx, const E* src, E* dst, const Shape& d, const std::vector<int64_t>& s) {
  size_t r = d.size();
  if (r == 0) {
    *dst = *src;
    return;
  }
  int64_t inner = d[r - 1], si = s[r - 1], rows = shape_numel(d) / inner;
  if (si != 1 && si != 0 && inner >= 8) {
    for (size_t j = 0; j + 1 < r; ++j)
      if (s[j] == 1 && d[j] >= 8) return blocked_transpose(ctx, src, dst, d, s, j);
  }
  for_chunks(ctx, rows, rows * inner * int64_t(sizeof(E)), [&](int64_t begin, int64_t end) {
    if (begin >= end) return;
    if (r == 2 && si == 1 && inner * int64_t(sizeof(E)) < 64) {
      // Short rows at one stride (a Slice of a few columns): the general
      // walk's bookkeeping would cost more than each row's copy.
      for (int64_t row = begin; row < end; ++row)
        for (int64_t k = 0; k < inner; ++k) dst[row * inner + k] = src[row * s[0] + k];
      return;
    }
    std::vector<int64_t> idx(r, 0);
    decompose(begin, d, r - 1, idx);
    int64_t off = offset_of(begin, d, s, r - 1);
    for (int64_t row = begin; row < end; ++row) {
      E* out = dst + row * inner;
      const E* in = src + off;
      if (si == 1)
        copy_run(reinterpret_cast<uint8_t*>(out), reinterpret_cast<const uint8_t*>(in), size_t(inner) * sizeof(E));
      else if (si == 0) std::fill_n(out, inner, *in);
      else
        for (int64_t k = 0; k < inner; ++k) out[k] = in[k * si];
      advance(idx, off, d, s, r - 1);
    }
  });
}

}  // namespace

void strided_copy(const KernelContext& ctx, DType dtype, const uint8_t* src, uint8_t* dst, const Shape& shape,
                  const std::vector<int64_t>& strides) {
  // Drop unit dims and merge dims that are contiguous with their inner neighbour.
  Shape d;
  std::vector<int64_t> s;
  for (size_t k = 0; k < shape.size(); ++k) {
    if (shape[k] == 0) return;
    if (shape[k] == 1) continue;
    if (!d.empty() && s.back() == strides[k] * shape[k]) {
      d.back() *= shape[k];
      s.back() = strides[k];
    } else {
      d.push_back(shape[k]);
      s.push_back(strides[k]);
    }
  }
  dispatch_bytes(ctx, dtype, [&](auto* tag) {
    using E = std::remove_pointer_t<decltype(tag)>;
    copy_typed(ctx, reinterpret_cast<const E*>(src), reinterpret_cast<E*>(dst), d, s);
  });
}

}  // namespace kestrel::ops
