// Re-placement (ARCHITECTURE §5): moving a tensor's value between placements with communication
// instructions, never through the dispatcher. Every move is built from a few exact steps —
// point-to-point send/recv, all_gather, all_reduce, reduce_scatter, and local slice/cat/add —
// composed through "one whole copy on one worker" where no direct step exists (correct first).
// A ClientSession member: the moves go into the session's worker batches.
#include "dispatcherd/client_session.h"

namespace gt::dispatcher {

namespace {

// Attributes of the slice taking member `m`'s piece of a tensor with global meta `g`.
OpAttrs piece_attrs(const Placement& shard, const TensorMeta& g, int m) {
  OpAttrs a;
  a.shape = shard.local_meta(g, m).shape;
  a.has_shape = true;
  for (int d = 0; d < g.shape.rank(); ++d) {
    a.push_int(d == shard.axis ? shard.offset_of(m) : 0);
    a.push_int(1);
  }
  return a;
}

}  // namespace

Result<std::vector<uint64_t>> ClientSession::materialize(
    const TensorEntry& e, const Placement& target,
    std::vector<std::pair<uint32_t, uint64_t>>* temps) {
  const Placement& src = e.placement;
  if (src.same_as(target)) return e.handles;
  for (uint32_t w : target.workers)
    if (!pool_.contains(w)) return unavailable("worker {} is gone", w);

  // One point-to-point move of a whole local tensor.
  auto move = [&](uint32_t from, uint64_t h, uint32_t to, const TensorMeta& m) -> uint64_t {
    if (from == to) return h;
    uint64_t tag = pool_.next_comm_tag();
    emit_comm(from, CommId::k_send, make_send(to, tag), std::span<const uint64_t>(&h, 1));
    return emit_comm(to, CommId::k_recv, make_recv(from, tag, m), {});
  };
  // The whole value on worker v (a new handle unless it already is there).
  auto to_single = [&](uint32_t v) -> Result<uint64_t> {
    switch (src.kind) {
      case PlacementKind::kSingle: return move(src.workers[0], e.handles[0], v, e.meta);
      case PlacementKind::kReplicate: {
        int m = src.index_of(v);
        if (m >= 0) return e.handles[static_cast<size_t>(m)];
        return move(src.workers[0], e.handles[0], v, e.meta);
      }
      case PlacementKind::kShard: {
        if (src.workers.size() == 1) return move(src.workers[0], e.handles[0], v, e.meta);
        std::vector<uint64_t> pieces;
        for (size_t m = 0; m < src.workers.size(); ++m) {
          uint64_t h = move(src.workers[m], e.handles[m], v, src.local_meta(e.meta, static_cast<int>(m)));
          if (h != e.handles[m]) temps->emplace_back(v, h);
          pieces.push_back(h);
        }
        return emit_op(v, OpId::k_cat, make_axis(src.axis), pieces);
      }
      case PlacementKind::kPartial: {
        // Sum the addends where the first one is, then move the sum if needed.
        uint32_t at = src.index_of(v) >= 0 ? v : src.workers[0];
        int home = src.index_of(at);
        uint64_t acc = e.handles[static_cast<size_t>(home)];
        for (size_t m = 0; m < src.workers.size(); ++m) {
          if (static_cast<int>(m) == home) continue;
          uint64_t h = move(src.workers[m], e.handles[m], at, e.meta);
          temps->emplace_back(at, h);
          uint64_t in2[2] = {acc, h};
          uint64_t sum = emit_op(at, OpId::k_add, OpAttrs{}, in2);
          if (acc != e.handles[static_cast<size_t>(home)]) temps->emplace_back(at, acc);
          acc = sum;
        }
        if (at == v) return acc;
        temps->emplace_back(at, acc);
        return move(at, acc, v, e.meta);
      }
    }
    return internal_error("bad placement");
  };

  switch (target.kind) {
    case PlacementKind::kSingle: {
      GT_ASSIGN_OR_RETURN(uint64_t h, to_single(target.workers[0]));
      return std::vector<uint64_t>{h};
    }
    case PlacementKind::kReplicate: {
      std::vector<uint64_t> out(target.workers.size());
      if (src.kind == PlacementKind::kPartial && src.workers == target.workers) {
        OpAttrs ar = make_all_reduce(pool_.next_comm_tag(), ReduceKind::kSum, target.workers);
        for (size_t m = 0; m < target.workers.size(); ++m)
          out[m] = emit_comm(target.workers[m], CommId::k_all_reduce, ar,
                             std::span<const uint64_t>(&e.handles[m], 1));
        return out;
      }
      if (src.kind == PlacementKind::kShard && src.workers == target.workers) {
        OpAttrs ag = make_all_gather(pool_.next_comm_tag(), src.axis, src.workers, src.extents);
        for (size_t m = 0; m < target.workers.size(); ++m)
          out[m] = emit_comm(target.workers[m], CommId::k_all_gather, ag,
                             std::span<const uint64_t>(&e.handles[m], 1));
        return out;
      }
      // One whole copy somewhere, then a copy to every member.
      uint32_t w0 = target.workers[0];
      if (src.kind == PlacementKind::kReplicate || src.kind == PlacementKind::kSingle) w0 = src.workers[0];
      GT_ASSIGN_OR_RETURN(uint64_t whole, to_single(w0));
      bool whole_is_temp = true;
      for (uint64_t h : e.handles) whole_is_temp = whole_is_temp && h != whole;
      for (size_t m = 0; m < target.workers.size(); ++m) {
        uint32_t v = target.workers[m];
        int have = src.kind == PlacementKind::kReplicate ? src.index_of(v) : -1;
        out[m] = have >= 0 ? e.handles[static_cast<size_t>(have)] : move(w0, whole, v, e.meta);
      }
      bool used = false;
      for (uint64_t h : out) used = used || h == whole;
      if (whole_is_temp && !used) temps->emplace_back(w0, whole);
      return out;
    }
    case PlacementKind::kShard: {
      std::vector<uint64_t> out(target.workers.size());
      if (src.kind == PlacementKind::kPartial && src.workers == target.workers) {
        OpAttrs rs = make_reduce_scatter(pool_.next_comm_tag(), target.axis, target.workers, target.extents);
        for (size_t m = 0; m < target.workers.size(); ++m)
          out[m] = emit_comm(target.workers[m], CommId::k_reduce_scatter, rs,
                             std::span<const uint64_t>(&e.handles[m], 1));
        return out;
      }
      // Every member slices its piece out of a whole copy it has (a replica), or that is sent.
      bool local = src.kind == PlacementKind::kReplicate;
      for (uint32_t v : target.workers) local = local && src.index_of(v) >= 0;
      if (local) {
        for (size_t m = 0; m < target.workers.size(); ++m) {
          uint64_t h = e.handles[static_cast<size_t>(src.index_of(target.workers[m]))];
          out[m] = emit_op(target.workers[m], OpId::k_slice,
                           piece_attrs(target, e.meta, static_cast<int>(m)), std::span<const uint64_t>(&h, 1));
        }
        return out;
      }
      uint32_t w0 = src.kind == PlacementKind::kSingle ? src.workers[0] : target.workers[0];
      GT_ASSIGN_OR_RETURN(uint64_t whole, to_single(w0));
      bool whole_is_temp = true;
      for (uint64_t h : e.handles) whole_is_temp = whole_is_temp && h != whole;
      for (size_t m = 0; m < target.workers.size(); ++m) {
        TensorMeta pm = target.local_meta(e.meta, static_cast<int>(m));
        uint64_t piece = emit_op(w0, OpId::k_slice, piece_attrs(target, e.meta, static_cast<int>(m)),
                                 std::span<const uint64_t>(&whole, 1));
        out[m] = move(w0, piece, target.workers[m], pm);
        if (out[m] != piece) temps->emplace_back(w0, piece);
      }
      if (whole_is_temp) temps->emplace_back(w0, whole);
      return out;
    }
    case PlacementKind::kPartial:
      break;
  }
  return internal_error("cannot re-place {} as {}", src.str(), target.str());
}

}  // namespace gt::dispatcher
