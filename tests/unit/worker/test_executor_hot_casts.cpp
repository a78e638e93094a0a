// Casts in fused chains on the CPU worker (workerd/fusion.h): a chain may begin with its head's
// cast to float32 and end with its value's cast to another dtype (mixed precision), converted a
// block at a time with the eager cast's conversion. Each chain runs eagerly and as a HotRun of
// the same instructions; the results must be bitwise equal, and the run must fuse what the
// dtypes allow (the casts included) and no more.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "cpu_rig.h"
#include "executor_test_util.h"
#include "libgtcore/op_attrs.h"

using namespace gt;
using gt::test::bound;
using gt::test::free_here;
using gt::test::hot_run;
using gt::test::local;
using gt::test::op;
using gt::test::path_of;
using Rig = gt::test::CpuRig;

namespace {

struct Step {
  OpId op;
  OpAttrs attrs = {};
  bool operand = false;  // a binary op: the chain's value and the second input
};
OpAttrs scalar(double v) { return make_binary_scalar(ScalarSide::kRight, v, false); }
Step cast_to(DType d) { return Step{OpId::k_cast, make_cast(d)}; }

struct Outcome {
  std::string eager, hot;  // the last result's bytes, each way
  uint64_t fused = 0;      // ops the HotRun fused
};

// The steps as a chain over `x` (each reading the previous result, a binary one `y` too, each
// intermediate freed after its reader): eagerly into handles 200.., then as a HotRun of the
// same instructions into 100...
Outcome both_ways(Rig& r, const std::vector<Step>& steps, uint64_t x, uint64_t y) {
  const uint64_t n = steps.size();
  auto instr = [&](uint64_t k, uint64_t out, uint64_t in, uint64_t other) {
    return steps[k].operand ? op(steps[k].op, out, {in, other}, steps[k].attrs)
                            : op(steps[k].op, out, {in}, steps[k].attrs);
  };
  v1::WorkerBatch eager = r.batch(), tmp;
  for (uint64_t k = 0; k < n; ++k) {
    *eager.add_instrs() = instr(k, 200 + k, k == 0 ? x : 200 + k - 1, y);
    *tmp.add_instrs() = instr(k, 1, k == 0 ? bound(0) : local(k - 1), bound(1));
    if (k > 0) {
      free_here(eager, {200 + k - 1});
      free_here(tmp, {local(k - 1)});
    }
  }
  r.run(std::move(eager));
  const uint64_t fused_before = r.load().fused_ops();
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = path_of(tmp, 9, 2);
  *hot.add_instrs() = hot_run(9, {x, y}, 100);
  hot.set_hot_extra(static_cast<uint32_t>(n + (n - 1) - 1));
  r.run(std::move(hot));
  Outcome o;
  o.fused = r.load().fused_ops() - fused_before;
  o.eager = r.fetch(200 + n - 1).first;
  o.hot = r.fetch(100 + n - 1).first;
  v1::WorkerBatch done = r.batch();
  free_here(done, {200 + n - 1, 100 + n - 1});  // (the next chain takes the same handles)
  r.run(std::move(done));
  return o;
}

// The chain both ways over head `x` (input 2, the bias, as a binary step's operand): no error,
// `fused` ops fused, a result of `bytes` bytes, bitwise eager's.
void expect_fused(Rig& r, const std::vector<Step>& steps, uint64_t x, uint64_t fused,
                  size_t bytes) {
  const Outcome o = both_ways(r, steps, x, 2);
  CHECK(r.out.errors().empty());
  CHECK(o.fused == fused);
  REQUIRE(o.eager.size() == bytes);
  CHECK(o.hot == o.eager);
}

// Inputs: 1 a float32 [rows, cols] of standard-normal values, 2 a float32 bias [cols], 3 the
// values of 1 times 40 as float16 (some of them beyond float16's precision), 4 as int32.
void make_inputs(Rig& r, int64_t rows, int64_t cols) {
  v1::WorkerBatch b = r.batch();
  *b.add_instrs() =
      op(OpId::k_randn, 1, {}, make_random(Shape{rows, cols}, DType::kFloat32, 11, 0));
  *b.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{cols}, DType::kFloat32, 12, 0));
  *b.add_instrs() = op(OpId::k_mul, 5, {1}, scalar(40.0));
  *b.add_instrs() = op(OpId::k_cast, 3, {5}, make_cast(DType::kFloat16));
  *b.add_instrs() = op(OpId::k_cast, 4, {5}, make_cast(DType::kInt32));
  r.run(std::move(b));
}

}  // namespace

TEST_CASE("a chain from a float16 head to a bfloat16 result fuses its casts, bitwise eager's",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, 64, 300);
  // x.float() * 1.5 + bias, relu, .bfloat16(): 5 ops, one pass.
  expect_fused(r,
               {cast_to(DType::kFloat32), Step{OpId::k_mul, scalar(1.5)},
                Step{OpId::k_add, {}, true}, Step{OpId::k_relu}, cast_to(DType::kBFloat16)},
               3, 5, 64 * 300 * 2);  // bfloat16, as eagerly
}

TEST_CASE("an int32 head's cast, a float32 identity cast and a sum tail fuse into one pass",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, 64, 300);
  expect_fused(r,
               {cast_to(DType::kFloat32), Step{OpId::k_mul, scalar(0.25)},
                cast_to(DType::kFloat32), Step{OpId::k_exp},
                Step{OpId::k_sum, make_reduce(kAllDims, false)}},
               4, 5, 4);
}

TEST_CASE("a cast out of float32 ends the fused part: what follows runs one op at a time",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, 64, 300);
  // mul, cast to float64 fused; then neg and exp on float64 one by one.
  expect_fused(r,
               {Step{OpId::k_mul, scalar(3.0)}, cast_to(DType::kFloat64), Step{OpId::k_neg},
                Step{OpId::k_exp}},
               1, 2, 64 * 300 * 8);
  // A float32 head cast to float16 first: the chain's value is float16 from its first op on,
  // and nothing fuses (the float32 kernels do not compute in float16).
  expect_fused(r, {cast_to(DType::kFloat16), Step{OpId::k_mul, scalar(3.0)}}, 1, 0, 64 * 300 * 2);
}

TEST_CASE("casts alone fuse: float16 to float32 to int64, over many of the pool's chunks",
          "[worker][hot]") {
  Rig r;
  make_inputs(r, 700, 1001);  // 700,700 elements: several parts, a partial last block
  expect_fused(r, {cast_to(DType::kFloat32), cast_to(DType::kInt64)}, 3, 2, size_t{700} * 1001 * 8);
  expect_fused(r,
               {cast_to(DType::kFloat32), Step{OpId::k_tanh}, Step{OpId::k_mul, {}, true},
                cast_to(DType::kFloat16)},
               3, 4, size_t{700} * 1001 * 2);
}
