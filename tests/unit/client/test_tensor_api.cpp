// Tensor API against the fake session: call-site errors, emitted instructions, handle lifetime,
// host upload chunking and fetch conversions.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>

#include "gt/gt.h"
#include "tests/unit/client/fake_session.h"

using Catch::Matchers::Contains;
using gt::test::fake;

namespace {

const gt::test::Recorded& last() {
  REQUIRE(!fake().instrs.empty());
  return fake().instrs.back();
}

std::vector<int64_t> ints_of(const gt::OpAttrs& a) {
  return std::vector<int64_t>(a.ints.begin(), a.ints.begin() + a.n_ints);
}
std::vector<double> reals_of(const gt::OpAttrs& a) {
  return std::vector<double>(a.reals.begin(), a.reals.begin() + a.n_reals);
}
std::vector<int64_t> dims_of(const gt::Shape& s) { return {s.begin(), s.end()}; }

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  std::string b(v.size() * sizeof(T), '\0');
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

}  // namespace

TEST_CASE("factories emit creation ops with the right attrs", "[client]") {
  fake().reset();
  gt::Tensor z = gt::zeros({2, 3});
  CHECK(last().op == gt::OpId::k_zeros);
  CHECK(last().inputs.empty());
  CHECK(dims_of(last().attrs.shape) == std::vector<int64_t>{2, 3});
  CHECK(last().attrs.dtype == gt::kFloat32);
  CHECK(z.id() == last().result);
  CHECK(z.sizes() == std::vector<int64_t>{2, 3});
  CHECK(z.dim() == 2);
  CHECK(z.numel() == 6);
  CHECK(z.size(-1) == 3);
  CHECK(z.dtype() == gt::kFloat32);

  gt::Tensor o = gt::ones(std::vector<int64_t>{4}, gt::kInt32);
  CHECK(last().op == gt::OpId::k_ones);
  CHECK(o.dtype() == gt::kInt32);
  CHECK(o.shape() == gt::Shape{4});

  gt::Tensor f = gt::full({2}, 2.5);
  CHECK(last().op == gt::OpId::k_full);
  CHECK(reals_of(last().attrs) == std::vector<double>{2.5});
  CHECK(f.dtype() == gt::kFloat32);
  CHECK(gt::full({2}, 7).dtype() == gt::kInt64);
  CHECK(gt::full({2}, true).dtype() == gt::kBool);
  CHECK(gt::full({2}, 7, gt::kFloat16).dtype() == gt::kFloat16);

  gt::Tensor s = gt::scalar_tensor(3);
  CHECK(s.dim() == 0);
  CHECK(s.dtype() == gt::kFloat32);
  CHECK(reals_of(last().attrs) == std::vector<double>{3});
}

TEST_CASE("matmul carries the float32 precision set when it is issued", "[client]") {
  fake().reset();
  gt::Tensor a = gt::zeros({2, 3}), b = gt::zeros({3, 4});
  CHECK(gt::get_float32_matmul_precision() == "highest");
  (void)a.matmul(b);
  CHECK(last().op == gt::OpId::k_matmul);
  CHECK(ints_of(last().attrs).empty());  // the default travels as no attribute at all
  gt::set_float32_matmul_precision("high");
  CHECK(gt::get_float32_matmul_precision() == "high");
  (void)gt::matmul(a, b);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{1});
  gt::set_float32_matmul_precision("medium");
  (void)a.matmul(b);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{2});
  // Anything else throws and changes nothing.
  CHECK_THROWS_WITH(gt::set_float32_matmul_precision("fast"), Catch::Contains("'fast'"));
  CHECK(gt::get_float32_matmul_precision() == "medium");
  gt::set_float32_matmul_precision("highest");
  (void)a.matmul(b);
  CHECK(ints_of(last().attrs).empty());
}

TEST_CASE("arange picks int64 for integer arguments and float32 otherwise", "[client]") {
  fake().reset();
  gt::Tensor a = gt::arange(5);
  CHECK(last().op == gt::OpId::k_arange);
  CHECK(reals_of(last().attrs) == std::vector<double>{0, 5, 1});
  CHECK(a.dtype() == gt::kInt64);
  CHECK(a.sizes() == std::vector<int64_t>{5});

  gt::Tensor b = gt::arange(0.0, 1.0, 0.25);
  CHECK(reals_of(last().attrs) == std::vector<double>{0, 1, 0.25});
  CHECK(b.dtype() == gt::kFloat32);
  CHECK(b.sizes() == std::vector<int64_t>{4});

  CHECK(gt::arange(2, 10, 3).sizes() == std::vector<int64_t>{3});
  CHECK(gt::arange(0, 10, gt::kFloat32).dtype() == gt::kFloat32);
  CHECK(gt::arange(int64_t{4}, gt::kInt32).dtype() == gt::kInt32);
  CHECK_THROWS_WITH(gt::arange(0, 10, 0), Contains("arange"));
}

TEST_CASE("random ops take the session seed and a fresh counter", "[client]") {
  fake().reset();
  gt::manual_seed(99);
  gt::Tensor a = gt::randn({3});
  CHECK(last().op == gt::OpId::k_randn);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{99, 0});
  gt::Tensor b = gt::rand({3}, gt::kBFloat16);
  CHECK(last().op == gt::OpId::k_rand);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{99, 1});
  CHECK(b.dtype() == gt::kBFloat16);
  // A rejected call consumes no counter.
  size_t n = fake().instrs.size();
  CHECK_THROWS_WITH(gt::randn({3}, gt::kInt64), Contains("randn"));
  CHECK(fake().instrs.size() == n);
  gt::randn({1});
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{99, 2});
}

TEST_CASE("shape errors throw at the call site naming the op, and emit nothing", "[client]") {
  fake().reset();
  gt::Tensor a = gt::zeros({2, 3});
  gt::Tensor b = gt::zeros({4});
  gt::Tensor big = gt::zeros({3, 3});
  size_t n = fake().instrs.size();
  CHECK_THROWS_AS(a + b, gt::Error);
  CHECK_THROWS_WITH(a + b, Contains("add") && Contains("broadcast"));
  CHECK_THROWS_WITH(a * b, Contains("mul"));
  CHECK_THROWS_WITH(a.matmul(a), Contains("matmul"));
  CHECK_THROWS_WITH(gt::matmul(a, b), Contains("matmul"));
  CHECK_THROWS_WITH(a.sum(2), Contains("sum"));
  CHECK_THROWS_WITH(a.permute({0, 0}), Contains("permute"));
  CHECK_THROWS_WITH(a.permute({0}), Contains("permute"));
  CHECK_THROWS_WITH(a.transpose(0, 5), Contains("transpose"));
  CHECK_THROWS_WITH(gt::cat({a, b}, 0), Contains("cat"));
  CHECK_THROWS_WITH(gt::cat({}, 0), Contains("cat"));
  CHECK_THROWS_WITH(gt::where(a, a, a), Contains("where"));
  CHECK_THROWS_WITH(a.copy_(big), Contains("copy_"));
  CHECK_THROWS_WITH(gt::zeros({-1}), Contains("zeros"));
  CHECK_THROWS_WITH(gt::zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}), Contains("zeros") && Contains("rank"));
  CHECK_THROWS_WITH(a.t().t().unsqueeze(3), Contains("unsqueeze"));
  n += 2;  // the two t() above succeeded
  CHECK(fake().instrs.size() == n);
}

TEST_CASE("an undefined tensor throws on use", "[client]") {
  fake().reset();
  gt::Tensor u;
  CHECK_FALSE(u.defined());
  CHECK_THROWS_AS(u.id(), gt::Error);
  CHECK_THROWS_AS(u.shape(), gt::Error);
  CHECK_THROWS_AS(u.exp(), gt::Error);
  CHECK_THROWS_AS(u + 1, gt::Error);
  gt::Tensor a = gt::zeros({2});
  CHECK_THROWS_WITH(a + u, Contains("add") && Contains("undefined"));
  std::ostringstream os;
  os << u;
  CHECK(os.str() == "[ Tensor (undefined) ]");
}

TEST_CASE("binary ops: tensor-tensor and scalar forms on either side", "[client]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3});
  gt::Tensor y = gt::ones({3});

  gt::Tensor s = x + y;
  CHECK(last().op == gt::OpId::k_add);
  CHECK(last().inputs == std::vector<uint64_t>{x.id(), y.id()});
  CHECK(last().attrs.n_ints == 0);
  CHECK(s.sizes() == std::vector<int64_t>{2, 3});

  gt::Tensor r = x + 2;
  CHECK(last().op == gt::OpId::k_add);
  CHECK(last().inputs == std::vector<uint64_t>{x.id()});
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kRight);
  CHECK(last().attrs.scalar_is_integral());
  CHECK(last().attrs.scalar() == 2);
  CHECK(r.dtype() == gt::kFloat32);

  gt::Tensor l = 2.5 * x;
  CHECK(last().op == gt::OpId::k_mul);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kLeft);
  CHECK_FALSE(last().attrs.scalar_is_integral());
  CHECK(last().attrs.scalar() == 2.5);

  gt::Tensor d = 1 - x;
  CHECK(last().op == gt::OpId::k_sub);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kLeft);
  d = x / int64_t{4};
  CHECK(last().op == gt::OpId::k_div);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kRight);
  CHECK(last().attrs.scalar_is_integral());
  d = 1.0f / x;
  CHECK(last().op == gt::OpId::k_div);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kLeft);

  // Integrality decides promotion.
  gt::Tensor i = gt::arange(6);
  CHECK((i + 2).dtype() == gt::kInt64);
  CHECK((i + 2.0).dtype() == gt::kFloat32);
  CHECK((i / 2).dtype() == gt::kFloat32);
  CHECK((i * i).dtype() == gt::kInt64);

  gt::Tensor n = -x;
  CHECK(last().op == gt::OpId::k_neg);
  CHECK(last().inputs == std::vector<uint64_t>{x.id()});

  gt::pow(x, 2);
  CHECK(last().op == gt::OpId::k_pow);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kRight);
  gt::pow(2, x);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kLeft);
  x.pow(y);
  CHECK(last().inputs == std::vector<uint64_t>{x.id(), y.id()});
  gt::maximum(x, y);
  CHECK(last().op == gt::OpId::k_maximum);
  gt::minimum(x, 0);
  CHECK(last().op == gt::OpId::k_minimum);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kRight);
}

TEST_CASE("comparisons return bool tensors", "[client]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2});
  gt::Tensor y = gt::ones({2});
  std::vector<std::pair<gt::Tensor, gt::OpId>> cases;
  cases.emplace_back(x == y, gt::OpId::k_eq);
  cases.emplace_back(x != y, gt::OpId::k_ne);
  cases.emplace_back(x < y, gt::OpId::k_lt);
  cases.emplace_back(x <= y, gt::OpId::k_le);
  cases.emplace_back(x > y, gt::OpId::k_gt);
  cases.emplace_back(x >= y, gt::OpId::k_ge);
  cases.emplace_back(gt::eq(x, y), gt::OpId::k_eq);
  cases.emplace_back(gt::gt(x, y), gt::OpId::k_gt);
  cases.emplace_back(x.le(y), gt::OpId::k_le);
  for (size_t k = 0; k < cases.size(); ++k) {
    CHECK(cases[k].first.dtype() == gt::kBool);
    CHECK(fake().instrs[2 + k].op == cases[k].second);
    CHECK(fake().instrs[2 + k].inputs == std::vector<uint64_t>{x.id(), y.id()});
  }
  gt::Tensor c = x < 3;
  CHECK(last().op == gt::OpId::k_lt);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kRight);
  c = 3 < x;
  CHECK(last().op == gt::OpId::k_lt);
  CHECK(last().attrs.scalar_side() == gt::ScalarSide::kLeft);
  c = x == 0.5;
  CHECK(last().op == gt::OpId::k_eq);
  CHECK(c.dtype() == gt::kBool);
}

TEST_CASE("unary, matmul, where and reductions", "[client]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3});
  gt::Tensor w = gt::zeros({3, 4});
  CHECK(x.matmul(w).sizes() == std::vector<int64_t>{2, 4});
  CHECK(last().op == gt::OpId::k_matmul);
  CHECK(last().inputs == std::vector<uint64_t>{x.id(), w.id()});
  CHECK(gt::matmul(x, w).sizes() == std::vector<int64_t>{2, 4});

  const std::vector<std::pair<gt::Tensor (gt::Tensor::*)() const, gt::OpId>> unary = {
      {&gt::Tensor::exp, gt::OpId::k_exp},         {&gt::Tensor::log, gt::OpId::k_log},
      {&gt::Tensor::sqrt, gt::OpId::k_sqrt},       {&gt::Tensor::abs, gt::OpId::k_abs},
      {&gt::Tensor::relu, gt::OpId::k_relu},       {&gt::Tensor::sigmoid, gt::OpId::k_sigmoid},
      {&gt::Tensor::tanh, gt::OpId::k_tanh},       {&gt::Tensor::neg, gt::OpId::k_neg}};
  for (auto [fn, op] : unary) {
    gt::Tensor r = (x.*fn)();
    CHECK(last().op == op);
    CHECK(r.sizes() == x.sizes());
  }
  gt::exp(x);
  CHECK(last().op == gt::OpId::k_exp);
  gt::sigmoid(x);
  CHECK(last().op == gt::OpId::k_sigmoid);
  CHECK(gt::arange(3).exp().dtype() == gt::kFloat32);

  gt::Tensor cond = x > 0;
  gt::Tensor r = gt::where(cond, x, gt::ones({3}));
  CHECK(last().op == gt::OpId::k_where);
  CHECK(last().inputs.size() == 3);
  CHECK(last().inputs[0] == cond.id());
  CHECK(r.sizes() == std::vector<int64_t>{2, 3});
  size_t n = fake().instrs.size();
  r = gt::where(cond, x, 0.0);
  REQUIRE(fake().instrs.size() == n + 2);
  const auto& fill = fake().instrs[n];
  CHECK(fill.op == gt::OpId::k_full);
  CHECK(fill.attrs.shape.rank() == 0);
  CHECK(fill.attrs.dtype == gt::kFloat32);
  CHECK(last().op == gt::OpId::k_where);
  CHECK(last().inputs == std::vector<uint64_t>{cond.id(), x.id(), fill.result});
  CHECK(gt::where(cond, 1, 0).dtype() == gt::kInt64);
  CHECK(gt::where(cond, 1, 0.5).dtype() == gt::kFloat32);
  CHECK(gt::where(cond, gt::arange(3).to(gt::kInt32), 7).dtype() == gt::kInt32);

  gt::Tensor s = x.sum();
  CHECK(last().op == gt::OpId::k_sum);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{gt::kAllDims, 0});
  CHECK(s.dim() == 0);
  s = x.sum(-1, true);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{1, 1});
  CHECK(s.sizes() == std::vector<int64_t>{2, 1});
  s = x.mean(0);
  CHECK(last().op == gt::OpId::k_mean);
  CHECK(s.sizes() == std::vector<int64_t>{3});
  CHECK(x.max().dim() == 0);
  CHECK(last().op == gt::OpId::k_max);
  auto [mins, at] = x.min(1);  // (values, indices): a min and an argmin instruction
  CHECK(mins.sizes() == std::vector<int64_t>{2});
  CHECK(at.dtype() == gt::kInt64);
  CHECK(last().op == gt::OpId::k_argmin);
  s = x.argmax(1);
  CHECK(last().op == gt::OpId::k_argmax);
  CHECK(s.dtype() == gt::kInt64);
  CHECK(gt::argmin(x).dtype() == gt::kInt64);
  CHECK(last().op == gt::OpId::k_argmin);
  CHECK(gt::sum(gt::arange(4)).dtype() == gt::kInt64);
}

TEST_CASE("reshape resolves -1 on the client", "[client]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3, 4});
  gt::Tensor r = x.reshape({-1, 4});
  CHECK(last().op == gt::OpId::k_reshape);
  CHECK(dims_of(last().attrs.shape) == std::vector<int64_t>{6, 4});
  CHECK(r.sizes() == std::vector<int64_t>{6, 4});
  CHECK(x.view({4, -1}).sizes() == std::vector<int64_t>{4, 6});
  CHECK(x.reshape({-1}).sizes() == std::vector<int64_t>{24});
  CHECK(x.flatten().sizes() == std::vector<int64_t>{24});
  CHECK(gt::reshape(x, gt::Shape{24}).sizes() == std::vector<int64_t>{24});
  CHECK_THROWS_WITH(x.reshape({-1, -1}), Contains("reshape") && Contains("one dimension"));
  CHECK_THROWS_WITH(x.reshape({5, -1}),
                    Contains("reshape") && Contains("invalid for input of size 24"));
  CHECK_THROWS_WITH(x.reshape({0, -1}), Contains("reshape"));
  CHECK_THROWS_WITH(x.reshape({-2, 12}), Contains("reshape"));
  CHECK_THROWS_WITH(x.reshape({5, 5}), Contains("reshape"));
  CHECK_THROWS_WITH(gt::zeros({0, 3}).reshape({0, -1}), Contains("ambiguous"));
  CHECK(gt::zeros({0, 3}).reshape({-1, 3}).sizes() == std::vector<int64_t>{0, 3});
}

TEST_CASE("permute / transpose / t / unsqueeze / squeeze", "[client]") {
  fake().reset();
  gt::Tensor x = gt::zeros({2, 3, 4});
  gt::Tensor p = x.permute({-1, 0, 1});
  CHECK(last().op == gt::OpId::k_permute);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{2, 0, 1});
  CHECK(p.sizes() == std::vector<int64_t>{4, 2, 3});

  gt::Tensor t = x.transpose(0, -1);
  CHECK(last().op == gt::OpId::k_permute);
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{2, 1, 0});
  CHECK(t.sizes() == std::vector<int64_t>{4, 3, 2});
  CHECK(gt::transpose(x, 1, 2).sizes() == std::vector<int64_t>{2, 4, 3});

  gt::Tensor m = gt::zeros({2, 5});
  CHECK(m.t().sizes() == std::vector<int64_t>{5, 2});
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{1, 0});
  CHECK(gt::zeros({5}).t().sizes() == std::vector<int64_t>{5});
  CHECK_THROWS_WITH(x.t(), Contains("t:"));

  gt::Tensor u = x.unsqueeze(1);
  CHECK(last().op == gt::OpId::k_reshape);
  CHECK(u.sizes() == std::vector<int64_t>{2, 1, 3, 4});
  CHECK(x.unsqueeze(-1).sizes() == std::vector<int64_t>{2, 3, 4, 1});
  CHECK(x.unsqueeze(3).sizes() == std::vector<int64_t>{2, 3, 4, 1});
  CHECK(x.unsqueeze(0).sizes() == std::vector<int64_t>{1, 2, 3, 4});
  CHECK_THROWS_WITH(x.unsqueeze(5), Contains("unsqueeze"));

  gt::Tensor q = gt::zeros({1, 3, 1});
  CHECK(q.squeeze().sizes() == std::vector<int64_t>{3});
  CHECK(last().op == gt::OpId::k_reshape);
  CHECK(q.squeeze(-1).sizes() == std::vector<int64_t>{1, 3});
  CHECK(q.squeeze(1).sizes() == std::vector<int64_t>{1, 3, 1});
  CHECK(gt::zeros({1, 1}).squeeze().dim() == 0);

  CHECK(x.contiguous().id() == x.id());
}

TEST_CASE("cat, casts and copy_", "[client]") {
  fake().reset();
  gt::Tensor a = gt::zeros({2, 3});
  gt::Tensor b = gt::zeros({4, 3});
  gt::Tensor c = gt::cat({a, b}, -2);
  CHECK(last().op == gt::OpId::k_cat);
  CHECK(last().inputs == std::vector<uint64_t>{a.id(), b.id()});
  CHECK(ints_of(last().attrs) == std::vector<int64_t>{0});
  CHECK(c.sizes() == std::vector<int64_t>{6, 3});

  size_t n = fake().instrs.size();
  CHECK(a.to(gt::kFloat32).id() == a.id());
  CHECK(fake().instrs.size() == n);
  gt::Tensor h = a.to(gt::kFloat16);
  CHECK(last().op == gt::OpId::k_cast);
  CHECK(last().attrs.dtype == gt::kFloat16);
  CHECK(h.dtype() == gt::kFloat16);
  CHECK(a.cast(gt::kFloat32).id() != a.id());
  CHECK(last().op == gt::OpId::k_cast);

  gt::Tensor src = gt::ones({3}, gt::kInt64);
  const gt::Tensor& r = a.copy_(src);
  CHECK(&r == &a);
  CHECK(last().op == gt::OpId::k_copy_);
  CHECK(last().inputs == std::vector<uint64_t>{a.id(), src.id()});
  CHECK(last().result == 0);
  CHECK(a.dtype() == gt::kFloat32);
}

TEST_CASE("from_vector uploads converted bytes", "[client]") {
  fake().reset();
  gt::Tensor f = gt::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, -1});
  CHECK(last().op == gt::OpId::k_from_host);
  CHECK(dims_of(last().attrs.shape) == std::vector<int64_t>{2, 3});
  CHECK(last().attrs.dtype == gt::kFloat32);
  CHECK(last().data == bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6}));
  CHECK(f.sizes() == std::vector<int64_t>{2, 3});

  gt::Tensor d = gt::from_vector(std::vector<double>{0.5, -1});
  CHECK(d.dtype() == gt::kFloat32);
  CHECK(d.sizes() == std::vector<int64_t>{2});
  CHECK(last().data == bytes_of(std::vector<float>{0.5f, -1.f}));

  CHECK(gt::from_vector(std::vector<int32_t>{1, 2}).dtype() == gt::kInt32);
  CHECK(last().data == bytes_of(std::vector<int32_t>{1, 2}));
  CHECK(gt::from_vector(std::vector<int64_t>{1, 2}).dtype() == gt::kInt64);
  CHECK(last().data == bytes_of(std::vector<int64_t>{1, 2}));
  CHECK(gt::from_vector(std::vector<bool>{true, false, true}).dtype() == gt::kBool);
  CHECK(last().data == std::string("\x01\x00\x01", 3));
  CHECK(gt::from_vector(std::vector<gt::Half>{gt::Half(1.5f)}).dtype() == gt::kFloat16);
  CHECK(gt::from_vector(std::vector<float>{1.5f, -2.f}, gt::kFloat16).dtype() == gt::kFloat16);
  CHECK(last().data == bytes_of(std::vector<uint16_t>{0x3e00, 0xc000}));
  CHECK(gt::from_vector(std::vector<float>{1.7f, -2.2f}, {2}, gt::kInt64).dtype() == gt::kInt64);
  CHECK(last().data == bytes_of(std::vector<int64_t>{1, -2}));
  CHECK(gt::from_vector(std::vector<float>{}, {0, 3}).sizes() == std::vector<int64_t>{0, 3});
  CHECK(last().data.empty());

  size_t n = fake().instrs.size();
  CHECK_THROWS_WITH(gt::from_vector(std::vector<float>{1, 2, 3}, {2, 2}), Contains("from_vector"));
  CHECK_THROWS_WITH(gt::from_vector(std::vector<float>{1, 2, 3}, {2, -1}), Contains("from_vector"));
  CHECK_THROWS_WITH(gt::from_vector(std::vector<float>{1, 2}, {-1, -1}), Contains("from_vector"));
  CHECK(fake().instrs.size() == n);
}

TEST_CASE("from_vector splits payloads above 4 MiB into host_chunk instructions", "[client]") {
  fake().reset();
  const size_t kChunk = size_t{4} << 20;
  const size_t n = (2 * kChunk + 12345 * 4) / 4;  // two full chunks and a partial one
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
  gt::Tensor t = gt::from_vector(values);
  REQUIRE(fake().instrs.size() == 3);
  const auto& head = fake().instrs[0];
  CHECK(head.op == gt::OpId::k_from_host);
  CHECK(head.data.size() == kChunk);
  CHECK(dims_of(head.attrs.shape) == std::vector<int64_t>{static_cast<int64_t>(n)});
  CHECK(head.result == t.id());
  std::string all = head.data;
  for (size_t k = 1; k < 3; ++k) {
    const auto& c = fake().instrs[k];
    CHECK(c.op == gt::OpId::k_host_chunk);
    CHECK(c.inputs == std::vector<uint64_t>{t.id()});
    CHECK(c.result == 0);
    CHECK(ints_of(c.attrs) == std::vector<int64_t>{static_cast<int64_t>(k * kChunk)});
    all += c.data;
  }
  CHECK(fake().instrs[1].data.size() == kChunk);
  CHECK(fake().instrs[2].data.size() == 12345 * 4);
  CHECK(all == bytes_of(values));

  // Exactly 4 MiB: a single from_host.
  fake().reset();
  gt::Tensor e = gt::from_vector(std::vector<float>(kChunk / 4, 1.f));
  CHECK(fake().instrs.size() == 1);
}

TEST_CASE("to_vector and item fetch and convert", "[client]") {
  fake().reset();
  gt::Tensor i = gt::arange(4);
  fake().fetch_bytes[i.id()] = bytes_of(std::vector<int64_t>{0, 1, -2, 3});
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{0, 1, -2, 3});
  CHECK(i.to_vector<float>() == std::vector<float>{0, 1, -2, 3});
  CHECK(i.to_vector<bool>() == std::vector<bool>{false, true, true, true});
  CHECK_THROWS_WITH(i.item<int64_t>(), Contains("4 elements"));

  gt::Tensor h = gt::zeros({1, 1}, gt::kFloat16);
  fake().fetch_bytes[h.id()] = bytes_of(std::vector<uint16_t>{0x3e00});
  CHECK(h.item<float>() == 1.5f);
  CHECK(h.item<int>() == 1);
  CHECK(static_cast<float>(h.item<gt::BFloat16>()) == 1.5f);

  gt::Tensor b = gt::zeros({2}, gt::kBool);
  fake().fetch_bytes[b.id()] = std::string("\x00\x01", 2);
  CHECK(b.to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(b.to_vector<double>() == std::vector<double>{0, 1});

  gt::Tensor f = gt::zeros({3});
  fake().fetch_bytes[f.id()] = bytes_of(std::vector<float>{1.9f, -1.9f, std::nanf("")});
  CHECK(f.to_vector<int32_t>() == std::vector<int32_t>{1, -1, 0});

  gt::Tensor bad = gt::zeros({2});
  fake().fetch_bytes[bad.id()] = "xyz";
  CHECK_THROWS_AS(bad.to_vector<float>(), gt::Error);

  std::ostringstream os;
  os << i;
  CHECK(os.str() == "tensor([ 0,  1, -2,  3], dtype=gt.int64)");
}

TEST_CASE("handles free their id exactly once, when the last copy dies", "[client]") {
  fake().reset();
  uint64_t id = 0;
  {
    gt::Tensor a = gt::zeros({2});
    id = a.id();
    {
      gt::Tensor b = a;
      gt::Tensor c = std::move(b);
      gt::Tensor d;
      d = c;
    }
    CHECK(fake().frees.empty());
  }
  CHECK(fake().frees == std::vector<uint64_t>{id});

  // Temporaries are freed too.
  fake().reset();
  gt::Tensor x = gt::zeros({2});
  gt::Tensor y = (x + 1) * 2;  // the x + 1 intermediate dies here
  REQUIRE(fake().instrs.size() == 3);
  CHECK(fake().frees == std::vector<uint64_t>{fake().instrs[1].result});

  // After the session is gone, dying handles free nothing (and do not throw).
  fake().reset();
  {
    gt::Tensor z = gt::zeros({2});
    fake().alive = false;
  }
  fake().alive = true;
  CHECK(fake().frees.empty());
}

TEST_CASE("session-level functions forward to the session", "[client]") {
  fake().reset();
  gt::synchronize();
  CHECK(fake().syncs == 1);
  fake().stats = {gt::WorkerStats{}};
  fake().stats[0].device = "cpu:0";
  std::vector<gt::WorkerStats> s = gt::worker_stats();
  REQUIRE(s.size() == 1);
  CHECK(s[0].device == "cpu:0");
  gt::connect("unix:/tmp/x.sock");
  CHECK(fake().connected_to == "unix:/tmp/x.sock");
}

// Issue 18 items 5, 7, 8, 9 on the client (shared by C++ and Python): PyTorch's result types
// with 0-d tensors and bool scalars, exact int64 fill values and clamp bounds, and the errors
// torch raises at the call site (expectations checked in torch.result_type / torch).
TEST_CASE("promotion: 0-d tensors and bool scalars, as torch.result_type", "[client][promote]") {
  fake().reset();
  gt::Tensor i32 = gt::zeros({3}, gt::kInt32);
  gt::Tensor f16 = gt::zeros({3}, gt::kFloat16);
  gt::Tensor b = gt::zeros({3}, gt::kBool);
  gt::Tensor i64_0 = gt::scalar_tensor(int64_t{1} << 40, gt::kInt64);
  gt::Tensor f32_0 = gt::scalar_tensor(1.0, gt::kFloat32);
  CHECK((i32 + i64_0).dtype() == gt::kInt32);  // a 0-d tensor does not widen its category
  CHECK((i64_0 + i32).dtype() == gt::kInt32);
  CHECK((f16 * f32_0).dtype() == gt::kFloat16);
  CHECK((i32 * f32_0).dtype() == gt::kFloat32);  // ... but a higher category lifts it
  CHECK((b + gt::scalar_tensor(1, gt::kInt32)).dtype() == gt::kInt32);
  CHECK((i64_0 + f32_0).dtype() == gt::kFloat32);  // two 0-d tensors: ordinary promotion
  CHECK(gt::where(b, f16, f32_0).dtype() == gt::kFloat16);
  CHECK(gt::where(b, i32, i64_0).dtype() == gt::kInt32);
  CHECK(gt::maximum(i32, i64_0).dtype() == gt::kInt32);
  CHECK((i32 < f32_0).dtype() == gt::kBool);

  gt::Tensor s = b + true;
  CHECK(s.dtype() == gt::kBool);  // bool + True stays bool (was int64)
  CHECK(last().attrs.scalar_kind() == gt::ScalarKind::kBool);
  CHECK((b + 1).dtype() == gt::kInt64);
  CHECK(last().attrs.scalar_kind() == gt::ScalarKind::kInt);
  CHECK((b * 0.5).dtype() == gt::kFloat32);
  CHECK(last().attrs.scalar_kind() == gt::ScalarKind::kFloat);
  CHECK((i32 + true).dtype() == gt::kInt32);
  CHECK((i32 + (int64_t{1} << 40)).dtype() == gt::kInt32);  // wraps on the worker, as torch
  CHECK(gt::where(b, true, false).dtype() == gt::kBool);
  CHECK(gt::where(b, b, 2).dtype() == gt::kInt64);
}

TEST_CASE("masked_fill and clamp carry exact integers and keep int dtypes", "[client][promote]") {
  fake().reset();
  gt::Tensor x = gt::zeros({3}, gt::kInt64);
  gt::Tensor m = gt::zeros({3}, gt::kBool);
  const int64_t big = (int64_t{1} << 62) + 1;
  x.masked_fill(m, big);
  CHECK(last().attrs.fill_exact() == big);
  gt::Tensor c = x.clamp(big, std::nullopt);
  CHECK(c.dtype() == gt::kInt64);
  CHECK(last().attrs.clamp_min_exact() == big);
  CHECK(gt::nn::functional::clamp(x, 0, 5).dtype() == gt::kInt64);  // int bounds: int64 (was float32)
  CHECK(gt::nn::functional::clamp(x, 0.5, std::nullopt).dtype() == gt::kFloat32);
  CHECK(gt::zeros({2}, gt::kInt32).clamp(-3, 3).dtype() == gt::kInt32);
  CHECK(gt::zeros({2}, gt::kBool).clamp(std::nullopt, 1).dtype() == gt::kInt64);
  CHECK_THROWS_WITH(gt::zeros({2}, gt::kInt32).clamp(int64_t{1} << 40, std::nullopt),
                    Contains("clamp") && Contains("int32"));
  CHECK_THROWS_WITH(gt::zeros({2}, gt::kInt32).masked_fill(gt::zeros({2}, gt::kBool), int64_t{1} << 40),
                    Contains("masked_fill"));
  CHECK_THROWS_WITH(gt::zeros({2}, gt::kFloat16).masked_fill(gt::zeros({2}, gt::kBool), 1e5),
                    Contains("masked_fill") && Contains("float16"));
  CHECK_THROWS_WITH(x + (uint64_t{1} << 63), Contains("int64"));
}

TEST_CASE("errors torch raises are raised at the call site", "[client][promote]") {
  fake().reset();
  gt::Tensor i = gt::zeros({2, 2}, gt::kInt64);
  gt::Tensor f = gt::zeros({2, 2});
  gt::Tensor b = gt::zeros({2, 2}, gt::kBool);
  const size_t n = fake().instrs.size();
  // in-place results that cannot be cast back
  CHECK_THROWS_WITH(i.div_(2), Contains("result type float32 can't be cast") && Contains("int64"));
  CHECK_THROWS_WITH(i.add_(2.7), Contains("can't be cast"));
  CHECK_THROWS_WITH(i.mul_(f), Contains("can't be cast"));
  CHECK_THROWS_WITH(b.add_(1), Contains("result type int64 can't be cast"));
  CHECK_THROWS_WITH(i.sub_(f, 1), Contains("can't be cast"));
  CHECK_THROWS_WITH(i.add_(i, 0.5), Contains("alpha must not be a floating point number"));
  CHECK_THROWS_WITH(i.add_(b, true), Contains("boolean alpha"));
  CHECK_THROWS_WITH(f.sub_(b, 2), Contains("with a bool tensor is not supported"));
  CHECK(fake().instrs.size() == n);  // nothing was queued
  i.add_(true);
  b.add_(true);
  gt::zeros({2}, gt::kInt32).add_(gt::zeros({2}, gt::kInt64));
  gt::zeros({2}, gt::kFloat16).mul_(gt::zeros({2}));
  // mixed-dtype matmul
  CHECK_THROWS_WITH(f.matmul(f.to(gt::kFloat16)), Contains("matmul") && Contains("same dtype"));
  CHECK_THROWS_WITH(gt::matmul(i, f), Contains("matmul"));
  // float-only ops
  CHECK_THROWS_WITH(i.mean(), Contains("mean") && Contains("floating"));
  CHECK_THROWS_WITH(b.mean(0), Contains("mean"));
  CHECK_THROWS_WITH(i.var(), Contains("var"));
  CHECK_THROWS_WITH(gt::softmax(i, 0), Contains("softmax"));
  CHECK_THROWS_WITH(gt::log_softmax(b, 0), Contains("log_softmax"));
  CHECK_THROWS_WITH(gt::nn::functional::gelu(i), Contains("gelu"));
  CHECK_THROWS_WITH(gt::nn::functional::layer_norm(i, {2}), Contains("layer_norm"));
  CHECK_THROWS_WITH(gt::nn::functional::mse_loss(i, i), Contains("mse_loss"));
  CHECK_THROWS_WITH(gt::nn::functional::binary_cross_entropy(i, i), Contains("binary_cross_entropy"));
  CHECK_THROWS_WITH(gt::nn::functional::binary_cross_entropy(f, f.to(gt::kFloat16)),
                    Contains("binary_cross_entropy"));
  CHECK(gt::nn::functional::mse_loss(f, i).dtype() == gt::kFloat32);
  CHECK(i.logsumexp().dtype() == gt::kFloat32);  // torch takes integers here
  // bool: abs, argmax, neg, sub
  CHECK_THROWS_WITH(b.abs(), Contains("abs"));
  CHECK_THROWS_WITH(b.argmax(), Contains("argmax"));
  CHECK_THROWS_WITH(b.argmin(0), Contains("argmin"));
  CHECK_THROWS_WITH(-b, Contains("neg"));
  CHECK_THROWS_WITH(f - b, Contains("sub"));
  CHECK_THROWS_WITH(f - true, Contains("sub"));
  CHECK_THROWS_WITH(1 - b, Contains("sub"));
  // integers to negative integer powers; exponents beyond an int32 / float16 result
  CHECK_THROWS_WITH(gt::pow(i, -1), Contains("Integers to negative integer powers"));
  CHECK_THROWS_WITH(gt::pow(i.to(gt::kInt32), int64_t{1} << 40), Contains("pow"));
  CHECK_THROWS_WITH(gt::pow(f.to(gt::kFloat16), 70000.0), Contains("pow"));
  CHECK(gt::pow(2, i).dtype() == gt::kInt64);
  // one_hot of an empty tensor cannot infer the class count
  CHECK_THROWS_WITH(gt::nn::functional::one_hot(gt::zeros({0}, gt::kInt64), -1),
                    Contains("one_hot") && Contains("empty"));
  // cross_entropy: floating targets are probabilities of the input's shape
  CHECK_THROWS_WITH(gt::nn::functional::cross_entropy(f, gt::zeros({2})),
                    Contains("class probabilities"));
}
