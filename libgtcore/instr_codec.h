// Converts between the wire's gt.v1.Instr and the in-memory (OpId, OpAttrs), validating every
// field that crossed a process boundary (op id, rank, attribute counts, dtype).
#pragma once

#include "libgtcore/comm.h"
#include "libgtcore/op_attrs.h"
#include "gt/core/ops.h"
#include "proto/gt.pb.h"

namespace gt {

struct DecodedInstr {
  OpId op;
  OpAttrs attrs;  // attrs.data views into the Instr: valid while it lives
};

Result<DecodedInstr> decode_instr(const v1::Instr& in);
// Writes op and attributes (not ids) into `out`.
void encode_instr(OpId op, const OpAttrs& attrs, v1::Instr* out);

// Communication instructions (comm.h): `in.comm()` set and `in.op()` zero.
struct DecodedComm {
  CommId comm;
  OpAttrs attrs;
};
Result<DecodedComm> decode_comm_instr(const v1::Instr& in);
void encode_comm_instr(CommId comm, const OpAttrs& attrs, v1::Instr* out);

}  // namespace gt
