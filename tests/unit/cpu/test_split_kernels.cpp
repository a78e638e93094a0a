// Kernels that split a flat pass over the compute pool (parallel.h: split_flat, parallel_for):
// on 300,001 elements every element must equal what the same op gives on a slice of 4,999 (one
// part, never split), for each loop the kernels pick: same-shape operands, a scalar attribute on
// either side, a one-element tensor on either side, where's three full forms, casts, clamp,
// unary ops, the transcendental ones; and reductions along the last dim split by rows. A wrong
// part offset, a part left out or run twice shows as a mismatch at the part's border.
#include <cmath>
#include <cstring>
#include <functional>

#include "tests/unit/cpu/cpu_test_util.h"

namespace gt::test {
namespace {

constexpr int64_t kBig = 300001;   // past 2 parts of split_flat's grain on any machine
constexpr int64_t kSlice = 4999;   // below every grain: one part

struct SplitCase {
  const char* name;
  OpId op;
  std::vector<int> big_inputs;  // indices into the inputs that are [kBig] (the rest: one element)
  std::vector<DType> dtypes;    // one per input
  OpAttrs attrs;
};

// Bit-exact comparison of two outputs' doubles (NaN == NaN).
bool same_value(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || std::memcmp(&a, &b, sizeof a) == 0;
}

// How many of `want` (the unsplit op's result on a slice) differ from the split result `got`
// from element `at` on; the first few are reported.
int mismatches(const std::vector<double>& got, int64_t at, const std::vector<double>& want) {
  int bad = 0;
  for (size_t j = 0; j < want.size(); ++j) {
    const double g = got[static_cast<size_t>(at) + j];
    if (same_value(g, want[j])) continue;
    if (bad++ < 5)
      UNSCOPED_INFO("[" << at + static_cast<int64_t>(j) << "] split " << g << " whole " << want[j]);
  }
  return bad;
}

void check_split(CpuBackend& be, std::mt19937& rng, const SplitCase& c) {
  INFO(c.name);
  std::vector<std::vector<double>> vals;
  std::vector<Tensor> big;
  for (size_t i = 0; i < c.dtypes.size(); ++i) {
    const bool full = std::find(c.big_inputs.begin(), c.big_inputs.end(), static_cast<int>(i)) !=
                      c.big_inputs.end();
    const int64_t n = full ? kBig : 1;
    vals.push_back(c.dtypes[i] == DType::kBool
                       ? random_values(rng, n, DType::kBool, 0, 1)
                       : random_values(rng, n, c.dtypes[i], -3, 3));
    big.push_back(make_tensor(be, full ? Shape{kBig} : Shape{}, c.dtypes[i], vals.back()));
  }
  std::vector<const Tensor*> big_in;
  for (const Tensor& t : big) big_in.push_back(&t);
  const std::vector<double> got = to_doubles(be, run_op(be, c.op, big_in, c.attrs));
  REQUIRE(got.size() == static_cast<size_t>(kBig));
  int bad = 0;
  for (int64_t s = 0; s < kBig; s += kSlice) {
    const int64_t len = std::min(kSlice, kBig - s);
    std::vector<Tensor> small;
    for (size_t i = 0; i < c.dtypes.size(); ++i) {
      if (big[i].meta.shape.rank() == 0) {
        small.push_back(make_tensor(be, Shape{}, c.dtypes[i], vals[i]));
        continue;
      }
      std::vector<double> part(vals[i].begin() + s, vals[i].begin() + s + len);
      small.push_back(make_tensor(be, Shape{len}, c.dtypes[i], part));
    }
    std::vector<const Tensor*> small_in;
    for (const Tensor& t : small) small_in.push_back(&t);
    bad += mismatches(got, s, to_doubles(be, run_op(be, c.op, small_in, c.attrs)));
  }
  CHECK(bad == 0);
}

TEST_CASE("split kernels: every element as computed unsplit", "[cpu][pool]") {
  CpuBackend be;
  std::mt19937 rng(59);
  const DType f32 = DType::kFloat32, i64 = DType::kInt64, b8 = DType::kBool;
  const std::vector<SplitCase> cases = {
      {"add, same shapes", OpId::k_add, {0, 1}, {f32, f32}, {}},
      {"add int64, same shapes", OpId::k_add, {0, 1}, {i64, i64}, {}},
      {"sub, scalar on the left", OpId::k_sub, {0}, {f32},
       make_binary_scalar(ScalarSide::kLeft, 2.5, false)},
      {"mul, scalar on the right", OpId::k_mul, {0}, {f32},
       make_binary_scalar(ScalarSide::kRight, 1.5, false)},
      {"maximum, a one-element tensor on the right", OpId::k_maximum, {0}, {f32, f32}, {}},
      {"div, a one-element tensor on the left", OpId::k_div, {1}, {f32, f32}, {}},
      {"le, same shapes", OpId::k_le, {0, 1}, {f32, f32}, {}},
      {"relu", OpId::k_relu, {0}, {f32}, {}},
      {"neg int64", OpId::k_neg, {0}, {i64}, {}},
      {"exp", OpId::k_exp, {0}, {f32}, {}},
      {"tanh", OpId::k_tanh, {0}, {f32}, {}},
      {"where, all full", OpId::k_where, {0, 1, 2}, {b8, f32, f32}, {}},
      {"where, one value for a", OpId::k_where, {0, 2}, {b8, f32, f32}, {}},
      {"where, one value for b", OpId::k_where, {0, 1}, {b8, f32, f32}, {}},
      {"cast to bfloat16", OpId::k_cast, {0}, {f32}, make_cast(DType::kBFloat16)},
      {"cast to int64", OpId::k_cast, {0}, {f32}, make_cast(DType::kInt64)},
      {"cast int64 to float32", OpId::k_cast, {0}, {i64}, make_cast(DType::kFloat32)},
      {"clamp", OpId::k_clamp, {0}, {f32}, make_clamp(-0.5, 0.5, false)},
      {"clamp below only", OpId::k_clamp, {0}, {f32}, make_clamp(0.25, std::nullopt, false)},
  };
  for (const SplitCase& c : cases) check_split(be, rng, c);
}

// Broadcasting loops split by their outermost rows (split_for_each_row): binary ops with a row or
// a column operand, where and masked_fill with a broadcast mask, on [1201, 509] against the same
// op on a few rows at a time (each operand sliced as it broadcasts).
TEST_CASE("split kernels: broadcasting loops, row by row as unsplit", "[cpu][pool]") {
  CpuBackend be;
  std::mt19937 rng(67);
  const int64_t rows = 1201, cols = 509, slice = 7;
  enum Form { kFull, kRow, kCol };  // [rows, cols], [cols], [rows, 1]
  struct Case {
    const char* name;
    OpId op;
    std::vector<Form> forms;
    std::vector<DType> dtypes;
    OpAttrs attrs;
  };
  const DType f32 = DType::kFloat32, b8 = DType::kBool;
  const std::vector<Case> cases = {
      {"add a row bias", OpId::k_add, {kFull, kRow}, {f32, f32}, {}},
      {"mul by a column", OpId::k_mul, {kCol, kFull}, {f32, f32}, {}},
      {"sub a row from a column", OpId::k_sub, {kCol, kRow}, {f32, f32}, {}},
      {"where with a row mask", OpId::k_where, {kRow, kFull, kFull}, {b8, f32, f32}, {}},
      {"where with a column mask and a row", OpId::k_where, {kCol, kRow, kFull}, {b8, f32, f32},
       {}},
      {"masked_fill with a column mask", OpId::k_masked_fill, {kFull, kCol}, {f32, b8},
       make_fill_value(-7.5)},
      {"masked_fill with a full mask (one coalesced row)", OpId::k_masked_fill, {kFull, kFull},
       {f32, b8}, make_fill_value(2.0)},
  };
  auto shape_of = [&](Form f, int64_t r) {
    return f == kFull ? Shape{r, cols} : f == kRow ? Shape{cols} : Shape{r, 1};
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<std::vector<double>> vals;
    std::vector<Tensor> big;
    for (size_t i = 0; i < c.forms.size(); ++i) {
      const Shape sh = shape_of(c.forms[i], rows);
      vals.push_back(c.dtypes[i] == b8 ? random_values(rng, sh.numel(), b8, 0, 1)
                                        : random_values(rng, sh.numel(), c.dtypes[i], -3, 3));
      big.push_back(make_tensor(be, sh, c.dtypes[i], vals.back()));
    }
    std::vector<const Tensor*> big_in;
    for (const Tensor& t : big) big_in.push_back(&t);
    const std::vector<double> got = to_doubles(be, run_op(be, c.op, big_in, c.attrs));
    REQUIRE(got.size() == static_cast<size_t>(rows * cols));
    int bad = 0;
    for (int64_t r = 0; r < rows; r += slice) {
      const int64_t len = std::min(slice, rows - r);
      std::vector<Tensor> small;
      for (size_t i = 0; i < c.forms.size(); ++i) {
        const int64_t per_row = c.forms[i] == kFull ? cols : 1;
        if (c.forms[i] == kRow) {
          small.push_back(make_tensor(be, Shape{cols}, c.dtypes[i], vals[i]));
          continue;
        }
        std::vector<double> part(vals[i].begin() + r * per_row,
                                 vals[i].begin() + (r + len) * per_row);
        small.push_back(make_tensor(be, shape_of(c.forms[i], len), c.dtypes[i], part));
      }
      std::vector<const Tensor*> small_in;
      for (const Tensor& t : small) small_in.push_back(&t);
      bad += mismatches(got, r * cols, to_doubles(be, run_op(be, c.op, small_in, c.attrs)));
    }
    CHECK(bad == 0);
  }
}

// Reductions along the last dim split by rows (split_rows), and cumsum's rows: every row of a
// [1201, 509] input's result as the same op gives on a few rows at a time (below the grain: one
// part).
TEST_CASE("split kernels: reductions along the last dim, row by row as unsplit", "[cpu][pool]") {
  CpuBackend be;
  std::mt19937 rng(61);
  const int64_t rows = 1201, n = 509, slice = 7;
  struct Case {
    const char* name;
    OpId op;
    DType dt;
  };
  for (Case c : {Case{"sum float32", OpId::k_sum, DType::kFloat32},
                 Case{"mean float32", OpId::k_mean, DType::kFloat32},
                 Case{"sum float64", OpId::k_sum, DType::kFloat64},
                 Case{"max float32", OpId::k_max, DType::kFloat32},
                 Case{"argmax float32", OpId::k_argmax, DType::kFloat32},
                 Case{"argmin int64", OpId::k_argmin, DType::kInt64},
                 Case{"min float64", OpId::k_min, DType::kFloat64},
                 Case{"cumsum float32", OpId::k_cumsum, DType::kFloat32},
                 Case{"cumsum int64", OpId::k_cumsum, DType::kInt64}}) {
    INFO(c.name);
    const std::vector<double> vals = random_values(rng, rows * n, c.dt, -3, 3);
    const OpAttrs attrs = c.op == OpId::k_cumsum ? make_axis(1) : make_reduce(1, false);
    const int64_t per_row = c.op == OpId::k_cumsum ? n : 1;
    Tensor x = make_tensor(be, Shape{rows, n}, c.dt, vals);
    const std::vector<double> got = to_doubles(be, run_op(be, c.op, {&x}, attrs));
    REQUIRE(got.size() == static_cast<size_t>(rows * per_row));
    int bad = 0;
    for (int64_t r = 0; r < rows; r += slice) {
      const int64_t len = std::min(slice, rows - r);
      std::vector<double> part(vals.begin() + r * n, vals.begin() + (r + len) * n);
      Tensor xs = make_tensor(be, Shape{len, n}, c.dt, part);
      bad += mismatches(got, r * per_row, to_doubles(be, run_op(be, c.op, {&xs}, attrs)));
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("split kernels: sums over dim 0, column block by column block as unsplit",
          "[cpu][pool]") {
  // A [300, 1001] sum or mean over dim 0 splits its columns over the pool in whole groups of
  // 32 (or 4) columns; every column must equal the sum of the same column in a [300, 32] block
  // (and the last, [300, 9], with the leftover columns), which never splits.
  CpuBackend be;
  std::mt19937 rng(67);
  const int64_t rows = 300, cols = 1001, block = 32;
  for (OpId op : {OpId::k_sum, OpId::k_mean}) {
    for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
      INFO(op_name(op) << " " << dtype_name(dt));
      const std::vector<double> vals = random_values(rng, rows * cols, dt, -3, 3);
      Tensor x = make_tensor(be, Shape{rows, cols}, dt, vals);
      const OpAttrs attrs = make_reduce(0, false);
      const std::vector<double> got = to_doubles(be, run_op(be, op, {&x}, attrs));
      REQUIRE(got.size() == static_cast<size_t>(cols));
      int bad = 0;
      for (int64_t c0 = 0; c0 < cols; c0 += block) {
        const int64_t w = cols - c0 < 2 * block ? cols - c0 : block;  // the last takes the rest
        std::vector<double> part;
        for (int64_t r = 0; r < rows; ++r)
          part.insert(part.end(), vals.begin() + r * cols + c0, vals.begin() + r * cols + c0 + w);
        Tensor xs = make_tensor(be, Shape{rows, w}, dt, part);
        bad += mismatches(got, c0, to_doubles(be, run_op(be, op, {&xs}, attrs)));
        if (w != block) break;
      }
      CHECK(bad == 0);
    }
  }
}

}  // namespace
}  // namespace gt::test
