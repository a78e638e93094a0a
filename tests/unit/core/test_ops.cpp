// The op table and dtype helpers generated from ops.def / dtype.h.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "gt/core/dtype.h"
#include "gt/core/ops.h"

using namespace gt;

TEST_CASE("op table: names and wire ids are unique and map back", "[ops]") {
  REQUIRE(kNumOps > 40);
  std::set<std::string> names;
  std::set<uint32_t> wires;
  for (int i = 0; i < kNumOps; ++i) {
    OpId op = static_cast<OpId>(i);
    const OpInfo& info = op_info(op);
    INFO(info.name);
    CHECK(info.id == op);
    CHECK(names.insert(info.name).second);
    CHECK(wires.insert(info.wire_id).second);
    CHECK(info.wire_id > 0);
    CHECK(op_from_wire(info.wire_id) == op);
    CHECK(op_from_name(info.name) == op);
    CHECK(std::string(op_name(op)) == info.name);
    CHECK(is_creation(op) == (info.arity == 0));
  }
  // A few fixed points of the wire format: these numbers never change.
  CHECK(op_wire_id(OpId::k_zeros) == 1);
  CHECK(op_wire_id(OpId::k_add) == 16);
  CHECK(op_wire_id(OpId::k_matmul) == 64);
  CHECK(op_wire_id(OpId::k_cat) == 99);
  CHECK(op_info(OpId::k_cat).arity == -1);
  CHECK(is_in_place(OpId::k_copy_));
  CHECK(is_in_place(OpId::k_host_chunk));
  CHECK(is_in_place(OpId::k_strided_copy_));
  CHECK_FALSE(is_in_place(OpId::k_as_strided));
  CHECK(op_wire_id(OpId::k_as_strided) == 101);
  CHECK(op_wire_id(OpId::k_strided_copy_) == 114);
  CHECK_FALSE(is_in_place(OpId::k_add));
}

TEST_CASE("op table: unknown ids and names", "[ops]") {
  for (uint32_t id : {0u, 9u, 15u, 31u, 1023u, 1024u, 4096u, 0xffffffffu})
    CHECK_FALSE(op_from_wire(id).has_value());
  CHECK_FALSE(op_from_name("").has_value());
  CHECK_FALSE(op_from_name("Add").has_value());
  CHECK_FALSE(op_from_name("softmax").has_value());
}

TEST_CASE("op table hash is stable within a build", "[ops]") {
  CHECK(op_table_hash() == op_table_hash());
  CHECK(op_table_hash() != 0);
  CHECK(op_table_hash() != 1469598103934665603ull);  // not the empty FNV-1a
}

TEST_CASE("dtype names and sizes", "[dtype]") {
  const struct {
    DType d;
    const char* name;
    size_t size;
  } rows[] = {{DType::kFloat32, "float32", 4}, {DType::kFloat16, "float16", 2},
              {DType::kBFloat16, "bfloat16", 2}, {DType::kInt32, "int32", 4},
              {DType::kInt64, "int64", 8}, {DType::kBool, "bool", 1},
              {DType::kFloat64, "float64", 8}, {DType::kInt8, "int8", 1}, {DType::kUInt8, "uint8", 1}};
  for (const auto& r : rows) {
    CHECK(std::string(dtype_name(r.d)) == r.name);
    CHECK(dtype_size(r.d) == r.size);
    CHECK(dtype_from_name(r.name) == r.d);
  }
  CHECK(dtype_from_name("half") == DType::kFloat16);
  CHECK(dtype_from_name("bf16") == DType::kBFloat16);
  CHECK(dtype_from_name("long") == DType::kInt64);
  CHECK(dtype_from_name("double") == DType::kFloat64);
  CHECK_FALSE(dtype_from_name("int16").has_value());
  CHECK(is_valid_dtype(8));
  CHECK_FALSE(is_valid_dtype(9));
  CHECK_FALSE(is_valid_dtype(-1));
  CHECK(sizeof(half) == 2);
  CHECK(sizeof(bfloat16) == 2);
}
