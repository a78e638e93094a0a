// Builds raw wire instructions for protocol tests (what a hostile or buggy client could send).
#pragma once

#include <initializer_list>
#include <string>

#include "libgtcore/instr_codec.h"
#include "proto/gt.pb.h"

namespace gt::testing {

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

}  // namespace gt::testing
