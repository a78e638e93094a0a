// format_tensor: expected strings written out from what PyTorch prints for the same values
// (torch 2.x default print options), with GT's dtype suffix rule (shown for every dtype but
// float32, where PyTorch also omits int64 and bool) and "gt." instead of "torch.".
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

#include "gt/gt.h"

namespace {

template <typename T>
std::string bytes_of(const std::vector<T>& v) {
  std::string b(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::string fmt_f32(std::vector<float> v, gt::Shape s) {
  return gt::format_tensor(gt::TensorMeta{s, gt::kFloat32}, bytes_of(v));
}
std::string fmt_i64(std::vector<int64_t> v, gt::Shape s) {
  return gt::format_tensor(gt::TensorMeta{s, gt::kInt64}, bytes_of(v));
}
std::vector<int64_t> iota64(int64_t n, int64_t start = 0) {
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = start + i;
  return v;
}
std::vector<float> iotaf(int64_t n) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

}  // namespace

TEST_CASE("format_tensor: floats", "[client][format]") {
  // torch.tensor([[0.1234, -1.2345], [2.0, 0.5]])
  CHECK(fmt_f32({0.1234f, -1.2345f, 2.0f, 0.5f}, {2, 2}) ==
        "tensor([[ 0.1234, -1.2345],\n"
        "        [ 2.0000,  0.5000]])");
  // torch.tensor([1., 2., 3.]) and torch.zeros(2): integral values print as "1."
  CHECK(fmt_f32({1, 2, 3}, {3}) == "tensor([1., 2., 3.])");
  CHECK(fmt_f32({0, 0}, {2}) == "tensor([0., 0.])");
  CHECK(fmt_f32({-1, 10}, {2}) == "tensor([-1., 10.])");
  // Very large / very small values switch to scientific notation.
  CHECK(fmt_f32({1e10f, 1.0f}, {2}) == "tensor([1.0000e+10, 1.0000e+00])");
  CHECK(fmt_f32({1e-5f, 1.0f}, {2}) == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(fmt_f32({0.5f, 100.5f}, {2}) == "tensor([  0.5000, 100.5000])");
  CHECK(fmt_f32({0.5f, 1000.5f, 0.f}, {3}) == "tensor([5.0000e-01, 1.0005e+03, 0.0000e+00])");
  // Non-finite values.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  CHECK(fmt_f32({1.5f, nan, inf}, {3}) == "tensor([1.5000,    nan,    inf])");
  CHECK(fmt_f32({1.f, nan, -inf}, {3}) == "tensor([1., nan, -inf])");
  // torch.arange(20.): 14 per line at width 3.
  CHECK(fmt_f32(iotaf(20), {20}) ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19.])");
}

TEST_CASE("format_tensor: 0-d and empty", "[client][format]") {
  CHECK(fmt_f32({3.14159265f}, {}) == "tensor(3.1416)");
  CHECK(fmt_f32({2.f}, {}) == "tensor(2.)");
  CHECK(fmt_f32({-0.00001f}, {}) == "tensor(-1.0000e-05)");
  CHECK(fmt_i64({7}, {}) == "tensor(7, dtype=gt.int64)");
  CHECK(fmt_f32({}, {0, 3}) == "tensor([], size=(0, 3))");
  CHECK(fmt_f32({}, {0}) == "tensor([])");
  CHECK(fmt_i64({}, {0}) == "tensor([], dtype=gt.int64)");
  CHECK(fmt_i64({}, {2, 0, 1}) == "tensor([], size=(2, 0, 1), dtype=gt.int64)");
}

TEST_CASE("format_tensor: integers and bools", "[client][format]") {
  // torch.arange(6).reshape(2, 3)
  CHECK(fmt_i64(iota64(6), {2, 3}) ==
        "tensor([[0, 1, 2],\n"
        "        [3, 4, 5]], dtype=gt.int64)");
  CHECK(fmt_i64({1, -20, 300}, {3}) == "tensor([  1, -20, 300], dtype=gt.int64)");
  // torch.arange(8).reshape(2, 2, 2): blank line between 2-D blocks.
  CHECK(fmt_i64(iota64(8), {2, 2, 2}) ==
        "tensor([[[0, 1],\n"
        "         [2, 3]],\n"
        "\n"
        "        [[4, 5],\n"
        "         [6, 7]]], dtype=gt.int64)");
  CHECK(gt::format_tensor(gt::TensorMeta{gt::Shape{3}, gt::kInt32},
                          bytes_of(std::vector<int32_t>{5, 6, 7})) ==
        "tensor([5, 6, 7], dtype=gt.int32)");
  // torch.tensor([True, False, True])
  CHECK(gt::format_tensor(gt::TensorMeta{gt::Shape{3}, gt::kBool},
                          std::string("\x01\x00\x01", 3)) ==
        "tensor([ True, False,  True], dtype=gt.bool)");
  CHECK(gt::format_tensor(gt::TensorMeta{gt::Shape{2}, gt::kBool}, std::string("\x01\x01", 2)) ==
        "tensor([True, True], dtype=gt.bool)");
}

TEST_CASE("format_tensor: half types and the suffix line break", "[client][format]") {
  // torch.tensor([1.5, -2.0], dtype=torch.float16)
  CHECK(gt::format_tensor(gt::TensorMeta{gt::Shape{2}, gt::kFloat16},
                          bytes_of(std::vector<uint16_t>{0x3e00, 0xc000})) ==
        "tensor([ 1.5000, -2.0000], dtype=gt.float16)");
  CHECK(gt::format_tensor(gt::TensorMeta{gt::Shape{1}, gt::kBFloat16},
                          bytes_of(std::vector<uint16_t>{0x3fc0})) ==
        "tensor([1.5000], dtype=gt.bfloat16)");
  // A suffix that would pass 80 columns goes on its own line, indented like the data.
  CHECK(fmt_i64(iota64(8, 1000000), {8}) ==
        "tensor([1000000, 1000001, 1000002, 1000003, 1000004, 1000005, 1000006, 1000007],\n"
        "       dtype=gt.int64)");
}

TEST_CASE("format_tensor: more than 1000 elements are summarized", "[client][format]") {
  // torch.arange(2000)
  CHECK(fmt_i64(iota64(2000), {2000}) ==
        "tensor([   0,    1,    2,  ..., 1997, 1998, 1999], dtype=gt.int64)");
  // torch.arange(10000).reshape(100, 100)
  CHECK(fmt_i64(iota64(10000), {100, 100}) ==
        "tensor([[   0,    1,    2,  ...,   97,   98,   99],\n"
        "        [ 100,  101,  102,  ...,  197,  198,  199],\n"
        "        [ 200,  201,  202,  ...,  297,  298,  299],\n"
        "        ...,\n"
        "        [9700, 9701, 9702,  ..., 9797, 9798, 9799],\n"
        "        [9800, 9801, 9802,  ..., 9897, 9898, 9899],\n"
        "        [9900, 9901, 9902,  ..., 9997, 9998, 9999]], dtype=gt.int64)");
  // torch.arange(10000.).reshape(100, 100): scientific (max/min > 1000), 6 per line.
  CHECK(fmt_f32(iotaf(10000), {100, 100}) ==
        "tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n"
        "         9.9000e+01],\n"
        "        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n"
        "         1.9900e+02],\n"
        "        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n"
        "         2.9900e+02],\n"
        "        ...,\n"
        "        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,\n"
        "         9.7990e+03],\n"
        "        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,\n"
        "         9.8990e+03],\n"
        "        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,\n"
        "         9.9990e+03]])");
  // Summarizing only the long dim: torch.arange(2002).reshape(2, 1001)
  CHECK(fmt_i64(iota64(2002), {2, 1001}) ==
        "tensor([[   0,    1,    2,  ...,  998,  999, 1000],\n"
        "        [1001, 1002, 1003,  ..., 1999, 2000, 2001]], dtype=gt.int64)");
}

TEST_CASE("format_tensor rejects a byte count that does not match the meta", "[client][format]") {
  CHECK_THROWS_AS(fmt_f32({1, 2}, {3}), gt::Error);
}
