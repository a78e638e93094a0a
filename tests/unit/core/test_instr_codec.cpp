// instr_codec: (OpId, OpAttrs) <-> gt.v1.Instr, and refusal of every malformed field.
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "libgtcore/instr_codec.h"
#include "libgtcore/shape_rules.h"
#include "require_ok.h"

using namespace gt;

namespace {

void check_same(const OpAttrs& a, const OpAttrs& b) {
  CHECK(a.has_shape == b.has_shape);
  if (a.has_shape) CHECK(a.shape.str() == b.shape.str());
  CHECK(a.dtype == b.dtype);
  REQUIRE(a.n_ints == b.n_ints);
  for (int i = 0; i < a.n_ints; ++i) CHECK(a.ints[i] == b.ints[i]);
  REQUIRE(a.n_reals == b.n_reals);
  for (int i = 0; i < a.n_reals; ++i) CHECK(a.reals[i] == b.reals[i]);
  CHECK(a.data == b.data);
}

// A valid zeros instruction to corrupt one field at a time.
v1::Instr zeros_instr() {
  v1::Instr in;
  encode_instr(OpId::k_zeros, make_shape_dtype({2, 3}, DType::kFloat32), &in);
  return in;
}

void expect_refused(const v1::Instr& in, const std::string& needle) {
  auto r = decode_instr(in);
  REQUIRE_FALSE(r.is_ok());
  INFO(r.status().to_string());
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains(needle));
}

}  // namespace

TEST_CASE("encode/decode round trip", "[instr_codec]") {
  static const std::string payload("\x01\x02\x00\x03 bytes", 10);
  struct C {
    OpId op;
    OpAttrs attrs;
  };
  std::vector<int64_t> p = {2, 0, 1};
  OpAttrs host = make_shape_dtype({2, 2}, DType::kBFloat16);
  host.data = std::string_view(payload).substr(0, 8);
  OpAttrs chunk;
  chunk.push_int(8);
  chunk.data = payload;
  OpAttrs sl;
  sl.shape = Shape{3, 2};
  sl.has_shape = true;
  for (int64_t v : {1, 2, 5, -2}) sl.push_int(v);
  const int64_t view_strides[] = {-3, 0, std::numeric_limits<int64_t>::min()};
  OpAttrs view = make_strided({2, 4, 1}, view_strides, 7);
  std::vector<C> cases = {
      {OpId::k_zeros, make_shape_dtype({2, 3}, DType::kInt64)},
      {OpId::k_zeros, make_shape_dtype({}, DType::kFloat32)},  // 0-d: has_shape, no dims
      {OpId::k_full, make_full({4}, DType::kFloat16, -1.5)},
      {OpId::k_arange, make_arange(0.5, 10, 0.25, DType::kFloat32)},
      {OpId::k_randn, make_random({1, 2, 3, 4, 5, 6, 7, 8}, DType::kFloat32, ~0ull, 1ull << 40)},
      {OpId::k_from_host, host},
      {OpId::k_host_chunk, chunk},
      {OpId::k_add, {}},
      {OpId::k_mul, make_binary_scalar(ScalarSide::kLeft, 3.25, false)},
      {OpId::k_sum, make_reduce(kAllDims, true)},
      {OpId::k_max, make_reduce(-1, false)},
      {OpId::k_reshape, make_reshape({6, 1})},
      {OpId::k_permute, make_permute(p)},
      {OpId::k_slice, sl},
      {OpId::k_as_strided, view},
      {OpId::k_strided_copy_, view},
      {OpId::k_cat, make_axis(-1)},
      {OpId::k_cast, make_cast(DType::kBool)},
  };
  for (const auto& c : cases) {
    INFO(op_name(c.op));
    v1::Instr in;
    encode_instr(c.op, c.attrs, &in);
    CHECK(in.op() == op_wire_id(c.op));
    // Through the wire: serialize in a batch frame and parse it back.
    v1::ClientMessage msg;
    *msg.mutable_batch()->add_instrs() = in;
    std::string frame;
    GT_REQUIRE_OK(append_frame(&frame, msg));
    v1::ClientMessage back;
    GT_REQUIRE_OK(parse_frame(std::string_view(frame).substr(4), &back));
    auto d = decode_instr(back.batch().instrs(0));
    INFO(d.status().to_string());
    GT_REQUIRE_OK(d);
    CHECK(d->op == c.op);
    check_same(d->attrs, c.attrs);
  }
}

TEST_CASE("every op's wire id decodes to that op", "[instr_codec]") {
  for (int i = 0; i < kNumOps; ++i) {
    OpId op = static_cast<OpId>(i);
    v1::Instr in;
    in.set_op(op_wire_id(op));
    auto d = decode_instr(in);
    INFO(op_name(op));
    GT_REQUIRE_OK(d);
    CHECK(d->op == op);
  }
}

TEST_CASE("decode refuses unknown op ids", "[instr_codec]") {
  for (uint32_t id : {0u, 9u, 15u, 1023u, 1024u, 65536u, 0xffffffffu}) {
    v1::Instr in = zeros_instr();
    in.set_op(id);
    INFO("op id " << id);
    expect_refused(in, "unknown op id");
  }
}

TEST_CASE("decode refuses bad shapes", "[instr_codec]") {
  v1::Instr in = zeros_instr();
  in.clear_shape();
  for (int i = 0; i < 9; ++i) in.add_shape(1);
  expect_refused(in, "rank 9");
  in.clear_shape();
  for (int i = 0; i < 8; ++i) in.add_shape(1);
  GT_CHECK_OK(decode_instr(in));  // rank 8 is the maximum

  in = zeros_instr();
  in.set_shape(1, -3);
  expect_refused(in, "negative dimension -3");

  v1::Instr add;
  add.set_op(op_wire_id(OpId::k_add));
  add.add_shape(2);
  expect_refused(add, "unexpected shape");
}

TEST_CASE("decode refuses too many attributes", "[instr_codec]") {
  v1::Instr in;
  in.set_op(op_wire_id(OpId::k_permute));
  for (int i = 0; i < kMaxInts; ++i) in.add_ints(i);
  GT_CHECK_OK(decode_instr(in));
  in.add_ints(0);
  expect_refused(in, "integer attributes");

  v1::Instr ar;
  encode_instr(OpId::k_arange, make_arange(0, 1, 1, DType::kFloat32), &ar);
  ar.add_reals(0);
  GT_CHECK_OK(decode_instr(ar));  // 4 reals
  ar.add_reals(0);
  expect_refused(ar, "real attributes");
}

TEST_CASE("decode refuses invalid dtypes and stray data", "[instr_codec]") {
  for (int dt : {9, 10, 100, -1}) {
    v1::Instr in = zeros_instr();
    in.set_dtype(static_cast<v1::DType>(dt));
    // The proto3 enum is open: the value survives serialization.
    v1::Instr back;
    REQUIRE(back.ParseFromString(in.SerializeAsString()));
    INFO("dtype " << dt);
    expect_refused(back, "invalid dtype");
  }
  v1::Instr in = zeros_instr();
  in.set_data("xyz");
  expect_refused(in, "unexpected data");
}

TEST_CASE("decoded attributes are re-checked by the shape rules", "[instr_codec]") {
  // The codec validates structure; semantics are infer_meta's job (the worker runs both).
  v1::Instr in;
  encode_instr(OpId::k_reshape, make_reshape({5}), &in);
  auto d = decode_instr(in);
  GT_REQUIRE_OK(d);
  std::vector<TensorMeta> x = {TensorMeta{Shape{2, 3}, DType::kFloat32}};
  CHECK_FALSE(infer_meta(d->op, x, d->attrs).is_ok());
}
