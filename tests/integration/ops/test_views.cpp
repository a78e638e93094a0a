// Views that alias (issue 18 item 1, libgtclient/view.h) through real daemons: an in-place write
// through a view reaches its base, and one into the base reaches every view of it, for each way
// of making a view; strides as PyTorch reports them; the writes PyTorch refuses. References are
// closed forms written out here.
#include <functional>
#include <vector>

#include "op_test_util.h"

using namespace gtt;
using gt::Tensor;

namespace {

Ref iota_ref(const Shp& shape, double start = 0) {
  std::vector<double> v(static_cast<size_t>(numel_of(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i);
  return Ref{shape, v};
}

Tensor iota(const Shp& shape) { return up(iota_ref(shape), gt::kFloat32); }

}  // namespace

TEST_CASE("a write through each kind of view reaches the base", "[ops][views]") {
  daemons();
  // base = [[0 1 2] [3 4 5]]; each view gets += 10 on the elements it covers.
  struct Case {
    const char* name;
    std::function<Tensor(const Tensor&)> view;
    std::vector<double> want;  // the base afterwards
  };
  const std::vector<Case> cases = {
      {"reshape", [](const Tensor& b) { return b.reshape({3, 2}); }, {10, 11, 12, 13, 14, 15}},
      {"view", [](const Tensor& b) { return b.view({6}); }, {10, 11, 12, 13, 14, 15}},
      {"flatten", [](const Tensor& b) { return b.flatten(); }, {10, 11, 12, 13, 14, 15}},
      {"unsqueeze", [](const Tensor& b) { return b.unsqueeze(1); }, {10, 11, 12, 13, 14, 15}},
      {"squeeze", [](const Tensor& b) { return b.unsqueeze(0).squeeze(); }, {10, 11, 12, 13, 14, 15}},
      {"t", [](const Tensor& b) { return b.t(); }, {10, 11, 12, 13, 14, 15}},
      {"permute", [](const Tensor& b) { return b.permute({1, 0}); }, {10, 11, 12, 13, 14, 15}},
      {"detach", [](const Tensor& b) { return b.detach(); }, {10, 11, 12, 13, 14, 15}},
      {"select row", [](const Tensor& b) { return b.select(0, 1); }, {0, 1, 2, 13, 14, 15}},
      {"select column", [](const Tensor& b) { return b.select(1, -1); }, {0, 1, 12, 3, 4, 15}},
      {"slice step 2", [](const Tensor& b) { return b.slice(1, 0, gt::None, 2); },
       {10, 1, 12, 13, 4, 15}},
      {"negative step", [](const Tensor& b) { return b.slice(1, gt::None, gt::None, -2); },
       {10, 1, 12, 13, 4, 15}},
      {"index int+slice", [](const Tensor& b) { return b.index({0, gt::Slice(1, gt::None)}); },
       {0, 11, 12, 3, 4, 5}},
      {"index None+ellipsis", [](const Tensor& b) { return b.index({gt::None, gt::Ellipsis, 1}); },
       {0, 11, 2, 3, 14, 5}},
      {"view of a view", [](const Tensor& b) { return b.t().select(0, 2).unsqueeze(0); },
       {0, 1, 12, 3, 4, 15}},
      {"split part", [](const Tensor& b) { return gt::split(b, 2, 1)[1]; }, {0, 1, 12, 3, 4, 15}},
      {"chunk part", [](const Tensor& b) { return gt::chunk(b, 2, 0)[0]; }, {10, 11, 12, 3, 4, 5}},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Tensor base = iota({2, 3});
    Tensor v = c.view(base);
    CHECK(v.is_view());
    v.add_(10);
    CHECK_TENSOR(base, ref_of({2, 3}, c.want), gt::kFloat32);
    // The view itself holds its new values too, and a second write goes through as well.
    v.sub_(10);
    CHECK_TENSOR(base, iota_ref({2, 3}), gt::kFloat32);
  }
}

TEST_CASE("a write into the base reaches every view made before it", "[ops][views]") {
  daemons();
  Tensor base = iota({2, 3});
  Tensor row = base.select(0, 1);
  Tensor tr = base.t();
  Tensor col = tr.select(0, 0);  // a view of a view
  Tensor ex = base.select(1, 2).unsqueeze(1).expand({2, 4});
  base.mul_(2);
  CHECK_TENSOR(row, ref_of({3}, {6, 8, 10}), gt::kFloat32);
  CHECK_TENSOR(tr, ref_of({3, 2}, {0, 6, 2, 8, 4, 10}), gt::kFloat32);
  CHECK_TENSOR(col, ref_of({2}, {0, 6}), gt::kFloat32);
  CHECK_TENSOR(ex, ref_of({2, 4}, {4, 4, 4, 4, 10, 10, 10, 10}), gt::kFloat32);
  // A write through one view reaches its siblings (through the base), read lazily by ops.
  row.fill_(-1);
  CHECK_TENSOR(col, ref_of({2}, {0, -1}), gt::kFloat32);
  CHECK_TENSOR((tr + 0).sum(), ref_of({}, {0 + 2 + 4 - 3}), gt::kFloat32);
  // copy_ with broadcasting through a column view.
  base.select(1, 0).copy_(gt::full({}, 7.0));
  CHECK_TENSOR(base, ref_of({2, 3}, {7, 2, 4, 7, -1, -1}), gt::kFloat32);
  CHECK_TENSOR(ex, ref_of({2, 4}, {4, 4, 4, 4, -1, -1, -1, -1}), gt::kFloat32);
}

TEST_CASE("integer and bool views alias too", "[ops][views]") {
  daemons();
  Tensor i = gt::arange(6).reshape({2, 3});
  i.select(1, 1).add_(int64_t{1} << 40);
  CHECK_TENSOR(i, ref_of({2, 3}, {0, 1 + double(int64_t{1} << 40), 2, 3, 4 + double(int64_t{1} << 40), 5}),
               gt::kInt64);
  Tensor b = gt::zeros({4}, gt::kBool);
  b.slice(0, 1, 3).fill_(true);
  CHECK_TENSOR(b, ref_of({4}, {0, 1, 1, 0}), gt::kBool);
}

TEST_CASE("strides, offsets and contiguity are PyTorch's", "[ops][views]") {
  daemons();
  Tensor x = iota({2, 3, 4});
  CHECK(x.stride() == std::vector<int64_t>{12, 4, 1});
  CHECK(x.is_contiguous());
  CHECK_FALSE(x.is_view());
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.stride() == std::vector<int64_t>{1, 12, 4});
  CHECK_FALSE(p.is_contiguous());
  Tensor s = x.index({gt::Slice(), gt::Slice(1, 3), gt::Slice(gt::None, gt::None, 2)});
  CHECK(s.stride() == std::vector<int64_t>{12, 4, 2});
  CHECK(s.storage_offset() == 4);
  Tensor sel = x.select(2, 3);
  CHECK(sel.stride() == std::vector<int64_t>{12, 4});
  CHECK(sel.storage_offset() == 3);
  Tensor e = x.select(2, 0).unsqueeze(0).expand({5, 2, 3});
  CHECK(e.stride() == std::vector<int64_t>{0, 12, 4});
  // A reshape that keeps evenly spaced runs is a view; one that cannot is a copy, and view()
  // refuses it (PyTorch's computeStride).
  Tensor r = p.reshape({4, 6});  // merges dims 1, 2 of p: strides 12 and 4 -> one run of 6
  CHECK(r.is_view());
  CHECK(r.stride() == std::vector<int64_t>{1, 4});
  Tensor q = x.permute({0, 2, 1});  // (2, 4, 3), strides (12, 1, 4)
  Tensor copy = q.reshape({2, 12});
  CHECK_FALSE(copy.is_view());
  CHECK_THROWS_WITH(q.view({2, 12}), Catch::Contains("view size is not compatible"));
  copy.fill_(0);  // a copy: the base keeps its values
  CHECK_TENSOR(x, iota_ref({2, 3, 4}), gt::kFloat32);
  // contiguous(): the tensor itself when row-major, else a copy.
  CHECK(x.select(0, 1).contiguous().is_view());
  Tensor pc = p.contiguous();
  CHECK_FALSE(pc.is_view());
  CHECK(pc.is_contiguous());
  pc.fill_(0);
  CHECK_TENSOR(x, iota_ref({2, 3, 4}), gt::kFloat32);
}

TEST_CASE("writes PyTorch refuses through views are refused", "[ops][views]") {
  daemons();
  Tensor x = iota({3});
  Tensor e = x.unsqueeze(0).expand({2, 3});
  CHECK_THROWS_WITH(e.add_(1), Catch::Contains("more than one element"));
  CHECK_THROWS_WITH(e.copy_(gt::zeros({2, 3})), Catch::Contains("more than one element"));
  CHECK_TENSOR(x, iota_ref({3}), gt::kFloat32);  // nothing was written
  // fill_ / zero_ write one value to every element, so PyTorch allows them on an expanded view.
  Tensor col = gt::zeros({2, 1});
  col.expand({2, 3}).fill_(4);
  CHECK_TENSOR(col, ref_of({2, 1}, {4, 4}), gt::kFloat32);
  col.expand({2, 3}).zero_();
  CHECK_TENSOR(col, ref_of({2, 1}, {0, 0}), gt::kFloat32);
  // Size-1 broadcast dims do not overlap: a write is fine.
  Tensor one = x.select(0, 0).expand({1});
  one.fill_(5);
  CHECK_TENSOR(x, ref_of({3}, {5, 1, 2}), gt::kFloat32);
  CHECK_NOTHROW(gt::synchronize());
}

TEST_CASE("clone and cast results do not alias", "[ops][views]") {
  daemons();
  Tensor x = iota({4});
  Tensor c = x.clone();
  Tensor i = x.to(gt::kInt64);
  c.fill_(1);
  i.fill_(2);
  CHECK_TENSOR(x, iota_ref({4}), gt::kFloat32);
  // x.to(its own dtype) is x itself, so a write through it is a write to x.
  x.to(gt::kFloat32).fill_(3);
  CHECK_TENSOR(x, ref_of({4}, {3, 3, 3, 3}), gt::kFloat32);
}

TEST_CASE("views keep working across many writes and frees", "[ops][views]") {
  daemons();
  // A buffer filled row by row through views, as a loop of `buf[i] = f(i)` does.
  Tensor buf = gt::zeros({50, 4});
  for (int i = 0; i < 50; ++i) buf.select(0, i).copy_(gt::full({4}, static_cast<double>(i)));
  std::vector<double> want;
  for (int i = 0; i < 50; ++i)
    for (int j = 0; j < 4; ++j) want.push_back(i);
  CHECK_TENSOR(buf, ref_of({50, 4}, want), gt::kFloat32);
  // A view outliving every other handle to its base keeps the base alive.
  Tensor v;
  {
    Tensor b = iota({3});
    v = b.slice(0, 1);
  }
  v.add_(1);
  CHECK_TENSOR(v, ref_of({2}, {2, 3}), gt::kFloat32);
}

TEST_CASE("index_put_ writes the selected elements in place", "[ops][views]") {
  daemons();
  Tensor x = gt::zeros({3, 4});
  x.index_put_({1}, gt::from_vector<float>({1, 2, 3, 4}));             // a row
  x.index_put_({gt::Slice(), 0}, 9.0);                                   // a column, a number
  x.index_put_({2, gt::Slice(1, 3)}, gt::full({1}, int64_t{-5}));        // broadcast, converted
  x.index_put_({gt::Ellipsis, -1}, gt::from_vector<float>({7, 8, 9}).unsqueeze(0).t().squeeze());
  CHECK_TENSOR(x, ref_of({3, 4}, {9, 0, 0, 7, 9, 2, 3, 8, 9, -5, -5, 9}), gt::kFloat32);
  // Through a view of x: the view's own write path, into x.
  Tensor v = x.t();
  v.index_put_({0}, 0.0);
  CHECK_TENSOR(x.select(1, 0), ref_of({3}, {0, 0, 0}), gt::kFloat32);
  CHECK_THROWS_AS(x.index_put_({0}, gt::zeros({3})), gt::Error);  // does not broadcast to [4]
  CHECK_NOTHROW(gt::synchronize());
}
