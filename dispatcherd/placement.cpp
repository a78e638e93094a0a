#include "dispatcherd/placement.h"

#include <fmt/format.h>

#include <algorithm>

namespace gt::dispatcher {

Placement Placement::shard(int axis, std::vector<uint32_t> ws, int64_t extent) {
  Placement p{PlacementKind::kShard, std::move(ws), axis, {}};
  int64_t n = static_cast<int64_t>(p.workers.size());
  for (int64_t i = 0; i < n; ++i) p.extents.push_back(extent / n + (i < extent % n ? 1 : 0));
  return p;
}

int Placement::index_of(uint32_t w) const {
  auto it = std::find(workers.begin(), workers.end(), w);
  return it == workers.end() ? -1 : static_cast<int>(it - workers.begin());
}

int64_t Placement::offset_of(int member) const {
  int64_t off = 0;
  for (int i = 0; i < member; ++i) off += extents[static_cast<size_t>(i)];
  return off;
}

TensorMeta Placement::local_meta(const TensorMeta& m, int member) const {
  TensorMeta l = m;
  if (kind == PlacementKind::kShard) l.shape[axis] = extents[static_cast<size_t>(member)];
  return l;
}

bool Placement::same_as(const Placement& o) const {
  if (kind != o.kind || workers != o.workers) return false;
  if (kind == PlacementKind::kShard) return axis == o.axis && extents == o.extents;
  return true;
}

std::string Placement::str() const {
  switch (kind) {
    case PlacementKind::kSingle: return fmt::format("Single({})", workers.empty() ? -1 : int(workers[0]));
    case PlacementKind::kShard:
      return fmt::format("Shard({}, [{}], [{}])", axis, fmt::join(workers, " "), fmt::join(extents, " "));
    case PlacementKind::kReplicate: return fmt::format("Replicate([{}])", fmt::join(workers, " "));
    case PlacementKind::kPartial: return fmt::format("Partial([{}], sum)", fmt::join(workers, " "));
  }
  return "?";
}

}  // namespace gt::dispatcher
