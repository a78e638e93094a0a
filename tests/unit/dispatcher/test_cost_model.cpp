// The cost estimate (dispatcherd/cost_model.h): work grows with the bytes an op moves, and a
// strided view's ops move only the view's elements, not the tensor they view.
#include <catch2/catch.hpp>

#include <vector>

#include "dispatcherd/cost_model.h"

using namespace gt;
using namespace gt::dispatcher;

namespace {
TensorMeta f32(Shape s) { return TensorMeta{s, DType::kFloat32}; }
}  // namespace

TEST_CASE("cost: bytes moved, views by their own size", "[cost]") {
  const TensorMeta big = f32({1 << 22});  // 16 MiB
  const TensorMeta one = f32({});
  const std::vector<TensorMeta> big_in = {big, big};
  const uint64_t add = estimate_cost_ns(OpId::k_add, big, big_in);
  CHECK(add > 1'000'000);  // 48 MiB of traffic at ~8 GB/s: milliseconds
  // One element read out of (or written into) the big tensor costs about a fixed overhead.
  const std::vector<TensorMeta> view_in = {big};
  const uint64_t read_one = estimate_cost_ns(OpId::k_as_strided, one, view_in);
  const std::vector<TensorMeta> write_in = {big, one};
  const uint64_t write_one = estimate_cost_ns(OpId::k_strided_copy_, big, write_in);
  CHECK(read_one < 1000);
  CHECK(write_one < 1000);
  // A whole-tensor view costs what a copy of it does.
  const uint64_t read_all = estimate_cost_ns(OpId::k_as_strided, big, view_in);
  const std::vector<TensorMeta> write_all_in = {big, big};
  const uint64_t write_all = estimate_cost_ns(OpId::k_strided_copy_, big, write_all_in);
  CHECK(read_all == write_all);
  CHECK(read_all > add / 2);
  CHECK(estimate_cost_ns(OpId::k_as_strided, big, view_in, 100.0) == read_all / 100);
}
