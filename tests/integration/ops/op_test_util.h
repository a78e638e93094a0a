// Shared helpers of the cross-op integration suite (test_ops): one process-wide pair of real
// daemons, a static registry of the ops the suite covers, and an INDEPENDENT host reference:
// naive loops over multi-indices in double precision (nothing here calls GT's kernels or shape
// rules to compute an expected value).
#pragma once

#include <catch2/catch.hpp>
#include <gt/gt.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemons.h"

namespace gtt {

// ---- the daemons: one dispatcher + one CPU worker for the whole executable ---------------------
inline gt::testing::Daemons& daemons() {
  static gt::testing::Daemons d([] {
    gt::testing::DaemonOptions o;
    o.workers = 1;
    return o;
  }());
  static bool connected = [] {
    gt::connect(d.address());
    return true;
  }();
  (void)connected;
  return d;
}

// ---- coverage registry ---------------------------------------------------------------------------
// Filled at static-init time by GT_OPS_COVERED next to each test case, so the coverage check does
// not depend on which test cases ran (ctest runs every test case in its own process).
inline std::set<std::string>& covered_ops() {
  static std::set<std::string> s;
  return s;
}
struct CoverOps {
  CoverOps(std::initializer_list<const char*> names) {
    for (const char* n : names) covered_ops().insert(n);
  }
  explicit CoverOps(const std::vector<gt::OpId>& ops) {  // a family taken from the op table
    for (gt::OpId op : ops) covered_ops().insert(gt::op_name(op));
  }
};
#define GTT_CAT2(a, b) a##b
#define GTT_CAT(a, b) GTT_CAT2(a, b)
#define GT_OPS_COVERED(...) \
  static const ::gtt::CoverOps GTT_CAT(gtt_covers_, __LINE__) { __VA_ARGS__ }

// ---- host reference arrays ------------------------------------------------------------------------
using Shp = std::vector<int64_t>;

struct Ref {
  Shp shape;
  std::vector<double> v;  // row-major
};

inline int64_t numel_of(const Shp& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

inline std::string shape_str(const Shp& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

inline Shp strides_of(const Shp& s) {
  Shp st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Calls f(multi_index, linear_index) for every element of `s`, row-major.
template <typename F>
void for_each_index(const Shp& s, F&& f) {
  int64_t n = numel_of(s);
  Shp idx(s.size(), 0);
  for (int64_t lin = 0; lin < n; ++lin) {
    f(idx, lin);
    for (int d = static_cast<int>(s.size()) - 1; d >= 0; --d) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
}

// Linear offset in `in` of output multi-index `idx` (of rank >= in's), right-aligned broadcast.
inline int64_t bcast_offset(const Shp& in, const Shp& idx) {
  Shp st = strides_of(in);
  size_t off = idx.size() - in.size();
  int64_t o = 0;
  for (size_t d = 0; d < in.size(); ++d) o += (in[d] == 1 ? 0 : idx[off + d]) * st[d];
  return o;
}

inline Shp bcast_shape(const Shp& a, const Shp& b) {
  size_t r = std::max(a.size(), b.size());
  Shp out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    REQUIRE((da == db || da == 1 || db == 1));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

inline Ref map1(const Ref& a, const std::function<double(double)>& f) {
  Ref r{a.shape, {}};
  for (double x : a.v) r.v.push_back(f(x));
  return r;
}

inline Ref map2(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  Ref r{bcast_shape(a.shape, b.shape), {}};
  for_each_index(r.shape, [&](const Shp& idx, int64_t) {
    r.v.push_back(f(a.v[bcast_offset(a.shape, idx)], b.v[bcast_offset(b.shape, idx)]));
  });
  return r;
}

inline Ref map3(const Ref& a, const Ref& b, const Ref& c,
                const std::function<double(double, double, double)>& f) {
  Ref r{bcast_shape(bcast_shape(a.shape, b.shape), c.shape), {}};
  for_each_index(r.shape, [&](const Shp& idx, int64_t) {
    r.v.push_back(f(a.v[bcast_offset(a.shape, idx)], b.v[bcast_offset(b.shape, idx)],
                    c.v[bcast_offset(c.shape, idx)]));
  });
  return r;
}

// Reduction over all elements (dim = nullopt) or one dim (negative counts from the end); `f`
// gets the reduced values in index order.
inline Ref reduce_ref(const Ref& a, std::optional<int64_t> dim, bool keepdim,
                      const std::function<double(const std::vector<double>&)>& f) {
  const int64_t r = static_cast<int64_t>(a.shape.size());
  if (!dim) {
    Ref out{keepdim ? Shp(a.shape.size(), 1) : Shp{}, {f(a.v)}};
    return out;
  }
  int64_t d = *dim < 0 ? *dim + r : *dim;
  Shp out_shape, kept;
  for (int64_t i = 0; i < r; ++i) {
    if (i == d) {
      if (keepdim) out_shape.push_back(1);
    } else {
      out_shape.push_back(a.shape[i]);
      kept.push_back(a.shape[i]);
    }
  }
  Shp st = strides_of(a.shape);
  Ref out{out_shape, {}};
  for_each_index(kept, [&](const Shp& k, int64_t) {
    int64_t base = 0;
    for (int64_t i = 0, j = 0; i < r; ++i)
      if (i != d) base += k[j++] * st[i];
    std::vector<double> vals;
    for (int64_t x = 0; x < a.shape[d]; ++x) vals.push_back(a.v[base + x * st[d]]);
    out.v.push_back(f(vals));
  });
  return out;
}

inline double ref_sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}
inline double ref_mean(const std::vector<double>& v) {
  return v.empty() ? std::nan("") : ref_sum(v) / static_cast<double>(v.size());
}
// max/min propagate NaN; argmax/argmin give the first NaN, else the first extreme.
inline double ref_max(const std::vector<double>& v) {
  double m = -INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::max(m, x);
  }
  return m;
}
inline double ref_min(const std::vector<double>& v) {
  double m = INFINITY;
  for (double x : v) {
    if (std::isnan(x)) return x;
    m = std::min(m, x);
  }
  return m;
}
inline double ref_argext(const std::vector<double>& v, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (std::isnan(v[i])) return static_cast<double>(i);
    if (is_max ? v[i] > v[best] : v[i] < v[best]) best = i;
  }
  return static_cast<double>(best);
}

inline Ref permute_ref(const Ref& a, const Shp& perm) {
  Shp out_shape;
  for (int64_t p : perm) out_shape.push_back(a.shape[p]);
  Shp st = strides_of(a.shape);
  Ref r{out_shape, {}};
  for_each_index(out_shape, [&](const Shp& idx, int64_t) {
    int64_t o = 0;
    for (size_t i = 0; i < perm.size(); ++i) o += idx[i] * st[perm[i]];
    r.v.push_back(a.v[o]);
  });
  return r;
}

// The elements Python's range(len)[start:stop:step] picks (written out independently).
inline std::vector<int64_t> py_slice(int64_t n, std::optional<int64_t> start,
                                     std::optional<int64_t> stop, int64_t step) {
  std::vector<int64_t> out;
  int64_t s, e;
  if (step > 0) {
    s = start ? *start : 0;
    e = stop ? *stop : n;
    if (s < 0) s = std::max<int64_t>(s + n, 0);
    if (e < 0) e = std::max<int64_t>(e + n, 0);
    s = std::min(s, n);
    e = std::min(e, n);
    for (int64_t i = s; i < e; i += step) out.push_back(i);
  } else {
    s = start ? *start : n - 1;
    e = stop ? *stop : -n - 1;  // "before the beginning"
    if (start && s < 0) s += n;
    if (stop && e < 0) e += n;
    if (s >= n) s = n - 1;
    if (!stop) e = -1;
    else if (e < -1) e = -1;
    for (int64_t i = s; i > e && i >= 0; i += step) out.push_back(i);
  }
  return out;
}

// Picks positions `pos[d]` along each dim (a general strided gather).
inline Ref gather_ref(const Ref& a, const std::vector<std::vector<int64_t>>& pos) {
  Shp out_shape;
  for (const auto& p : pos) out_shape.push_back(static_cast<int64_t>(p.size()));
  Shp st = strides_of(a.shape);
  Ref r{out_shape, {}};
  for_each_index(out_shape, [&](const Shp& idx, int64_t) {
    int64_t o = 0;
    for (size_t d = 0; d < pos.size(); ++d) o += pos[d][idx[d]] * st[d];
    r.v.push_back(a.v[o]);
  });
  return r;
}

inline std::vector<int64_t> all_of(int64_t n) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

inline Ref slice_ref(const Ref& a, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> stop, int64_t step) {
  std::vector<std::vector<int64_t>> pos;
  for (size_t d = 0; d < a.shape.size(); ++d)
    pos.push_back(static_cast<int64_t>(d) == dim ? py_slice(a.shape[d], start, stop, step)
                                                 : all_of(a.shape[d]));
  return gather_ref(a, pos);
}

inline Ref cat_ref(const std::vector<Ref>& parts, int64_t dim) {
  Shp out_shape = parts[0].shape;
  out_shape[dim] = 0;
  for (const Ref& p : parts) out_shape[dim] += p.shape[dim];
  Ref r{out_shape, {}};
  for_each_index(out_shape, [&](const Shp& idx, int64_t) {
    Shp i = idx;
    size_t k = 0;
    while (i[dim] >= parts[k].shape[dim]) i[dim] -= parts[k++].shape[dim];
    Shp st = strides_of(parts[k].shape);
    int64_t o = 0;
    for (size_t d = 0; d < i.size(); ++d) o += i[d] * st[d];
    r.v.push_back(parts[k].v[o]);
  });
  return r;
}

// numpy/PyTorch matmul semantics: 1-D operands get a dim prepended (left) / appended (right)
// that is removed from the result; batch dims broadcast.
inline Ref matmul_ref(const Ref& a0, const Ref& b0) {
  Shp as = a0.shape, bs = b0.shape;
  bool av = as.size() == 1, bv = bs.size() == 1;
  if (av) as = {1, as[0]};
  if (bv) bs = {bs[0], 1};
  int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
  REQUIRE(bs[bs.size() - 2] == k);
  Shp ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  Shp batch = bcast_shape(ab, bb);
  Shp full = batch;
  full.push_back(m);
  full.push_back(n);
  Ref A{as, a0.v}, B{bs, b0.v};
  Ref r{{}, {}};
  Shp ast = strides_of(as), bst = strides_of(bs);
  for_each_index(full, [&](const Shp& idx, int64_t) {
    Shp bi(idx.begin(), idx.end() - 2);
    // batch offsets (broadcast), then row/col
    Shp ai_full = bi, bi_full = bi;
    ai_full.push_back(0);
    ai_full.push_back(0);
    bi_full.push_back(0);
    bi_full.push_back(0);
    int64_t abase = bcast_offset(as, ai_full), bbase = bcast_offset(bs, bi_full);
    int64_t i = idx[idx.size() - 2], j = idx.back();
    double s = 0;
    for (int64_t x = 0; x < k; ++x)
      s += A.v[abase + i * ast[as.size() - 2] + x] * B.v[bbase + x * bst[bs.size() - 2] + j];
    r.v.push_back(s);
  });
  r.shape = batch;
  if (!av) r.shape.push_back(m);
  if (!bv) r.shape.push_back(n);
  return r;
}

// ---- dtypes (the reference's own view of them) -----------------------------------------------------
inline bool is_float_dt(gt::DType d) {
  return d == gt::kFloat32 || d == gt::kFloat16 || d == gt::kBFloat16;
}
inline bool is_int_dt(gt::DType d) { return d == gt::kInt32 || d == gt::kInt64; }
inline int category(gt::DType d) { return d == gt::kBool ? 0 : is_int_dt(d) ? 1 : 2; }

// PyTorch's promotion between two tensors: bool < ints < floats; int32+int64 -> int64; two
// different float types -> float32.
inline gt::DType promote_ref(gt::DType a, gt::DType b) {
  if (a == b) return a;
  if (category(a) != category(b)) return category(a) > category(b) ? a : b;
  if (category(a) == 1) return gt::kInt64;
  return gt::kFloat32;
}
// Two tensors, either zero-dim (torch.result_type): a 0-d tensor counts less than one with
// dims, so it only matters when its category is higher (int32[n] + int64[] is int32,
// int32[n] * float16[] is float16, float16[n] * float32[] is float16).
inline gt::DType promote_ranked_ref(gt::DType a, bool a_0d, gt::DType b, bool b_0d) {
  if (a_0d == b_0d) return promote_ref(a, b);
  const gt::DType dim = a_0d ? b : a, zero = a_0d ? a : b;
  return category(zero) > category(dim) ? promote_ref(dim, zero) : dim;
}
// A Python scalar operand: an int scalar lifts bool to int64; a float scalar lifts non-floats
// to float32.
inline gt::DType promote_scalar_ref(gt::DType t, bool scalar_int) {
  if (scalar_int) return t == gt::kBool ? gt::kInt64 : t;
  return is_float_dt(t) ? t : gt::kFloat32;
}

// How a host double lands in a dtype: ints truncate toward zero, bool is != 0, floats keep the
// value (the tests only upload values exact in every float type) except float32 rounding and
// overflow to infinity.
inline double to_dtype(double v, gt::DType d) {
  switch (d) {
    case gt::kBool: return v != 0 ? 1.0 : 0.0;
    case gt::kInt32:
    case gt::kInt64: return std::isnan(v) ? 0.0 : std::trunc(v);
    case gt::kFloat32: return static_cast<double>(static_cast<float>(v));
    case gt::kFloat16: return std::fabs(v) >= 65520.0 ? std::copysign(INFINITY, v) : v;
    case gt::kBFloat16: return std::fabs(v) >= 3.3961e38 ? std::copysign(INFINITY, v) : v;
    case gt::kFloat64: return v;
    case gt::kInt8: return std::isnan(v) ? 0.0 : static_cast<double>(static_cast<int8_t>(std::trunc(v)));
    case gt::kUInt8: return std::isnan(v) ? 0.0 : static_cast<double>(static_cast<uint8_t>(std::trunc(v)));
  }
  return v;
}
inline Ref to_dtype(const Ref& r, gt::DType d) {
  return map1(r, [d](double x) { return to_dtype(x, d); });
}

inline const char* dt_name(gt::DType d) {
  switch (d) {
    case gt::kFloat32: return "float32";
    case gt::kFloat16: return "float16";
    case gt::kBFloat16: return "bfloat16";
    case gt::kInt32: return "int32";
    case gt::kInt64: return "int64";
    case gt::kBool: return "bool";
    case gt::kFloat64: return "float64";
    case gt::kInt8: return "int8";
    case gt::kUInt8: return "uint8";
  }
  return "?";
}

inline const std::vector<gt::DType>& all_dtypes() {
  static const std::vector<gt::DType> v{gt::kFloat32, gt::kFloat16, gt::kBFloat16,
                                        gt::kInt32,   gt::kInt64,   gt::kBool};
  return v;
}

// ---- inputs ---------------------------------------------------------------------------------------
// Values k/denom, k uniform in [lo, hi] (deterministic). With denom 64 and |k| <= 256 every value
// is exact in float32, float16 and bfloat16.
inline Ref rnd(const Shp& shape, int64_t lo, int64_t hi, double denom, uint64_t seed) {
  std::mt19937_64 g(seed);
  Ref r{shape, {}};
  for (int64_t i = 0; i < numel_of(shape); ++i)
    r.v.push_back(static_cast<double>(lo + static_cast<int64_t>(g() % (hi - lo + 1))) / denom);
  return r;
}

// A "typical" input for dtype d: floats k/64 in [-4, 4], ints in [-20, 20], bools 0/1.
inline Ref rnd_for(gt::DType d, const Shp& shape, uint64_t seed) {
  if (d == gt::kBool) return rnd(shape, 0, 1, 1, seed);
  if (is_int_dt(d)) return rnd(shape, -20, 20, 1, seed);
  return rnd(shape, -256, 256, 64, seed);
}

inline Ref ref_of(const Shp& shape, std::vector<double> v) {
  REQUIRE(numel_of(shape) == static_cast<int64_t>(v.size()));
  return Ref{shape, std::move(v)};
}

// Uploads a reference array as a tensor of dtype d (values converted by from_vector).
inline gt::Tensor up(const Ref& r, gt::DType d) {
  return gt::from_vector<double>(r.v, gt::Dims(r.shape), d);
}

// ---- comparison -------------------------------------------------------------------------------------
struct Tol {
  double atol = 0, rtol = 0;
};
inline Tol tol_for(gt::DType d) {
  switch (d) {
    case gt::kFloat32: return {1e-6, 1e-5};
    case gt::kFloat16: return {1e-3, 1e-3};
    case gt::kBFloat16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}
inline bool close_to(double got, double want, Tol t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (std::isnan(got) || std::isinf(got)) return false;
  return std::fabs(got - want) <= t.atol + t.rtol * std::fabs(want);
}

// Fetches `t` and compares shape, dtype and values; returns "" or a description of the mismatch
// (a worker-side error at the fetch is reported, not thrown, so one bad op does not hide others).
inline std::string compare(const gt::Tensor& t, const Ref& want, gt::DType want_dt,
                           std::optional<Tol> tol = std::nullopt) {
  std::ostringstream o;
  o.precision(9);
  Shp got_shape(t.shape().begin(), t.shape().end());
  if (got_shape != want.shape)
    o << "shape " << shape_str(got_shape) << " != expected " << shape_str(want.shape) << "; ";
  if (t.dtype() != want_dt)
    o << "dtype " << dt_name(t.dtype()) << " != expected " << dt_name(want_dt) << "; ";
  std::vector<double> got;
  try {
    got = t.to_vector<double>();
  } catch (const std::exception& e) {
    o << "fetch threw: " << e.what();
    return o.str();
  }
  if (got.size() != want.v.size()) {
    o << got.size() << " values != expected " << want.v.size();
    return o.str();
  }
  Tol tl = tol.value_or(tol_for(want_dt));
  int bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (close_to(got[i], want.v[i], tl)) continue;
    if (bad < 4) o << "[" << i << "] got " << got[i] << " want " << want.v[i] << "; ";
    ++bad;
  }
  if (bad) o << bad << " of " << got.size() << " values differ";
  return o.str();
}

}  // namespace gtt

// CHECK_TENSOR(tensor, ref, dtype[, tol]): one Catch check per tensor, naming what differs.
#define CHECK_TENSOR(t, ref, dt, ...)                                             \
  do {                                                                            \
    std::string gtt_msg_ = ::gtt::compare((t), (ref), (dt) __VA_OPT__(,) __VA_ARGS__);     \
    INFO(#t << " (" << ::gtt::dt_name(dt) << "): " << gtt_msg_);                  \
    CHECK(gtt_msg_.empty());                                                      \
  } while (0)
