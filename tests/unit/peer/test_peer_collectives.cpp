// Collectives over TcpPeerLinks on loopback against host references: all_reduce (sum, max,
// min) over 2, 3 and 4 members for every dtype, all_gather and reduce_scatter with uneven
// extents (a zero extent too) along each axis of a 3-D tensor. Groups list workers out of id
// order. Reductions combine in group order, so results are compared bit for bit.
#include "peer_test_util.h"

#include <random>
#include <type_traits>
#include "require_ok.h"

using namespace gt;
using namespace gt::test;

namespace {

template <typename T> struct AccT { using type = T; };
template <> struct AccT<half> { using type = float; };
template <> struct AccT<bfloat16> { using type = float; };

template <typename A>
A ref_combine(ReduceKind k, A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return k == ReduceKind::kMin ? (a && b) : (a || b);
  } else if constexpr (std::is_integral_v<A>) {
    using U = std::make_unsigned_t<A>;
    if (k == ReduceKind::kSum) return static_cast<A>(static_cast<U>(a) + static_cast<U>(b));
    return k == ReduceKind::kMax ? std::max(a, b) : std::min(a, b);
  } else {
    if (k == ReduceKind::kSum) return a + b;
    return k == ReduceKind::kMax ? std::max(a, b) : std::min(a, b);
  }
}

// Random values; `small` keeps float sums exact in 16-bit types.
template <typename T>
void fill(Tensor& t, std::mt19937_64& rng, bool small = false) {
  T* p = ptr<T>(t);
  for (int64_t i = 0; i < t.numel(); ++i) {
    uint64_t r = rng();
    if constexpr (std::is_same_v<T, bool>) {
      p[i] = (r & 1) != 0;
    } else if constexpr (std::is_integral_v<T>) {
      p[i] = static_cast<T>(r);  // the full range: sums wrap, and int64 must stay exact
    } else {
      double u = static_cast<double>(r >> 11) / 9007199254740992.0;  // [0, 1)
      p[i] = small ? T(static_cast<float>(std::floor(u * 17) - 8)) : T(static_cast<float>(u * 20 - 10));
    }
  }
}

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(static_cast<size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t f = 0;
  for (int d = 0; d < s.rank(); ++d) f = f * s[d] + idx[static_cast<size_t>(d)];
  return f;
}

bool same_bytes(const Tensor& t, const void* want) {
  return std::memcmp(t.storage->data(), want, static_cast<size_t>(t.meta.nbytes())) == 0;
}

std::vector<uint32_t> ids_of(const Cluster& c, const std::vector<int>& members) {
  std::vector<uint32_t> g;
  for (int m : members) g.push_back(c.ids[static_cast<size_t>(m)]);
  return g;
}

void run_all(Cluster& c, const std::vector<int>& members, CommId op, const OpAttrs& attrs,
             std::vector<Tensor>& in, std::vector<Tensor>& out) {
  const int n = static_cast<int>(members.size());
  std::vector<CommGroup> gs;
  for (int k = 0; k < n; ++k) gs.push_back(group_for(op, attrs, c.ids[static_cast<size_t>(members[k])]));
  std::vector<Status> st(static_cast<size_t>(n));
  run_parallel(n, [&](int k) {
    st[k] = c[static_cast<size_t>(members[k])].run(op, gs[k], &in[k], &out[k], 7);
  });
  for (int k = 0; k < n; ++k) {
    INFO(comm_name(op) << " member " << k << ": " << st[k].to_string());
    GT_REQUIRE_OK(st[k]);
    REQUIRE_FALSE(out[k].poison);
  }
}

uint64_t next_tag() {
  static uint64_t tag = 1000;
  return ++tag;
}

template <typename T>
void check_all_reduce(Cluster& c, const std::vector<int>& members, DType dt, ReduceKind kind,
                      const Shape& shape, std::mt19937_64& rng) {
  using A = typename AccT<T>::type;
  const int n = static_cast<int>(members.size());
  std::vector<Tensor> in, out;
  for (int k = 0; k < n; ++k) {
    in.push_back(host_tensor(shape, dt));
    fill<T>(in.back(), rng);
    out.push_back(host_tensor(shape, dt));
  }
  std::unique_ptr<T[]> want(new T[static_cast<size_t>(std::max<int64_t>(shape.numel(), 1))]());
  for (int64_t e = 0; e < shape.numel(); ++e) {
    A acc = static_cast<A>(ptr<T>(in[0])[e]);
    for (int k = 1; k < n; ++k) acc = ref_combine<A>(kind, acc, static_cast<A>(ptr<T>(in[k])[e]));
    want[static_cast<size_t>(e)] = T(acc);
  }
  INFO("all_reduce " << dtype_name(dt) << " kind " << static_cast<int>(kind) << " n " << n << " "
                     << shape.str());
  run_all(c, members, CommId::k_all_reduce, make_all_reduce(next_tag(), kind, ids_of(c, members)),
          in, out);
  for (int k = 0; k < n; ++k) CHECK(same_bytes(out[k], want.get()));
}

template <typename T>
T value_at(int member, int64_t flat) {
  if constexpr (std::is_same_v<T, int64_t>) return int64_t{member + 1} * 1000000000000LL + flat;
  else if constexpr (std::is_same_v<T, bool>) return ((member + flat) & 1) != 0;
  else return T(static_cast<float>(member * 8 + flat % 8));  // exact in every float type
}

template <typename T>
void check_all_gather(Cluster& c, const std::vector<int>& members, DType dt, int axis,
                      const std::vector<int64_t>& extents, Shape base) {
  const int n = static_cast<int>(members.size());
  std::vector<int64_t> off(static_cast<size_t>(n) + 1, 0);
  for (int k = 0; k < n; ++k) off[k + 1] = off[k] + extents[k];
  std::vector<Tensor> in, out;
  for (int k = 0; k < n; ++k) {
    Shape s = base;
    s[axis] = extents[k];
    in.push_back(host_tensor(s, dt));
    for (int64_t e = 0; e < s.numel(); ++e) ptr<T>(in.back())[e] = value_at<T>(k, e);
  }
  Shape full = base;
  full[axis] = off[n];
  for (int k = 0; k < n; ++k) out.push_back(host_tensor(full, dt));
  std::unique_ptr<T[]> want(new T[static_cast<size_t>(std::max<int64_t>(full.numel(), 1))]());
  for (int64_t e = 0; e < full.numel(); ++e) {
    auto idx = unravel(e, full);
    int m = 0;
    while (idx[static_cast<size_t>(axis)] >= off[m + 1]) ++m;
    idx[static_cast<size_t>(axis)] -= off[m];
    want[static_cast<size_t>(e)] = value_at<T>(m, ravel(idx, in[m].meta.shape));
  }
  INFO("all_gather " << dtype_name(dt) << " axis " << axis << " n " << n << " into " << full.str());
  run_all(c, members, CommId::k_all_gather,
          make_all_gather(next_tag(), axis, ids_of(c, members), extents), in, out);
  for (int k = 0; k < n; ++k) CHECK(same_bytes(out[k], want.get()));
}

template <typename T>
void check_reduce_scatter(Cluster& c, const std::vector<int>& members, DType dt, int axis,
                          const std::vector<int64_t>& extents, Shape base, std::mt19937_64& rng) {
  using A = typename AccT<T>::type;
  const int n = static_cast<int>(members.size());
  std::vector<int64_t> off(static_cast<size_t>(n) + 1, 0);
  for (int k = 0; k < n; ++k) off[k + 1] = off[k] + extents[k];
  Shape full = base;
  full[axis] = off[n];
  std::vector<Tensor> in, out;
  for (int k = 0; k < n; ++k) {
    in.push_back(host_tensor(full, dt));
    fill<T>(in.back(), rng, /*small=*/true);
    Shape s = base;
    s[axis] = extents[k];
    out.push_back(host_tensor(s, dt));
  }
  INFO("reduce_scatter " << dtype_name(dt) << " axis " << axis << " n " << n << " from " << full.str());
  run_all(c, members, CommId::k_reduce_scatter,
          make_reduce_scatter(next_tag(), axis, ids_of(c, members), extents), in, out);
  for (int r = 0; r < n; ++r) {
    const Shape& s = out[r].meta.shape;
    std::unique_ptr<T[]> want(new T[static_cast<size_t>(std::max<int64_t>(s.numel(), 1))]());
    for (int64_t e = 0; e < s.numel(); ++e) {
      auto idx = unravel(e, s);
      idx[static_cast<size_t>(axis)] += off[r];
      const int64_t src = ravel(idx, full);
      A acc = static_cast<A>(ptr<T>(in[0])[src]);
      for (int k = 1; k < n; ++k) acc = ref_combine<A>(ReduceKind::kSum, acc, static_cast<A>(ptr<T>(in[k])[src]));
      want[static_cast<size_t>(e)] = T(acc);
    }
    CHECK(same_bytes(out[r], want.get()));
  }
}

const std::vector<std::vector<int>> kGroups = {{2, 0}, {1, 3, 0}, {3, 1, 0, 2}};

}  // namespace

TEST_CASE("all_reduce sum/max/min over 2, 3 and 4 members, float32/int64/bfloat16", "[peer][collective]") {
  Cluster c(4, {}, {7, 3, 12, 5});
  std::mt19937_64 rng(42);
  for (const auto& members : kGroups)
    for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin})
      for (const Shape& shape : {Shape{5, 7}, Shape{3}, Shape{2, 0}}) {
        check_all_reduce<float>(c, members, DType::kFloat32, kind, shape, rng);
        check_all_reduce<int64_t>(c, members, DType::kInt64, kind, shape, rng);
        check_all_reduce<bfloat16>(c, members, DType::kBFloat16, kind, shape, rng);
      }
}

TEST_CASE("all_reduce covers float16, int32 and bool too", "[peer][collective]") {
  Cluster c(3);
  std::mt19937_64 rng(7);
  for (ReduceKind kind : {ReduceKind::kSum, ReduceKind::kMax, ReduceKind::kMin}) {
    check_all_reduce<half>(c, {0, 1, 2}, DType::kFloat16, kind, Shape{4, 9}, rng);
    check_all_reduce<int32_t>(c, {2, 1, 0}, DType::kInt32, kind, Shape{4, 9}, rng);
    check_all_reduce<bool>(c, {1, 0, 2}, DType::kBool, kind, Shape{4, 9}, rng);
  }
}

TEST_CASE("bfloat16 all_reduce accumulates through float and rounds once", "[peer][collective]") {
  // 256 + 1 + 1 in bfloat16 step by step stays 256; through float it is 258.
  Cluster c(3);
  std::vector<Tensor> in, out;
  for (float v : {256.0f, 1.0f, 1.0f}) {
    in.push_back(host_tensor(Shape{1}, DType::kBFloat16));
    ptr<bfloat16>(in.back())[0] = bfloat16(v);
    out.push_back(host_tensor(Shape{1}, DType::kBFloat16));
  }
  run_all(c, {0, 1, 2}, CommId::k_all_reduce,
          make_all_reduce(next_tag(), ReduceKind::kSum, ids_of(c, {0, 1, 2})), in, out);
  for (auto& o : out) CHECK(static_cast<float>(ptr<bfloat16>(o)[0]) == 258.0f);
}

TEST_CASE("all_gather with uneven extents along axes 0, 1 and 2 of a 3-D tensor", "[peer][collective]") {
  Cluster c(4, {}, {7, 3, 12, 5});
  const Shape base{2, 3, 4};
  for (int axis = 0; axis < 3; ++axis) {
    check_all_gather<float>(c, {1, 3, 0}, DType::kFloat32, axis, {1, 4, 2}, base);
    check_all_gather<int64_t>(c, {3, 1, 0, 2}, DType::kInt64, axis, {3, 0, 2, 5}, base);
    check_all_gather<bfloat16>(c, {2, 0}, DType::kBFloat16, axis, {2, 3}, base);
    check_all_gather<bool>(c, {0, 1, 2, 3}, DType::kBool, axis, {1, 1, 0, 3}, base);
  }
}

TEST_CASE("reduce_scatter with uneven extents along axes 0, 1 and 2 of a 3-D tensor", "[peer][collective]") {
  Cluster c(4, {}, {7, 3, 12, 5});
  std::mt19937_64 rng(3);
  const Shape base{2, 3, 4};
  for (int axis = 0; axis < 3; ++axis) {
    check_reduce_scatter<float>(c, {1, 3, 0}, DType::kFloat32, axis, {1, 4, 2}, base, rng);
    check_reduce_scatter<int64_t>(c, {3, 1, 0, 2}, DType::kInt64, axis, {3, 0, 2, 5}, base, rng);
    check_reduce_scatter<bfloat16>(c, {2, 0}, DType::kBFloat16, axis, {2, 3}, base, rng);
  }
}

TEST_CASE("a one-member group is a local copy", "[peer][collective]") {
  Cluster c(1);
  std::mt19937_64 rng(1);
  check_all_reduce<float>(c, {0}, DType::kFloat32, ReduceKind::kSum, Shape{3, 3}, rng);
  check_all_gather<float>(c, {0}, DType::kFloat32, 1, {3}, Shape{2, 3, 2});
  check_reduce_scatter<float>(c, {0}, DType::kFloat32, 0, {2}, Shape{2, 3}, rng);
}

TEST_CASE("collectives count the bytes they move", "[peer][collective]") {
  Cluster c(2);
  std::vector<Tensor> in, out;
  for (int k = 0; k < 2; ++k) {
    in.push_back(host_tensor(Shape{1000}, DType::kFloat32));
    out.push_back(host_tensor(Shape{2000}, DType::kFloat32));
  }
  run_all(c, {0, 1}, CommId::k_all_gather,
          make_all_gather(next_tag(), 0, ids_of(c, {0, 1}), std::vector<int64_t>{1000, 1000}), in, out);
  for (int k = 0; k < 2; ++k) {
    CHECK(c[static_cast<size_t>(k)].stats().bytes_sent == 4000);
    CHECK(c[static_cast<size_t>(k)].stats().bytes_received == 4000);
  }
}
