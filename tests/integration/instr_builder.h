// Builds raw wire instructions for protocol tests (what a hostile or buggy client could send).
#pragma once

#include <initializer_list>
#include <string>

#include "libgtcore/instr_codec.h"
#include "gt/core/ops.h"
#include "libgtcore/version.h"
#include "proto/gt.pb.h"

namespace gt::testing {

// A worker's Hello (role, versions, op table, secret, a CPU device named `name`).
inline void fill_worker_hello(v1::Hello* h, const std::string& secret, const std::string& name) {
  h->set_proto_major(kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_table_hash());
  h->set_role(v1::ROLE_WORKER);
  h->mutable_credentials()->set_worker_secret(secret);
  h->mutable_worker()->set_device_kind("cpu");
  h->mutable_worker()->set_device_name(name);
}

inline v1::Instr make_instr(OpId op, uint64_t out, std::initializer_list<uint64_t> inputs,
                            const OpAttrs& attrs = {}) {
  v1::Instr in;
  encode_instr(op, attrs, &in);
  in.set_out(out);
  for (uint64_t i : inputs) in.add_inputs(i);
  return in;
}

inline v1::Instr from_floats(uint64_t out, const std::vector<float>& v, Shape shape) {
  OpAttrs a = make_shape_dtype(shape, DType::kFloat32);
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  a.data = bytes;
  return make_instr(OpId::k_from_host, out, {}, a);
}

inline v1::ClientMessage batch_of(std::initializer_list<v1::Instr> instrs) {
  v1::ClientMessage m;
  for (const auto& i : instrs) *m.mutable_batch()->add_instrs() = i;
  return m;
}

inline std::vector<float> floats_of(const v1::Reply& r) {
  const std::string& d = r.tensor().data();
  std::vector<float> v(d.size() / sizeof(float));
  std::memcpy(v.data(), d.data(), v.size() * sizeof(float));
  return v;
}

// `n` matmuls of tensor `src` with itself, results `first_id`, `first_id` + 1, ..., each freed
// right after it is made: a flood of heavy work that holds no memory (fairness tests).
inline v1::ClientMessage matmul_flood(uint64_t src, uint64_t first_id, int n) {
  v1::ClientMessage m;
  for (int i = 0; i < n; ++i) {
    const uint64_t id = first_id + static_cast<uint64_t>(i);
    *m.mutable_batch()->add_instrs() = make_instr(OpId::k_matmul, id, {src, src});
    m.mutable_batch()->add_frees(id);
    m.mutable_batch()->add_free_at(static_cast<uint32_t>(m.batch().instrs_size()));
  }
  return m;
}

}  // namespace gt::testing
