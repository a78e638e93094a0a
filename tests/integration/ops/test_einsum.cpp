// bmm, repeat and einsum (issue 13) through real daemons against host references.
#include <string>
#include <vector>

#include "gt/functional.h"
#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

TEST_CASE("einsum: contractions, transposes, reductions and outer products", "[ops][einsum]") {
  daemons();
  Ref a = rnd({3, 4}, -20, 20, 4, 1), b = rnd({4, 5}, -20, 20, 4, 2);
  Tensor ta = up(a, gt::kFloat32), tb = up(b, gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ij,jk->ik", {ta, tb}), matmul_ref(a, b), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ij,jk", {ta, tb}), matmul_ref(a, b), gt::kFloat32);  // implicit
  CHECK_TENSOR(gt::einsum("ij->ji", {ta}), permute_ref(a, {1, 0}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ij->", {ta}), reduce_ref(a, std::nullopt, false, ref_sum), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ij->i", {ta}), reduce_ref(a, 1, false, ref_sum), gt::kFloat32);
  // ik,jk->ij is a @ c^T; i,j->ij the outer product.
  Ref c = rnd({5, 4}, -20, 20, 4, 3);
  CHECK_TENSOR(gt::einsum("ik,jk->ij", {ta, up(c, gt::kFloat32)}),
               matmul_ref(a, permute_ref(c, {1, 0})), gt::kFloat32);
  Ref u = ref_of({3}, {1, 2, 3}), v = ref_of({2}, {10, -1});
  CHECK_TENSOR(gt::einsum("i,j->ij", {up(u, gt::kFloat32), up(v, gt::kFloat32)}),
               ref_of({3, 2}, {10, -1, 20, -2, 30, -3}), gt::kFloat32);
  // Batched: bij,bjk->bik equals bmm.
  Ref x = rnd({2, 3, 4}, -9, 9, 2, 4), y = rnd({2, 4, 2}, -9, 9, 2, 5);
  Tensor tx = up(x, gt::kFloat32), ty = up(y, gt::kFloat32);
  Tensor want = gt::bmm(tx, ty);
  CHECK(want.allclose(gt::einsum("bij,bjk->bik", {tx, ty})));
  CHECK(want.select(0, 1).allclose(tx.select(0, 1).matmul(ty.select(0, 1))));
  CHECK_THROWS_WITH(gt::einsum("ij,jk->ik", {ta, ta}), Catch::Contains("sizes"));
  // Diagonals, "...", three operands and size-1 broadcasting (host references).
  Tensor sq = up(ref_of({2, 2}, {1, 2, 3, 4}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ii", {sq}), ref_of({}, {5}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ii->i", {sq}), ref_of({2}, {1, 4}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("...j,j->...", {sq, up(ref_of({2}, {1, -1}), gt::kFloat32)}),
               ref_of({2}, {-1, -1}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("i,ij,j->", {up(ref_of({2}, {1, 2}), gt::kFloat32), sq,
                                      up(ref_of({2}, {3, 4}), gt::kFloat32)}),
               ref_of({}, {1 * 1 * 3 + 1 * 2 * 4 + 2 * 3 * 3 + 2 * 4 * 4}), gt::kFloat32);
  CHECK_TENSOR(gt::einsum("ij,ij->ij", {up(ref_of({1, 2}, {1, 2}), gt::kFloat32), sq}),
               ref_of({2, 2}, {1, 4, 3, 8}), gt::kFloat32);
  CHECK_THROWS_WITH(gt::einsum("ii", {gt::zeros({2, 3})}), Catch::Contains("different sizes"));
  CHECK_THROWS_WITH(gt::bmm(ta, tb), Catch::Contains("3-d"));
}

TEST_CASE("repeat tiles whole blocks", "[ops][einsum]") {
  daemons();
  Tensor t = up(ref_of({2, 2}, {1, 2, 3, 4}), gt::kFloat32);
  CHECK_TENSOR(gt::repeat(t, {1, 2}), ref_of({2, 4}, {1, 2, 1, 2, 3, 4, 3, 4}), gt::kFloat32);
  CHECK_TENSOR(gt::repeat(t, {2, 1}), ref_of({4, 2}, {1, 2, 3, 4, 1, 2, 3, 4}), gt::kFloat32);
  CHECK_TENSOR(gt::repeat(up(ref_of({2}, {5, 6}), gt::kInt64), {2, 2}),
               ref_of({2, 4}, {5, 6, 5, 6, 5, 6, 5, 6}), gt::kInt64);
  CHECK_TENSOR(gt::repeat(t, {0, 1}), ref_of({0, 2}, {}), gt::kFloat32);
  CHECK_THROWS_WITH(gt::repeat(t, {2}), Catch::Contains("can not be smaller"));
  CHECK_THROWS_WITH(gt::repeat(t, {-1, 1}), Catch::Contains("negative"));
}
