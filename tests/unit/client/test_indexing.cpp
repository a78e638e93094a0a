// slice / select / index lowering against the fake session.
#include <catch2/catch.hpp>

#include "gt/gt.h"
#include "tests/unit/client/fake_session.h"

using Catch::Matchers::Contains;
using gt::None;
using gt::Slice;
using gt::test::fake;

namespace {

const gt::test::Recorded& instr(size_t k) {
  REQUIRE(fake().instrs.size() > k);
  return fake().instrs[k];
}
std::vector<int64_t> ints_of(const gt::OpAttrs& a) {
  return std::vector<int64_t>(a.ints.begin(), a.ints.begin() + a.n_ints);
}
std::vector<int64_t> dims_of(const gt::Shape& s) { return {s.begin(), s.end()}; }
using V = std::vector<int64_t>;

}  // namespace

TEST_CASE("index({Slice(1, None, 2), 0}) is one slice then one reshape", "[client][index]") {
  fake().reset();
  gt::Tensor x = gt::zeros({5, 4});
  gt::Tensor y = x.index({Slice(1, None, 2), 0});
  REQUIRE(fake().instrs.size() == 3);
  const auto& sl = instr(1);
  CHECK(sl.op == gt::OpId::k_slice);
  CHECK(sl.inputs == std::vector<uint64_t>{x.id()});
  CHECK(dims_of(sl.attrs.shape) == V{2, 1});
  CHECK(ints_of(sl.attrs) == V{1, 2, 0, 1});  // {start, step} per dim
  const auto& rs = instr(2);
  CHECK(rs.op == gt::OpId::k_reshape);
  CHECK(rs.inputs == std::vector<uint64_t>{sl.result});
  CHECK(dims_of(rs.attrs.shape) == V{2});
  CHECK(y.id() == rs.result);
  CHECK(y.sizes() == V{2});
}

TEST_CASE("index: NewAxis, Ellipsis, negative indices and steps", "[client][index]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3, 4});

  gt::Tensor a = x.index({gt::Ellipsis, -1});
  CHECK(a.sizes() == V{2, 3});
  CHECK(instr(1).op == gt::OpId::k_slice);
  CHECK(ints_of(instr(1).attrs) == V{0, 1, 0, 1, 3, 1});
  CHECK(dims_of(instr(1).attrs.shape) == V{2, 3, 1});

  fake().reset();
  gt::Tensor b = x.index({gt::NewAxis, Slice(), gt::Ellipsis, Slice(None, None, -1)});
  CHECK(b.sizes() == V{1, 2, 3, 4});
  REQUIRE(fake().instrs.size() == 2);
  CHECK(ints_of(instr(0).attrs) == V{0, 1, 0, 1, 3, -1});
  CHECK(dims_of(instr(0).attrs.shape) == V{2, 3, 4});
  CHECK(dims_of(instr(1).attrs.shape) == V{1, 2, 3, 4});

  fake().reset();
  gt::Tensor c = x.index({1, "...", Slice(-3, -1)});
  CHECK(c.sizes() == V{3, 2});
  CHECK(ints_of(instr(0).attrs) == V{1, 1, 0, 1, 1, 1});

  fake().reset();
  gt::Tensor d = x.index({Slice(), Slice(10, 20)});  // clamps to an empty dim
  CHECK(d.sizes() == V{2, 0, 4});
  CHECK(fake().instrs.size() == 1);  // same rank: no reshape

  fake().reset();
  gt::Tensor e = x.index({None, gt::Ellipsis, None});
  CHECK(e.sizes() == V{1, 2, 3, 4, 1});
  REQUIRE(fake().instrs.size() == 1);  // identity slice skipped
  CHECK(instr(0).op == gt::OpId::k_reshape);

  fake().reset();
  gt::Tensor f = x.index({Slice(), Slice(None, None, 1), gt::Ellipsis});
  CHECK(f.id() == x.id());  // nothing to do
  CHECK(fake().instrs.empty());
  CHECK(x.index(std::vector<gt::TensorIndex>{}).id() == x.id());
}

TEST_CASE("index errors throw at the call site", "[client][index]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3});
  CHECK_THROWS_WITH(x.index({0, 0, 0}), Contains("too many indices"));
  CHECK_THROWS_WITH(x.index({gt::Ellipsis, gt::Ellipsis}), Contains("ellipsis"));
  CHECK_THROWS_WITH(x.index({2}), Contains("index 2 is out of range"));
  CHECK_THROWS_WITH(x.index({-3}), Contains("out of range"));
  CHECK_THROWS_WITH(x.index({Slice(None, None, 0)}), Contains("step"));
  CHECK_THROWS_AS(x.index({"..x"}), gt::Error);
  CHECK(fake().instrs.size() == 1);
}

TEST_CASE("slice and select", "[client][index]") {
  fake().reset();
  gt::Tensor x = gt::zeros({6, 4});
  gt::Tensor s = x.slice(0, 1, 5, 2);
  CHECK(instr(1).op == gt::OpId::k_slice);
  CHECK(ints_of(instr(1).attrs) == V{1, 2, 0, 1});
  CHECK(s.sizes() == V{2, 4});
  s = x.slice(-1, -3, std::nullopt);
  CHECK(ints_of(instr(2).attrs) == V{0, 1, 1, 1});
  CHECK(s.sizes() == V{6, 3});
  s = x.slice(0, std::nullopt, std::nullopt, -2);
  CHECK(ints_of(instr(3).attrs) == V{5, -2, 0, 1});
  CHECK(s.sizes() == V{3, 4});
  CHECK_THROWS_WITH(x.slice(2, 0, 1), Contains("slice"));
  CHECK_THROWS_WITH(x.slice(0, 0, 1, 0), Contains("slice") && Contains("step"));
  CHECK_THROWS_WITH(gt::scalar_tensor(1).slice(0, 0, 1), Contains("0-dim"));

  fake().reset();
  gt::Tensor r = x.select(1, -1);
  REQUIRE(fake().instrs.size() == 2);
  CHECK(instr(0).op == gt::OpId::k_slice);
  CHECK(ints_of(instr(0).attrs) == V{0, 1, 3, 1});
  CHECK(dims_of(instr(0).attrs.shape) == V{6, 1});
  CHECK(instr(1).op == gt::OpId::k_reshape);
  CHECK(r.sizes() == V{6});
  CHECK_THROWS_WITH(x.select(0, 6), Contains("select") && Contains("out of range"));
  CHECK_THROWS_WITH(x.select(0, -7), Contains("select"));
  CHECK_THROWS_WITH(x.select(2, 0), Contains("select"));
  CHECK(fake().instrs.size() == 2);
}
