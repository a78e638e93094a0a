#include "gt/core/ops.h"

#include <string>
#include <unordered_map>

#include "gt/core/fnv.h"

namespace gt {
namespace {

constexpr std::array<OpInfo, kNumOps> kOps = {{
#define GT_OP(name, wire, arity, attrs, rule) \
  {OpId::k_##name, #name, wire, arity, AttrKind::attrs, ShapeRule::rule},
#include "gt/core/ops.def"
#undef GT_OP
}};

constexpr uint32_t kMaxWireId = 1024;

struct WireIndex {
  std::array<int16_t, kMaxWireId> to_op;
  WireIndex() {
    to_op.fill(-1);
    for (const auto& o : kOps) to_op[o.wire_id] = static_cast<int16_t>(o.id);
  }
};

const WireIndex& wire_index() {
  static const WireIndex idx;
  return idx;
}

// Wire ids must be unique and small: checked once at compile time.
constexpr bool wire_ids_valid() {
  for (size_t i = 0; i < kOps.size(); ++i) {
    if (kOps[i].wire_id == 0 || kOps[i].wire_id >= kMaxWireId) return false;
    if (static_cast<size_t>(kOps[i].id) != i) return false;
    for (size_t j = i + 1; j < kOps.size(); ++j)
      if (kOps[i].wire_id == kOps[j].wire_id) return false;
  }
  return true;
}
static_assert(wire_ids_valid(), "ops.def: wire ids must be unique, non-zero and < 1024");

}  // namespace

const OpInfo& op_info(OpId op) { return kOps[static_cast<size_t>(op)]; }

std::optional<OpId> op_from_wire(uint32_t wire_id) {
  if (wire_id >= kMaxWireId) return std::nullopt;
  int16_t v = wire_index().to_op[wire_id];
  if (v < 0) return std::nullopt;
  return static_cast<OpId>(v);
}

std::optional<OpId> op_from_name(std::string_view name) {
  for (const auto& o : kOps)
    if (name == o.name) return o.id;
  return std::nullopt;
}

uint64_t op_table_hash() {
  static const uint64_t h = [] {
    uint64_t x = kFnvOffset;
    auto mix = [&](const std::string& s) { x = fnv1a(s, x); };
    for (const auto& o : kOps)
      mix(std::string(o.name) + ":" + std::to_string(o.wire_id) + ":" + std::to_string(o.arity) +
          ":" + std::to_string(static_cast<int>(o.attrs)) + ":" +
          std::to_string(static_cast<int>(o.rule)) + ";");
    return x;
  }();
  return h;
}

bool is_creation(OpId op) { return op_info(op).arity == 0; }
bool is_in_place(OpId op) {
  const ShapeRule r = op_info(op).rule;
  return r == ShapeRule::kInPlace || r == ShapeRule::kCopyInto || r == ShapeRule::kStridedInto;
}

}  // namespace gt
