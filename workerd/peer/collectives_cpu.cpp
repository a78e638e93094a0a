#include "workerd/peer/collectives_cpu.h"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "gt/core/dtype.h"

namespace gt::worker::peer {

namespace {

template <typename T> struct AccOf { using type = T; };
template <> struct AccOf<half> { using type = float; };
template <> struct AccOf<bfloat16> { using type = float; };

template <ReduceKind K, typename A>
inline A combine(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    if constexpr (K == ReduceKind::kMin) return a && b;
    else return a || b;
  } else if constexpr (std::is_floating_point_v<A>) {
    if constexpr (K == ReduceKind::kSum) {
      return a + b;
    } else {
      if (a != a) return a;  // NaN propagates, like the CPU max/min kernels
      if (b != b) return b;
      if constexpr (K == ReduceKind::kMax) return a < b ? b : a;
      else return b < a ? b : a;
    }
  } else {
    if constexpr (K == ReduceKind::kSum) {
      using U = std::make_unsigned_t<A>;  // wraps like the integer kernels (no UB)
      return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    } else if constexpr (K == ReduceKind::kMax) {
      return a < b ? b : a;
    } else {
      return b < a ? b : a;
    }
  }
}

template <ReduceKind K, typename A, typename T>
void combine_into(A* acc, const T* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = combine<K, A>(acc[i], static_cast<A>(src[i]));
}

template <typename A, typename T>
void combine_kind(ReduceKind k, A* acc, const T* src, int64_t n) {
  switch (k) {
    case ReduceKind::kSum: combine_into<ReduceKind::kSum>(acc, src, n); return;
    case ReduceKind::kMax: combine_into<ReduceKind::kMax>(acc, src, n); return;
    case ReduceKind::kMin: combine_into<ReduceKind::kMin>(acc, src, n); return;
  }
}

const char* at(const void* base, uint64_t offset) {
  return base ? static_cast<const char*>(base) + offset : nullptr;
}
char* at(void* base, uint64_t offset) { return base ? static_cast<char*>(base) + offset : nullptr; }

// Splits a tensor at `axis` into outer x extent x inner (inner in bytes).
struct AxisSplit {
  uint64_t outer = 1, inner_bytes = 1;
  AxisSplit(const TensorMeta& m, int axis) {
    inner_bytes = dtype_size(m.dtype);
    for (int i = 0; i < axis; ++i) outer *= static_cast<uint64_t>(m.shape[i]);
    for (int i = axis + 1; i < m.shape.rank(); ++i) inner_bytes *= static_cast<uint64_t>(m.shape[i]);
  }
};

std::vector<uint64_t> prefix(const std::vector<int64_t>& extents) {
  std::vector<uint64_t> off(extents.size() + 1, 0);
  for (size_t i = 0; i < extents.size(); ++i) off[i + 1] = off[i] + static_cast<uint64_t>(extents[i]);
  return off;
}

}  // namespace

int comm_steps(CommId c) { return c == CommId::k_all_reduce ? 2 : 1; }

Reducer::Reducer(DType dt, ReduceKind kind, int64_t n, void* dst)
    : dt_(dt), kind_(kind), n_(n), dst_(dst) {
  if (dt == DType::kFloat16 || dt == DType::kBFloat16) acc_.reset(new float[static_cast<size_t>(n)]);
}

Reducer::~Reducer() = default;

void Reducer::add(const void* src) {
  if (n_ == 0) return;
  GT_DISPATCH_DTYPE(dt_, T, [&] {
    using A = typename AccOf<T>::type;
    const T* s = static_cast<const T*>(src);
    if constexpr (std::is_same_v<A, T>) {
      T* d = static_cast<T*>(dst_);
      if (first_) std::memcpy(d, s, static_cast<size_t>(n_) * sizeof(T));
      else combine_kind(kind_, d, s, n_);
    } else {
      float* a = acc_.get();
      if (first_) {
        for (int64_t i = 0; i < n_; ++i) a[i] = static_cast<float>(s[i]);
      } else {
        combine_kind(kind_, a, s, n_);
      }
    }
  });
  first_ = false;
}

void Reducer::finish() {
  if (n_ == 0 || first_) return;
  GT_DISPATCH_DTYPE(dt_, T, [&] {
    using A = typename AccOf<T>::type;
    if constexpr (!std::is_same_v<A, T>) {
      T* d = static_cast<T*>(dst_);
      const float* a = acc_.get();
      for (int64_t i = 0; i < n_; ++i) d[i] = T(a[i]);  // one rounding per element
    }
  });
}

void all_reduce(Channel& ch, const CommGroup& g, const TensorMeta& meta, const void* in, void* out) {
  const auto& w = g.workers;
  const int n = static_cast<int>(w.size());
  const int r = g.self_index;
  const int64_t numel = meta.shape.numel();
  const uint64_t es = dtype_size(meta.dtype);
  // Member j owns elements [lo(j), lo(j+1)): it reduces them (phase 1, step 0) and hands the
  // result to everyone (phase 2, step 1).
  auto lo = [&](int j) { return static_cast<uint64_t>(numel * j / n); };
  auto bytes = [&](int j) { return (lo(j + 1) - lo(j)) * es; };
  for (int d = 1; d < n; ++d) {
    int k = (r + d) % n;
    ch.expect(w[k], 0, bytes(r));
    ch.expect(w[k], 1, bytes(k));
  }
  for (int d = 1; d < n; ++d) {
    int j = (r + d) % n;
    ch.send(w[j], 0, at(in, lo(j) * es), bytes(j));
  }
  {
    Reducer red(meta.dtype, g.reduce, static_cast<int64_t>(lo(r + 1) - lo(r)), at(out, lo(r) * es));
    for (int k = 0; k < n; ++k) {
      if (k == r) {
        if (ch.ok()) red.add(at(in, lo(r) * es));
        continue;
      }
      auto m = ch.recv(w[k], 0, bytes(r));
      if (m) red.add(m.get());
    }
    if (ch.ok()) red.finish();
  }
  for (int d = 1; d < n; ++d) {
    int j = (r + d) % n;
    ch.send(w[j], 1, at(out, lo(r) * es), bytes(r));
  }
  for (int d = 1; d < n; ++d) {
    int k = (r + d) % n;
    auto m = ch.recv(w[k], 1, bytes(k));
    if (m && bytes(k) > 0) std::memcpy(at(out, lo(k) * es), m.get(), bytes(k));
  }
}

void all_gather(Channel& ch, const CommGroup& g, const TensorMeta& out_meta, const void* in,
                void* out) {
  const auto& w = g.workers;
  const int n = static_cast<int>(w.size());
  const int r = g.self_index;
  const AxisSplit s(out_meta, g.axis);
  const std::vector<uint64_t> off = prefix(g.extents);
  const uint64_t total = off[n];
  auto block_bytes = [&](int k) { return s.outer * static_cast<uint64_t>(g.extents[k]) * s.inner_bytes; };
  // Member k's block is `outer` runs of extents[k] * inner bytes, strided by total * inner in
  // the result (one contiguous run when gathering along the leading axis).
  auto place = [&](int k, const char* src) {
    const uint64_t run = static_cast<uint64_t>(g.extents[k]) * s.inner_bytes;
    if (run == 0) return;
    for (uint64_t o = 0; o < s.outer; ++o)
      std::memcpy(at(out, (o * total + off[k]) * s.inner_bytes), src + o * run, run);
  };
  for (int d = 1; d < n; ++d) ch.expect(w[(r + d) % n], 0, block_bytes((r + d) % n));
  for (int d = 1; d < n; ++d) ch.send(w[(r + d) % n], 0, in, block_bytes(r));
  if (ch.ok()) place(r, static_cast<const char*>(in));
  for (int d = 1; d < n; ++d) {
    int k = (r + d) % n;
    auto m = ch.recv(w[k], 0, block_bytes(k));
    if (m) place(k, m.get());
  }
}

void reduce_scatter(Channel& ch, const CommGroup& g, const TensorMeta& in_meta, const void* in,
                    void* out) {
  const auto& w = g.workers;
  const int n = static_cast<int>(w.size());
  const int r = g.self_index;
  const AxisSplit s(in_meta, g.axis);
  const std::vector<uint64_t> off = prefix(g.extents);
  const uint64_t total = off[n];
  auto run_bytes = [&](int k) { return static_cast<uint64_t>(g.extents[k]) * s.inner_bytes; };
  auto block_bytes = [&](int k) { return s.outer * run_bytes(k); };
  // Member k's block of the input, packed contiguously (a view when there is one run).
  std::unique_ptr<char[]> scratch;
  uint64_t scratch_bytes = 0;
  auto pack = [&](int k) -> const char* {
    if (s.outer == 1) return at(in, off[k] * s.inner_bytes);
    if (scratch_bytes < block_bytes(k)) {
      scratch.reset(new char[block_bytes(k)]);
      scratch_bytes = block_bytes(k);
    }
    const uint64_t run = run_bytes(k);
    if (run > 0)
      for (uint64_t o = 0; o < s.outer; ++o)
        std::memcpy(scratch.get() + o * run, at(in, (o * total + off[k]) * s.inner_bytes), run);
    return scratch.get();
  };
  for (int d = 1; d < n; ++d) ch.expect(w[(r + d) % n], 0, block_bytes(r));
  for (int d = 1; d < n; ++d) {
    int j = (r + d) % n;
    ch.send(w[j], 0, ch.ok() ? pack(j) : nullptr, block_bytes(j));
  }
  const int64_t numel = static_cast<int64_t>(block_bytes(r) / dtype_size(in_meta.dtype));
  Reducer red(in_meta.dtype, ReduceKind::kSum, numel, out);
  for (int k = 0; k < n; ++k) {
    if (k == r) {
      if (ch.ok()) red.add(pack(r));
      continue;
    }
    auto m = ch.recv(w[k], 0, block_bytes(r));
    if (m) red.add(m.get());
  }
  if (ch.ok()) red.finish();
}

}  // namespace gt::worker::peer
