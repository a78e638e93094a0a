// CUDA vs CPU parity of the strided views: as_strided (the gather, tiled when a dim before the
// last is contiguous) and strided_copy_ (the scatter, a memcpy when the positions are one run),
// with negative and zero strides, every element size, empty and 0-d views, and a source that
// shares the destination's bytes.
#include <fmt/format.h>

#include <vector>

#include "require_ok.h"
#include "tests/gpu/parity_harness.h"

namespace gt::gpu_test {
namespace {

struct View {
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset;
  const char* what;
};

OpAttrs attrs_of(const View& v) { return make_strided(v.sizes, v.strides, v.offset); }

// Views of a [48, 40] tensor (1920 elements).
const std::vector<View>& views() {
  static const std::vector<View> v = {
      {Shape{40, 48}, {1, 40}, 0, "transpose (tiled)"},
      {Shape{3, 16, 40}, {1, 120, 1}, 0, "overlapping rows"},
      {Shape{24, 20}, {-80, -2}, 1919, "reversed, every other"},
      {Shape{5, 40}, {0, 1}, 80, "one row repeated (zero stride)"},
      {Shape{40, 9}, {1, 0}, 3, "zero inner stride"},
      {Shape{10, 40}, {40, 1}, 400, "one contiguous run"},
      {Shape{2, 8, 3, 9}, {960, 1, 300, 40}, 7, "rank 4, mixed"},
      {Shape{}, {}, 1919, "0-d"},
      {Shape{0, 5}, {1, 1}, 0, "empty"},
  };
  return v;
}

TEST_CASE("cuda parity: as_strided", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(21);
  for (DType dt : {DType::kBool, DType::kFloat16, DType::kFloat32, DType::kInt64}) {
    const Pair x = random_pair(Shape{48, 40}, dt, rng);
    for (const View& v : views())
      check_op(OpId::k_as_strided, attrs_of(v), {&x},
               fmt::format("as_strided {} of {}", v.what, describe(x.meta().shape, dt)));
  }
}

// Runs strided_copy_(dst, src) in place on both backends and compares dst.
void check_strided_copy(Pair& dst, const Pair& src, const OpAttrs& a, const std::string& what) {
  Backends* b = backends();
  std::vector<const Tensor*> ci{&dst.c, &src.c}, gi{&dst.g, &src.g};
  GT_REQUIRE_OK(b->cpu.run(KernelArgs{OpId::k_strided_copy_, a, ci, dst.c, 1}));
  GT_REQUIRE_OK(b->gpu->run(KernelArgs{OpId::k_strided_copy_, a, gi, dst.g, 1}));
  expect_close(dst, Tol{0, 0}, what);
}

TEST_CASE("cuda parity: strided_copy_", "[.gpu]") {
  GT_REQUIRE_GPU();
  std::mt19937 rng(22);
  // Views with distinct positions only (written twice, the value that stays is unspecified).
  const std::vector<View> distinct = {
      {Shape{40, 48}, {1, 40}, 0, "transposed (scatter)"},
      {Shape{24, 20}, {-80, -2}, 1919, "reversed, every other"},
      {Shape{10, 40}, {40, 1}, 400, "one contiguous run (memcpy)"},
      {Shape{48}, {40}, 39, "the last column"},
      {Shape{2, 8, 3, 9}, {960, 1, 300, 40}, 7, "rank 4, mixed"},
      {Shape{}, {}, 1919, "0-d"},
      {Shape{0, 5}, {1, 1}, 0, "empty"},
  };
  for (DType dt : {DType::kBool, DType::kBFloat16, DType::kInt32, DType::kInt64}) {
    for (const View& v : distinct) {
      Pair dst = random_pair(Shape{48, 40}, dt, rng);
      const Pair src = random_pair(v.sizes, dt, rng);
      check_strided_copy(dst, src, attrs_of(v),
                         fmt::format("strided_copy_ {} {}", v.what, dtype_name(dt)));
    }
  }
  // The source is the destination's own first 40 elements, written reversed to positions 50
  // down to 11, over the ones still to be read: both backends read the values from before.
  Pair dst = random_pair(Shape{48, 40}, DType::kFloat32, rng);
  const TensorMeta m{Shape{40}, DType::kFloat32};
  const Pair alias{Tensor{m, dst.c.storage, nullptr}, Tensor{m, dst.g.storage, nullptr}};
  const int64_t back[] = {-1};
  check_strided_copy(dst, alias, make_strided(Shape{40}, back, 50), "source sharing the bytes");
}

}  // namespace
}  // namespace gt::gpu_test
