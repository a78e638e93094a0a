#include "libgtcore/comm.h"

#include <algorithm>
#include <array>

namespace gt {

namespace {

struct CommRow {
  const char* name;
  uint32_t wire;
};
constexpr std::array<CommRow, kNumComms> kComms = {{
#define GT_COMM(name, wire) {#name, wire},
#include "libgtcore/comm.def"
#undef GT_COMM
}};

void push_group(OpAttrs& a, std::span<const uint32_t> group) {
  a.push_int(static_cast<int64_t>(group.size()));
  for (uint32_t w : group) a.push_int(w);
}

// Reads `n, w_0..w_{n-1}` starting at ints[at]; returns the index after it.
Result<int> read_group(const OpAttrs& a, int at, const char* name, CommGroup* g) {
  int64_t n = a.int_at(at, -1);
  if (n < 1 || n > kMaxGroup || at + 1 + n > a.n_ints)
    return invalid_argument("{}: bad group size {}", name, n);
  for (int i = 0; i < n; ++i) {
    int64_t w = a.ints[at + 1 + i];
    if (w < 0 || w > 0xffff) return invalid_argument("{}: bad worker id {}", name, w);
    if (std::find(g->workers.begin(), g->workers.end(), static_cast<uint32_t>(w)) != g->workers.end())
      return invalid_argument("{}: worker {} appears twice in the group", name, w);
    g->workers.push_back(static_cast<uint32_t>(w));
  }
  return at + 1 + static_cast<int>(n);
}

}  // namespace

const char* comm_name(CommId c) { return kComms[static_cast<size_t>(c)].name; }
uint32_t comm_wire_id(CommId c) { return kComms[static_cast<size_t>(c)].wire; }

std::optional<CommId> comm_from_wire(uint32_t wire) {
  for (size_t i = 0; i < kComms.size(); ++i)
    if (kComms[i].wire == wire) return static_cast<CommId>(i);
  return std::nullopt;
}

int CommGroup::index_of(uint32_t worker) const {
  auto it = std::find(workers.begin(), workers.end(), worker);
  return it == workers.end() ? -1 : static_cast<int>(it - workers.begin());
}

int comm_tag_int(CommId c) {
  return c == CommId::k_send || c == CommId::k_recv ? 1 : 0;  // {peer, tag}; {tag, ...}
}

OpAttrs make_send(uint32_t peer, uint64_t tag) {
  OpAttrs a;
  a.push_int(peer);
  a.push_int(static_cast<int64_t>(tag));
  return a;
}

OpAttrs make_recv(uint32_t peer, uint64_t tag, const TensorMeta& meta) {
  OpAttrs a = make_send(peer, tag);
  a.shape = meta.shape;
  a.has_shape = true;
  a.dtype = meta.dtype;
  return a;
}

OpAttrs make_all_reduce(uint64_t tag, ReduceKind kind, std::span<const uint32_t> group) {
  OpAttrs a;
  a.push_int(static_cast<int64_t>(tag));
  a.push_int(static_cast<int64_t>(kind));
  push_group(a, group);
  return a;
}

static OpAttrs make_axis_collective(uint64_t tag, int axis, std::span<const uint32_t> group,
                                    std::span<const int64_t> extents) {
  OpAttrs a;
  a.push_int(static_cast<int64_t>(tag));
  a.push_int(axis);
  push_group(a, group);
  for (int64_t e : extents) a.push_int(e);
  return a;
}

OpAttrs make_all_gather(uint64_t tag, int axis, std::span<const uint32_t> group,
                        std::span<const int64_t> extents) {
  return make_axis_collective(tag, axis, group, extents);
}

OpAttrs make_reduce_scatter(uint64_t tag, int axis, std::span<const uint32_t> group,
                            std::span<const int64_t> extents) {
  return make_axis_collective(tag, axis, group, extents);
}

Result<CommGroup> decode_comm(CommId c, const OpAttrs& a, uint32_t self) {
  const char* name = comm_name(c);
  CommGroup g;
  switch (c) {
    case CommId::k_send:
    case CommId::k_recv: {
      if (a.n_ints != 2) return invalid_argument("{}: expects peer and tag", name);
      int64_t peer = a.ints[0];
      if (peer < 0 || peer > 0xffff) return invalid_argument("{}: bad peer {}", name, peer);
      if (static_cast<uint32_t>(peer) == self) return invalid_argument("{}: peer is this worker", name);
      g.peer = static_cast<uint32_t>(peer);
      g.tag = static_cast<uint64_t>(a.ints[1]);
      return g;
    }
    case CommId::k_all_reduce: {
      g.tag = static_cast<uint64_t>(a.int_at(0));
      int64_t kind = a.int_at(1, -1);
      if (kind < 0 || kind > 2) return invalid_argument("{}: bad reduction {}", name, kind);
      g.reduce = static_cast<ReduceKind>(kind);
      GT_ASSIGN_OR_RETURN(int end, read_group(a, 2, name, &g));
      if (end != a.n_ints) return invalid_argument("{}: trailing attributes", name);
      break;
    }
    case CommId::k_all_gather:
    case CommId::k_reduce_scatter: {
      g.tag = static_cast<uint64_t>(a.int_at(0));
      g.axis = static_cast<int>(a.int_at(1, -1));
      if (g.axis < 0 || g.axis >= kMaxRank) return invalid_argument("{}: bad axis {}", name, a.int_at(1));
      GT_ASSIGN_OR_RETURN(int end, read_group(a, 2, name, &g));
      if (end + static_cast<int>(g.workers.size()) != a.n_ints)
        return invalid_argument("{}: expects one extent per group member", name);
      for (size_t i = 0; i < g.workers.size(); ++i) {
        int64_t e = a.ints[end + i];
        if (e < 0 || e > kMaxNumel) return invalid_argument("{}: bad extent {}", name, e);
        g.extents.push_back(e);
      }
      break;
    }
  }
  g.self_index = g.index_of(self);
  if (g.self_index < 0) return invalid_argument("{}: this worker ({}) is not in the group", name, self);
  return g;
}

Result<TensorMeta> infer_comm_meta(CommId c, std::span<const TensorMeta> in, const OpAttrs& a,
                                   const CommGroup& g) {
  const char* name = comm_name(c);
  size_t want = c == CommId::k_recv ? 0 : 1;
  if (in.size() != want) return invalid_argument("{}: expects {} inputs, got {}", name, want, in.size());
  switch (c) {
    case CommId::k_send:
    case CommId::k_all_reduce: return in[0];
    case CommId::k_recv: {
      if (!a.has_shape) return invalid_argument("recv: missing shape");
      GT_RETURN_IF_ERROR(check_shape_size(a.shape, a.dtype));
      return TensorMeta{a.shape, a.dtype};
    }
    case CommId::k_all_gather:
    case CommId::k_reduce_scatter: {
      const TensorMeta& x = in[0];
      if (g.axis >= x.shape.rank())
        return invalid_argument("{}: axis {} out of range for {}", name, g.axis, x.shape.str());
      int64_t total = 0;
      for (int64_t e : g.extents) total += e;
      const int64_t mine = g.extents[static_cast<size_t>(g.self_index)];
      TensorMeta out = x;
      if (c == CommId::k_all_gather) {
        if (x.shape[g.axis] != mine)
          return invalid_argument("all_gather: this member's extent is {}, its input has {}", mine,
                                  x.shape[g.axis]);
        out.shape[g.axis] = total;
      } else {
        if (x.shape[g.axis] != total)
          return invalid_argument("reduce_scatter: input extent {} != sum of extents {}",
                                  x.shape[g.axis], total);
        out.shape[g.axis] = mine;
      }
      GT_RETURN_IF_ERROR(check_shape_size(out.shape, out.dtype));
      return out;
    }
  }
  return internal_error("{}: no rule", name);
}

}  // namespace gt
