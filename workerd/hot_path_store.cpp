// Hot-path definitions on the worker: checking them, and finding their fusable chains, the
// transposes their matmuls can fold in, and their graph segments.
#include "workerd/hot_path_store.h"

#include <algorithm>

#include "libgtcore/comm.h"
#include "workerd/kernels/op_traits.h"

namespace gt::worker {
namespace {

// Chains: consecutive fusable instructions (casts among them where the device fuses them),
// each (but the first) reading the previous one's result exactly once, that result read by
// nothing else and freed inside the path; and the reduction that may end one (its tail,
// fusion.h). Which dtypes a run's tensors have decides how much of a chain fuses (the executor).
void find_chains(HotPathDef& d, bool casts) {
  const size_t n = d.instrs.size();
  std::vector<uint32_t> uses(n, 0);
  for (uint64_t r : d.refs)
    if ((r & 1) == 0) ++uses[r >> 1];
  d.decoded.assign(n, std::nullopt);
  auto fusable = [&](size_t k) {
    const v1::Instr& in = d.instrs[k];
    if (d.result[k] < 0) return false;
    auto dec = decode_instr(in);
    if (!dec.is_ok() || !(fusable_op(dec->op) || (casts && dec->op == OpId::k_cast))) return false;
    const uint32_t arity = d.ref_begin[k + 1] - d.ref_begin[k];
    if (is_unary_elementwise(dec->op) || dec->op == OpId::k_cast ? arity != 1
                                                                 : arity != 1 && arity != 2)
      return false;
    d.decoded[k] = std::move(*dec);
    return true;
  };
  // k continues the chain ending at k - 1.
  auto links = [&](size_t k) {
    const uint64_t prev = static_cast<uint64_t>(k - 1) << 1;
    if (uses[k - 1] != 1 || !d.freed[k - 1]) return false;
    for (uint32_t i = d.ref_begin[k]; i < d.ref_begin[k + 1]; ++i)
      if (d.refs[i] == prev) return true;
    return false;
  };
  // e ends the chain as its tail: a sum or mean of the chain's last result alone.
  auto tail = [&](size_t e) {
    if (e >= n || d.result[e] < 0 || d.ref_begin[e + 1] - d.ref_begin[e] != 1 || !links(e))
      return false;
    auto dec = decode_instr(d.instrs[e]);
    if (!dec.is_ok() || !tail_op(dec->op)) return false;
    d.decoded[e] = std::move(*dec);
    return true;
  };
  d.chain_at.assign(n, -1);
  size_t k = 0;
  while (k < n) {
    if (!fusable(k)) {
      ++k;
      continue;
    }
    size_t e = k + 1;
    while (e < n && links(e) && fusable(e)) ++e;
    const bool with_tail = tail(e);
    if (with_tail) ++e;
    if (e - k >= 2) {
      d.chain_at[k] = static_cast<int32_t>(d.chains.size());
      d.chains.push_back(
          FusedChain{static_cast<uint32_t>(k), static_cast<uint32_t>(e), with_tail});
    }
    k = e;
  }
}

// Transposes folded into matmuls (fusion.h, TransposeFold).
void find_folds(HotPathDef& d) {
  const size_t n = d.instrs.size();
  std::vector<uint32_t> uses(n, 0);
  std::vector<int64_t> freed_at(n, -1);
  for (size_t k = 0; k < n; ++k)
    for (uint32_t i = d.ref_begin[k]; i < d.ref_begin[k + 1]; ++i)
      if ((d.refs[i] & 1) == 0) ++uses[d.refs[i] >> 1];
  for (const HotPathDef::Free& f : d.frees) freed_at[f.instr] = f.at;
  auto op_of = [&](size_t k) { return op_from_wire(d.instrs[k].op()); };
  // k is a 2-D transpose (permute [1, 0]) of one input with a result.
  auto transpose = [&](size_t k) {
    if (op_of(k) != OpId::k_permute || d.result[k] < 0 || d.ref_begin[k + 1] - d.ref_begin[k] != 1)
      return false;
    auto dec = decode_instr(d.instrs[k]);
    return dec.is_ok() && dec->attrs.n_ints == 2 && dec->attrs.ints[0] == 1 && dec->attrs.ints[1] == 0;
  };
  d.fold_at.assign(n, HotPathDef::kNoFold);
  for (size_t m = 0; m < n; ++m) {
    if (op_of(m) != OpId::k_matmul || d.result[m] < 0 || d.ref_begin[m + 1] - d.ref_begin[m] != 2)
      continue;
    TransposeFold f;
    f.matmul = static_cast<uint32_t>(m);
    for (int side = 0; side < 2; ++side) {
      const uint64_t r = d.refs[d.ref_begin[m] + side];
      if (r & 1) continue;
      const size_t p = r >> 1;
      // Read by this matmul alone (once), freed inside the path, and the permute's input is
      // still its value at the matmul: not freed before it, nothing in between writes in place.
      if (!transpose(p) || uses[p] != 1 || freed_at[p] <= static_cast<int64_t>(m) ||
          d.fold_at[p] != HotPathDef::kNoFold)
        continue;
      const uint64_t src = d.refs[d.ref_begin[p]];
      if ((src & 1) == 0 && freed_at[src >> 1] >= 0 && static_cast<size_t>(freed_at[src >> 1]) <= m)
        continue;
      bool written = false;
      for (size_t j = p + 1; j < m && !written; ++j) written = d.result[j] < 0;
      if (written) continue;
      (side == 0 ? f.a_from : f.b_from) = static_cast<int32_t>(p);
    }
    if (f.a_from < 0 && f.b_from < 0) continue;
    for (int32_t p : {f.a_from, f.b_from})
      if (p >= 0) d.fold_at[static_cast<size_t>(p)] = HotPathDef::kFoldedOperand;
    d.fold_at[m] = static_cast<int32_t>(d.folds.size());
    d.folds.push_back(f);
  }
}

// Graph segments: maximal runs of at least two instructions without an upload whose ops the
// device can record, with the frees inside them of results they make (d.frees is built).
void find_segments(HotPathDef& d, const std::function<bool(OpId)>& capturable) {
  const size_t n = d.instrs.size();
  d.segment_at.assign(n, -1);
  auto recordable = [&](size_t k) {
    if (d.upload[k] >= 0 || d.tag_int[k] >= 0) return false;  // (no exchange in a graph)
    auto op = op_from_wire(d.instrs[k].op());
    return op && capturable(*op);
  };
  auto cut = [&](size_t e) { return std::binary_search(d.cuts.begin(), d.cuts.end(), e); };
  size_t k = 0;
  while (k < n) {
    size_t e = k;
    while (e < n && recordable(e) && (e == k || !cut(e))) ++e;
    if (e - k >= 2) {
      d.segment_at[k] = static_cast<int32_t>(d.segments.size());
      HotPathDef::GraphSegment seg{static_cast<uint32_t>(k), static_cast<uint32_t>(e), nullptr, {}};
      for (const HotPathDef::Free& f : d.frees)
        if (f.at > k && f.at < e && f.instr >= k) seg.frees.push_back(f);
      d.segments.push_back(std::move(seg));
    }
    k = e == k ? k + 1 : e;
  }
}

Status check_and_build(const v1::HotPath& p, HotPathDef& d) {
  const size_t n = static_cast<size_t>(p.instrs_size());
  if (n == 0) return invalid_argument("hot path {} has no instructions", p.id());
  d.instrs.assign(p.instrs().begin(), p.instrs().end());
  d.bindings = p.bindings();
  d.result.assign(n, -1);
  d.upload.assign(n, -1);
  d.ref_begin.assign(1, 0);
  d.tag_int.assign(n, -1);
  d.tag_offset.assign(n, 0);
  for (size_t k = 0; k < n; ++k) {
    v1::Instr& in = d.instrs[k];
    const bool comm = in.op() == 0 && in.comm() != 0;
    if ((in.op() == 0) == (in.comm() == 0) || in.has_signal() || in.has_config() || in.has_hot() ||
        !in.data().empty() || in.has_shm() || in.out() > 1)
      return invalid_argument("hot path {}: instruction {} is neither an op nor a communication",
                              p.id(), k);
    if (comm) {  // a sharded path's exchange: its tag is relative to the run's tag_base
      const auto c = comm_from_wire(in.comm());
      if (!c || (in.out() == 1) == (*c == CommId::k_send) || in.ints_size() <= comm_tag_int(*c))
        return invalid_argument("hot path {}: instruction {} is not a valid communication",
                                p.id(), k);
      d.tag_int[k] = comm_tag_int(*c);
      d.tag_offset[k] = static_cast<uint64_t>(in.ints(d.tag_int[k]));
    }
    if (in.out() == 1) {
      d.result[k] = d.results++;
      d.result_instr.push_back(static_cast<uint32_t>(k));
    } else {
      d.writes.push_back(static_cast<uint32_t>(k));
    }
    d.has_comm = d.has_comm || comm;
    for (uint64_t r : in.inputs()) {
      const bool bound = (r & 1) != 0;
      const uint64_t i = r >> 1;
      if (bound ? i >= d.bindings : (i >= k || d.result[i] < 0))
        return invalid_argument("hot path {}: instruction {} reads an undefined reference {}",
                                p.id(), k, r);
      d.refs.push_back(r);
    }
    d.ref_begin.push_back(static_cast<uint32_t>(d.refs.size()));
  }
  for (int u = 0; u < p.uploads_size(); ++u) {
    const uint32_t k = p.uploads(u);
    if (k >= n || d.upload[k] >= 0 || (u > 0 && k <= p.uploads(u - 1)))
      return invalid_argument("hot path {}: bad upload list", p.id());
    d.upload[k] = u;
  }
  d.uploads = static_cast<uint32_t>(p.uploads_size());
  if (p.frees_size() != p.free_at_size())
    return invalid_argument("hot path {}: {} frees with {} positions", p.id(), p.frees_size(),
                            p.free_at_size());
  d.freed.assign(n, 0);
  for (int i = 0; i < p.frees_size(); ++i) {
    const uint32_t k = p.frees(i), at = p.free_at(i);
    // A result is freed once, after the instruction that makes it, in stream order.
    if (k >= n || d.result[k] < 0 || d.freed[k] || at <= k || at > n ||
        (i > 0 && at < p.free_at(i - 1)))
      return invalid_argument("hot path {}: bad free {} of instruction {} at {}", p.id(), i, k, at);
    d.freed[k] = 1;
    d.frees.push_back(HotPathDef::Free{at, k});
  }
  return Status::ok();
}

}  // namespace

Status HotPathStore::define(uint64_t session, const v1::HotPath& p, const HotPathDevice& device) {
  SessionPaths& s = sessions_[session];
  forget(session, p.id());
  const size_t n = static_cast<size_t>(p.instrs_size());
  if (s.paths.size() >= kMaxPathsPerSession || s.instructions + n > kMaxInstructionsPerSession)
    return resource_exhausted("session {} holds too many hot paths ({} paths, {} instructions)",
                              session, s.paths.size(), s.instructions);
  HotPathDef d;
  GT_RETURN_IF_ERROR(check_and_build(p, d));
  if (device.fuse) find_chains(d, device.fuse_casts);
  if (device.fold_transposes) find_folds(d);
  if (device.capturable) find_segments(d, device.capturable);
  s.instructions += n;
  s.paths.emplace(p.id(), std::move(d));
  ++paths_;
  return Status::ok();
}

HotPathDef* HotPathStore::find(uint64_t session, uint64_t id) {
  auto s = sessions_.find(session);
  if (s == sessions_.end()) return nullptr;
  auto it = s->second.paths.find(id);
  return it == s->second.paths.end() ? nullptr : &it->second;
}

void HotPathStore::forget(uint64_t session, uint64_t id) {
  auto s = sessions_.find(session);
  if (s == sessions_.end()) return;
  auto it = s->second.paths.find(id);
  if (it == s->second.paths.end()) return;
  s->second.instructions -= it->second.instrs.size();
  drop_graphs(it->second);
  s->second.paths.erase(it);
  --paths_;
}

bool HotPathStore::cut_segments(HotPathDef& d, uint32_t at,
                                const std::function<bool(OpId)>& capturable) {
  const bool spanned = std::any_of(d.segments.begin(), d.segments.end(),
                                   [&](const auto& s) { return s.begin < at && at < s.end; });
  if (!spanned || d.cuts.size() >= HotPathDef::kMaxCuts) return false;
  // (Not a cut already: no segment spans one.)
  d.cuts.insert(std::lower_bound(d.cuts.begin(), d.cuts.end(), at), at);
  drop_graphs(d);
  d.segments.clear();
  find_segments(d, capturable);
  return true;
}

void HotPathStore::drop_session(uint64_t session) {
  auto s = sessions_.find(session);
  if (s == sessions_.end()) return;
  paths_ -= s->second.paths.size();
  for (auto& [id, d] : s->second.paths) drop_graphs(d);
  sessions_.erase(s);
}

void HotPathStore::clear() {
  for (auto& [session, s] : sessions_)
    for (auto& [id, d] : s.paths) drop_graphs(d);
  sessions_.clear();
  paths_ = 0;
}

void HotPathStore::drop_graphs(HotPathDef& d) {
  for (HotPathDef::GraphSegment& g : d.segments) {
    if (g.graph != nullptr && drop_graph_) drop_graph_(g.graph);
    g.graph = nullptr;
  }
}

}  // namespace gt::worker
