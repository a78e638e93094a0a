// copy_ on a synchronous device (workerd/executor.cpp, shares_copy): a copy of a value of the
// destination's own shape and dtype shares the source's bytes copy-on-write instead of copying
// them. Tensors keep value semantics: a later in-place write to either side leaves the other
// as it was, freeing the source leaves the destination its bytes, and a copy_ that broadcasts
// or converts still copies.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "cpu_rig.h"
#include "executor_test_util.h"

using namespace gt;
using gt::test::CpuRig;
using gt::test::free_here;
using gt::test::op;

namespace {

constexpr int64_t kN = 1 << 16;  // 256 KiB of float32: one allocator block each

// filled(h, v): h = zeros(kN) + v
void filled(v1::WorkerBatch& b, uint64_t h, uint64_t tmp, double v) {
  *b.add_instrs() = op(OpId::k_zeros, tmp, {}, make_shape_dtype(Shape{kN}, DType::kFloat32));
  *b.add_instrs() = op(OpId::k_add, h, {tmp}, make_binary_scalar(ScalarSide::kRight, v, false));
  free_here(b, {tmp});
}

std::vector<float> floats(const std::string& bytes) {
  std::vector<float> v(bytes.size() / sizeof(float));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(float));
  return v;
}

bool all_equal(const std::string& bytes, float want, size_t n = kN) {
  const std::vector<float> v = floats(bytes);
  if (v.size() != n) return false;
  for (float x : v)
    if (x != want) return false;
  return true;
}

}  // namespace

TEST_CASE("copy_ of the same shape and dtype shares the bytes, and values stay apart",
          "[worker][copy]") {
  CpuRig r;
  v1::WorkerBatch b = r.batch();
  filled(b, 1, 100, 1.0);  // the destination
  filled(b, 2, 101, 5.0);  // the source
  r.run(b);
  const uint64_t two = r.backend.stats().allocated_bytes;

  v1::WorkerBatch c = r.batch();
  *c.add_instrs() = op(OpId::k_copy_, 0, {1, 2});
  r.run(c);
  CHECK(r.out.errors().empty());
  // The destination's old bytes went back; both handles read the source's.
  CHECK(r.backend.stats().allocated_bytes == two / 2);
  CHECK(all_equal(r.fetch(1).first, 5.0f));
  CHECK(all_equal(r.fetch(2).first, 5.0f));

  SECTION("a later in-place write to the source leaves the destination as it was") {
    v1::WorkerBatch d = r.batch();
    filled(d, 3, 102, 7.0);
    *d.add_instrs() = op(OpId::k_copy_, 0, {2, 3});  // shares 3's bytes: 1 keeps 5s
    *d.add_instrs() = op(OpId::k_copy_, 0, {3, 1});  // broadcasts nothing, shares again
    r.run(d);
    CHECK(all_equal(r.fetch(1).first, 5.0f));
    CHECK(all_equal(r.fetch(2).first, 7.0f));
    CHECK(all_equal(r.fetch(3).first, 5.0f));
  }
  SECTION("an in-place write that is no plain copy unshares first (copy-on-write)") {
    // copy_ from a one-element tensor broadcasts: a real copy into a private block for 2.
    v1::WorkerBatch d = r.batch();
    *d.add_instrs() = op(OpId::k_full, 3, {}, make_full(Shape{1}, DType::kFloat32, 9.0));
    *d.add_instrs() = op(OpId::k_copy_, 0, {2, 3});
    r.run(d);
    CHECK(all_equal(r.fetch(2).first, 9.0f));
    CHECK(all_equal(r.fetch(1).first, 5.0f));  // the destination of the earlier copy_
    CHECK(r.backend.stats().allocated_bytes > two / 2);  // 1 and 2 hold a block each again
  }
  SECTION("freeing the source leaves the destination its value and one block") {
    v1::WorkerBatch d = r.batch();
    free_here(d, {2});
    r.run(d);
    CHECK(r.ex.tensor_count() == 1);
    CHECK(r.backend.stats().allocated_bytes == two / 2);
    CHECK(all_equal(r.fetch(1).first, 5.0f));
  }
}

TEST_CASE("copy_ that converts its dtype still copies, into the destination's dtype",
          "[worker][copy]") {
  CpuRig r;
  v1::WorkerBatch b = r.batch();
  filled(b, 1, 100, 1.0);
  *b.add_instrs() = op(OpId::k_full, 2, {}, make_full(Shape{kN}, DType::kInt32, 3.0));
  *b.add_instrs() = op(OpId::k_copy_, 0, {1, 2});
  r.run(b);
  CHECK(r.out.errors().empty());
  CHECK(all_equal(r.fetch(1).first, 3.0f));  // float32 3.0, not int32 bytes
}
