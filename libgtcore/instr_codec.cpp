#include "libgtcore/instr_codec.h"

namespace gt {
namespace {

bool takes_shape(AttrKind k) {
  switch (k) {
    case AttrKind::kShapeDType:
    case AttrKind::kFull:
    case AttrKind::kRandom:
    case AttrKind::kHostData:
    case AttrKind::kShape:
    case AttrKind::kSlice:
    case AttrKind::kStrided: return true;
    default: return false;
  }
}

}  // namespace

Result<DecodedInstr> decode_instr(const v1::Instr& in) {
  if (in.comm() != 0) return invalid_argument("communication instruction where an op was expected");
  auto op = op_from_wire(in.op());
  if (!op) return invalid_argument("unknown op id {}", in.op());
  DecodedInstr d{*op, {}};
  OpAttrs& a = d.attrs;
  const OpInfo& info = op_info(*op);
  if (in.shape_size() > kMaxRank)
    return invalid_argument("{}: rank {} exceeds the maximum of {}", info.name, in.shape_size(),
                            kMaxRank);
  if (takes_shape(info.attrs)) {
    for (int64_t v : in.shape()) {
      if (v < 0) return invalid_argument("{}: negative dimension {}", info.name, v);
      a.shape.push_back(v);
    }
    a.has_shape = true;
  } else if (in.shape_size() != 0) {
    return invalid_argument("{}: unexpected shape attribute", info.name);
  }
  if (!is_valid_dtype(in.dtype())) return invalid_argument("{}: invalid dtype {}", info.name,
                                                           static_cast<int>(in.dtype()));
  a.dtype = static_cast<DType>(in.dtype());
  if (in.ints_size() > kMaxInts)
    return invalid_argument("{}: {} integer attributes, at most {}", info.name, in.ints_size(),
                            kMaxInts);
  for (int64_t v : in.ints()) a.push_int(v);
  if (in.reals_size() > kMaxReals)
    return invalid_argument("{}: {} real attributes, at most {}", info.name, in.reals_size(),
                            kMaxReals);
  for (double v : in.reals()) a.push_real(v);
  const bool takes_data = info.attrs == AttrKind::kHostData || info.attrs == AttrKind::kHostChunk;
  if (!in.data().empty() && !takes_data)
    return invalid_argument("{}: unexpected data payload", info.name);
  // A payload in shared memory (Instr.shm) stands for `data`: the receiver points a.data at it.
  if (in.has_shm() && (!takes_data || !in.data().empty()))
    return invalid_argument("{}: unexpected shared-memory payload", info.name);
  a.data = in.data();
  return d;
}

void encode_instr(OpId op, const OpAttrs& a, v1::Instr* out) {
  out->set_op(op_wire_id(op));
  if (a.has_shape)
    for (int64_t v : a.shape) out->add_shape(v);
  out->set_dtype(static_cast<v1::DType>(a.dtype));
  for (int i = 0; i < a.n_ints; ++i) out->add_ints(a.ints[i]);
  for (int i = 0; i < a.n_reals; ++i) out->add_reals(a.reals[i]);
  if (!a.data.empty()) out->set_data(a.data.data(), a.data.size());
}

Result<DecodedComm> decode_comm_instr(const v1::Instr& in) {
  auto c = comm_from_wire(in.comm());
  if (!c || in.op() != 0) return invalid_argument("unknown communication instruction {}", in.comm());
  DecodedComm d{*c, {}};
  OpAttrs& a = d.attrs;
  const char* name = comm_name(*c);
  if (in.shape_size() > kMaxRank) return invalid_argument("{}: rank too large", name);
  if (*c == CommId::k_recv) {
    for (int64_t v : in.shape()) {
      if (v < 0) return invalid_argument("{}: negative dimension {}", name, v);
      a.shape.push_back(v);
    }
    a.has_shape = true;
  } else if (in.shape_size() != 0) {
    return invalid_argument("{}: unexpected shape attribute", name);
  }
  if (!is_valid_dtype(in.dtype())) return invalid_argument("{}: invalid dtype", name);
  a.dtype = static_cast<DType>(in.dtype());
  if (in.ints_size() > kMaxInts) return invalid_argument("{}: too many attributes", name);
  for (int64_t v : in.ints()) a.push_int(v);
  if (in.reals_size() != 0 || !in.data().empty())
    return invalid_argument("{}: unexpected attributes", name);
  return d;
}

void encode_comm_instr(CommId comm, const OpAttrs& a, v1::Instr* out) {
  out->set_op(0);
  out->set_comm(comm_wire_id(comm));
  if (a.has_shape)
    for (int64_t v : a.shape) out->add_shape(v);
  out->set_dtype(static_cast<v1::DType>(a.dtype));
  for (int i = 0; i < a.n_ints; ++i) out->add_ints(a.ints[i]);
}

}  // namespace gt
