// Op coverage (every op in ops.def has a test case and a kernel) and run()'s refusal of bad
// arguments: a Status for anything odd, never a crash or an out-of-bounds write.
#include <cblas.h>

#include <cstring>
#include <set>
#include <string>

#include "tests/unit/cpu/cpu_test_util.h"
#include "require_ok.h"

namespace gt::test {
namespace {

TEST_CASE("cpu every op in ops.def has a kernel and a test case", "[cpu][coverage]") {
  std::set<std::string> all;
  CpuBackend be;
  for (int i = 0; i < kNumOps; ++i) {
    auto op = static_cast<OpId>(i);
    all.insert(op_name(op));
    INFO(op_name(op));
    CHECK(be.supports(op));
  }
  std::set<std::string> missing, unknown;
  for (const auto& o : all)
    if (!claimed_ops().count(o)) missing.insert(o);
  for (const auto& o : claimed_ops())
    if (!all.count(o)) unknown.insert(o);
  for (const auto& o : missing) UNSCOPED_INFO("no test case for op " << o);
  for (const auto& o : unknown) UNSCOPED_INFO("test claims unknown op " << o);
  CHECK(claimed_ops() == all);
}

TEST_CASE("cpu device description", "[cpu][backend]") {
  CpuBackend be;
  CHECK(be.device_kind() == "cpu");
  CHECK(be.device_name().find("CPU") != std::string::npos);
  CHECK(be.device_name().find("OpenBLAS") != std::string::npos);
  // and which of OpenBLAS's kernel sets it loaded (GEMM speed depends on it)
  CHECK(be.device_name().find(std::string("OpenBLAS ") + openblas_get_corename()) != std::string::npos);
  CHECK(be.memory_bytes() > (uint64_t{64} << 20));
  worker::CpuBackendOptions o;
  o.max_memory_bytes = 12345678;
  o.blas_threads = 1;
  CHECK(CpuBackend(o).memory_bytes() == 12345678);
  GT_CHECK_OK(be.synchronize(1));
}

TEST_CASE("cpu run() rejects inconsistent arguments with a status", "[cpu][backend]") {
  CpuBackend be;
  Tensor a = make_tensor(be, Shape{2, 3}, DType::kFloat32, {1, 2, 3, 4, 5, 6});
  Tensor b = make_tensor(be, Shape{3}, DType::kFloat32, {1, 1, 1});
  OpAttrs none;
  auto run = [&](OpId op, std::vector<const Tensor*> ins, Tensor& out, const OpAttrs& at) {
    worker::KernelArgs args{op, at, ins, out, 0};
    return be.run(args);
  };
  auto alloc = [&](size_t bytes) { return *be.alloc(bytes); };

  // A correct call works.
  Tensor ok{TensorMeta{Shape{2, 3}, DType::kFloat32}, alloc(24), nullptr};
  GT_REQUIRE_OK(run(OpId::k_add, {&a, &b}, ok, none));
  CHECK(to_doubles(be, ok) == std::vector<double>{2, 3, 4, 5, 6, 7});

  // Output storage smaller than its meta.
  Tensor small{TensorMeta{Shape{2, 3}, DType::kFloat32}, alloc(20), nullptr};
  CHECK(run(OpId::k_add, {&a, &b}, small, none).code() == Code::kInvalidArgument);
  // Output meta not what the op gives (shape, then dtype).
  Tensor wrong_shape{TensorMeta{Shape{6}, DType::kFloat32}, alloc(24), nullptr};
  CHECK_FALSE(run(OpId::k_add, {&a, &b}, wrong_shape, none).is_ok());
  Tensor wrong_dt{TensorMeta{Shape{2, 3}, DType::kInt32}, alloc(24), nullptr};
  CHECK_FALSE(run(OpId::k_add, {&a, &b}, wrong_dt, none).is_ok());
  // Input storage smaller than its meta claims.
  Tensor liar{TensorMeta{Shape{100}, DType::kFloat32}, a.storage, nullptr};
  Tensor big_out{TensorMeta{Shape{100}, DType::kFloat32}, alloc(400), nullptr};
  CHECK_FALSE(run(OpId::k_neg, {&liar}, big_out, none).is_ok());
  // Missing storage, missing input, wrong arity, shapes that do not broadcast.
  Tensor nostore{TensorMeta{Shape{3}, DType::kFloat32}, nullptr, nullptr};
  Tensor out3{TensorMeta{Shape{3}, DType::kFloat32}, alloc(12), nullptr};
  CHECK_FALSE(run(OpId::k_neg, {&nostore}, out3, none).is_ok());
  CHECK_FALSE(run(OpId::k_neg, {nullptr}, out3, none).is_ok());
  CHECK_FALSE(run(OpId::k_add, {&b, &b, &b}, out3, none).is_ok());
  CHECK_FALSE(run(OpId::k_where, {&b}, out3, none).is_ok());
  Tensor c4 = make_tensor(be, Shape{4}, DType::kFloat32, {1, 2, 3, 4});
  CHECK_FALSE(run(OpId::k_add, {&b, &c4}, out3, none).is_ok());
  // Bad attributes: permutation, slice beyond the end, negative reduce dim out of range.
  Tensor out6{TensorMeta{Shape{3, 2}, DType::kFloat32}, alloc(24), nullptr};
  OpAttrs perm;
  perm.push_int(0);
  perm.push_int(0);
  CHECK_FALSE(run(OpId::k_permute, {&a}, out6, perm).is_ok());
  OpAttrs sl;
  sl.has_shape = true;
  sl.shape = Shape{3};
  sl.push_int(1);
  sl.push_int(1);
  CHECK_FALSE(run(OpId::k_slice, {&b}, out3, sl).is_ok());
  CHECK_FALSE(run(OpId::k_sum, {&a}, out3, make_reduce(-3, false)).is_ok());
  // An op id outside the table.
  CHECK_FALSE(run(static_cast<OpId>(kNumOps + 5), {&a}, out3, none).is_ok());
  // In-place ops must write their first input.
  Tensor other = make_tensor(be, Shape{3}, DType::kFloat32, {0, 0, 0});
  CHECK_FALSE(run(OpId::k_copy_, {&other, &b}, out3, none).is_ok());

  // Nothing above wrote into a or b, and the backend still works.
  CHECK(to_doubles(be, a) == std::vector<double>{1, 2, 3, 4, 5, 6});
  CHECK(to_doubles(be, b) == std::vector<double>{1, 1, 1});
  GT_REQUIRE_OK(run(OpId::k_add, {&a, &b}, ok, none));
}

TEST_CASE("cpu copy_to_host checks bounds", "[cpu][backend]") {
  CpuBackend be;
  Tensor a = make_tensor(be, Shape{4}, DType::kInt32, {1, 2, 3, 4});
  int32_t buf[4] = {};
  GT_CHECK_OK(be.copy_to_host(a, 4, buf, 8, 0));
  CHECK(buf[0] == 2);
  CHECK(buf[1] == 3);
  GT_CHECK_OK(be.copy_to_host(a, 16, buf, 0, 0));
  CHECK_FALSE(be.copy_to_host(a, 12, buf, 8, 0).is_ok());
  CHECK_FALSE(be.copy_to_host(a, 17, buf, 0, 0).is_ok());
  CHECK_FALSE(be.copy_to_host(a, SIZE_MAX - 2, buf, 4, 0).is_ok());
  Tensor none{TensorMeta{Shape{4}, DType::kInt32}, nullptr, nullptr};
  CHECK_FALSE(be.copy_to_host(none, 0, buf, 4, 0).is_ok());
}

}  // namespace
}  // namespace gt::test
