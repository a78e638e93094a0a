// gt.Tensor operators and methods: arithmetic with tensors / Python numbers / numpy arrays on
// either side, comparisons, unary math, reductions (numpy's axis/keepdims, torch's dim/keepdim),
// layout and dtype conversion.
//
// Hot path: every operator has a (Tensor, Tensor) and a (Tensor, number) overload taking C++
// types directly (no generic object dispatch); the numpy-array overload comes last.
#include <algorithm>
#include <string_view>
#include <type_traits>

#include "common.h"

namespace gtpy {
namespace {

using T = gt::Tensor;

// A numpy array (or anything numpy accepts) as an operand: uploaded with numpy's dtype mapping.
T upload(const py::array& a) { return from_numpy_as(a, numpy_upload_dtype(a)); }

// The other operand of a binary operator: a Python number (checked first: the cheapest test), a
// tensor, or a numpy array / numpy scalar; anything else gives NotImplemented, so Python tries
// the other side's reflected operator and finally raises TypeError.
template <typename FT, typename FS>
py::object binary(const T& self, py::handle o, FT with_tensor, FS with_scalar) {
  PyObject* p = o.ptr();
  if constexpr (!std::is_same_v<FS, std::nullptr_t>) {
    if (PyFloat_Check(p) || PyLong_Check(p)) {
      py::detail::make_caster<PyScalar> sc;
      if (sc.load(o, true))
        return py::cast(with_scalar(self, py::detail::cast_op<PyScalar>(sc).get()));
    }
  }
  py::detail::make_caster<T> tc;
  if (tc.load(o, false)) return py::cast(with_tensor(self, py::detail::cast_op<const T&>(tc)));
  if constexpr (!std::is_same_v<FS, std::nullptr_t>) {
    py::detail::make_caster<PyScalar> sc;  // numpy scalars
    if (sc.load(o, true))
      return py::cast(with_scalar(self, py::detail::cast_op<PyScalar>(sc).get()));
  }
  if (py::isinstance<py::array>(o)) return py::cast(with_tensor(self, upload(py::reinterpret_borrow<py::array>(o))));
  return py::reinterpret_borrow<py::object>(Py_NotImplemented);
}

// ---- reductions ---------------------------------------------------------------------------------
// The dims of a reduction: torch's `dim` wins over numpy's `axis`; None, () and [] reduce over
// everything (torch.sum(x, dim=()) is a full sum). `single`: the op takes one int dim only
// (argmax, max(dim), ...), as PyTorch's TypeError for a tuple says.
std::optional<std::vector<int64_t>> reduce_dims(py::handle axis, py::handle dim, bool single,
                                                const char* name) {
  if (!dim.is_none()) axis = dim;
  if (axis.is_none()) return std::nullopt;
  if (single && !PyIndex_Check(axis.ptr()))
    throw py::type_error(std::string(name) + "(): argument 'dim' must be int, not " +
                         std::string(py::str(py::type::handle_of(axis).attr("__name__"))));
  std::vector<int64_t> axes = dims_from_handle(axis, name);
  if (axes.empty()) return std::nullopt;
  return axes;
}

// A reduction over several dims at once (the table's reductions, var, logsumexp): libgtclient's
// reduce_merged (the dims moved last and merged into one).
template <typename One>
T reduce_merged(const T& t, std::vector<int64_t> axes, bool keepdim, One one, const char* name) {
  return gt::detail::reduce_merged(t, std::move(axes), keepdim, one, name);
}

template <typename All, typename One>
T reduce(const T& t, All all, One one, py::handle axis, bool keepdims, py::handle dim,
         py::handle keepdim, const char* name) {
  if (!keepdim.is_none()) keepdims = keepdim.cast<bool>();
  const bool single = std::string_view(name).substr(0, 3) == "arg";
  std::optional<std::vector<int64_t>> dims = reduce_dims(axis, dim, single, name);
  if (!dims) {
    T r = all(t);
    if (!keepdims) return r;
    return r.reshape(std::vector<int64_t>(static_cast<size_t>(t.dim()), 1));
  }
  // Several dims are reduced at once, as torch does: a mean of means rounds otherwise, and an
  // overflow part way through a sum would depend on the order.
  return reduce_merged(t, std::move(*dims), keepdims, one, name);
}

#define GT_PY_REDUCTION(NAME)                                                                 \
  cls.def(                                                                                    \
      #NAME,                                                                                  \
      [](const T& t, py::handle axis, bool keepdims, py::handle dim, py::handle keepdim) {    \
        return reduce(                                                                        \
            t, [](const T& x) { return x.NAME(); },                                           \
            [](const T& x, int64_t d, bool k) { return x.NAME(d, k); }, axis, keepdims, dim,  \
            keepdim, #NAME);                                                                  \
      },                                                                                      \
      "axis"_a = py::none(), "keepdims"_a = false, py::kw_only(), "dim"_a = py::none(),       \
      "keepdim"_a = py::none());

// max/min: over everything a tensor; over one dim a named tuple (values, indices) like
// torch.return_types.max; with a tensor argument the elementwise maximum/minimum (torch.max(a, b)).
py::object indexed_result(const char* name, std::tuple<T, T> r) {
  // Held for the process's life and never released: a static py::object would be decref'd by
  // its destructor after the interpreter has finalized (a crash at exit).
  static const py::handle types = py::module_::import("gt.return_types").release();
  return types.attr(name)(py::cast(std::move(std::get<0>(r))), py::cast(std::move(std::get<1>(r))));
}
#define GT_PY_INDEXED_REDUCTION(NAME, PAIRWISE)                                               \
  cls.def(                                                                                    \
      #NAME,                                                                                  \
      [](const T& t, py::handle dim, bool keepdim, py::handle axis, py::handle keepdims) {    \
        if (!keepdims.is_none()) keepdim = keepdims.cast<bool>();                             \
        if (py::isinstance<T>(dim)) return py::cast(t.PAIRWISE(dim.cast<const T&>()));      \
        std::optional<std::vector<int64_t>> d = reduce_dims(axis, dim, true, #NAME);          \
        if (!d) return py::cast(keepdim ? t.NAME().reshape(std::vector<int64_t>(t.dim(), 1)) \
                                        : t.NAME());                                       \
        return indexed_result(#NAME, t.NAME((*d)[0], keepdim));                               \
      },                                                                                      \
      "dim"_a = py::none(), "keepdim"_a = false, py::kw_only(), "axis"_a = py::none(),        \
      "keepdims"_a = py::none());

// ---- layout helpers -------------------------------------------------------------------------------
T transpose_last(const T& t) { return t.dim() < 2 ? t : t.transpose(-2, -1); }

// t.T: all dims reversed (PyTorch's, which warns that beyond 2-D this is deprecated).
T reverse_dims(const T& t) {
  if (t.dim() < 2) return t;
  if (t.dim() > 2)
    PyErr_WarnEx(PyExc_UserWarning,
                 "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                 "deprecated (as in PyTorch); use x.mT to transpose batches of matrices or "
                 "x.permute(*reversed(range(x.ndim))) to reverse the dims.",
                 1);
  std::vector<int64_t> perm;
  for (int64_t d = t.dim() - 1; d >= 0; --d) perm.push_back(d);
  return t.permute(perm);
}

py::tuple to_tuple(std::vector<T> parts) {
  py::tuple out(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) out[i] = py::cast(std::move(parts[i]));
  return out;
}

// var / std (Sqrt) as torch.var / torch.std: var(dim=None, unbiased=True, keepdim=False, *,
// correction=None); numpy's axis/keepdims are accepted too (ddof as correction).
template <bool Sqrt>
T variance(const T& a, py::handle dim, py::handle unbiased, bool keepdim, py::handle axis,
           py::handle keepdims, py::handle correction, py::handle ddof) {
  const char* name = Sqrt ? "std" : "var";
  if (!keepdims.is_none()) keepdim = keepdims.cast<bool>();
  double corr = 1;
  if (!unbiased.is_none()) corr = unbiased.cast<bool>() ? 1 : 0;
  if (!correction.is_none()) corr = correction.cast<double>();
  if (!ddof.is_none()) corr = ddof.cast<double>();
  std::optional<std::vector<int64_t>> d = reduce_dims(axis, dim, false, name);
  auto one = [corr](const T& x, int64_t i, bool k) { return Sqrt ? x.std(i, corr, k) : x.var(i, corr, k); };
  if (d) return reduce_merged(a, *d, keepdim, one, name);
  T r = Sqrt ? a.std(std::nullopt, corr, false) : a.var(std::nullopt, corr, false);
  return keepdim ? r.reshape(std::vector<int64_t>(a.dim(), 1)) : r;
}

// t.split(size, dim) / t.split([sizes...], dim).
py::tuple split_tensor(const T& a, py::object size, int64_t dim) {
  if (PyLong_Check(size.ptr())) return to_tuple(gt::split(a, size.cast<int64_t>(), dim));
  return to_tuple(gt::split(a, dims_from_handle(size, "split"), dim));
}

}  // namespace

void init_tensor_ops(py::module_& m, py::class_<gt::Tensor>& cls) {
  // ---- the table-shaped ops of gt/tensor_api.def -------------------------------------------------
  // Binary ops: a.name(tensor | number); operators take a tensor, number or numpy array on either
  // side, one overload each (no pybind11 overload resolution on the hot path): see binary().
#define GT_API_BINARY(NAME, DUNDER)                                                              \
  cls.def(#NAME, [](const T& a, const T& b) { return a.NAME(b); }, "other"_a);                  \
  cls.def(#NAME, [](const T& a, PyScalar b) { return a.NAME(b.get()); }, "other"_a);            \
  if (std::string_view(#DUNDER) != "none") {                                                    \
    cls.def("__" #DUNDER "__", [](const T& a, py::handle o) {                                   \
      return binary(                                                                            \
          a, o, [](const T& a, const T& b) { return a.NAME(b); },                               \
          [](const T& a, gt::Scalar b) { return a.NAME(b); });                                  \
    });                                                                                         \
    cls.def("__r" #DUNDER "__", [](const T& b, py::handle o) {                                  \
      return binary(                                                                            \
          b, o, [](const T& b, const T& a) { return gt::NAME(a, b); },                          \
          [](const T& b, gt::Scalar a) { return gt::NAME(a, b); });                             \
    });                                                                                         \
  }
  // Comparisons (-> bool tensors). Python reflects `2 < t` to `t > 2` itself. (__hash__ is
  // defined by identity in tensor.cpp, before __eq__, so tensors stay hashable.)
#define GT_API_COMPARE(NAME)                                                                     \
  cls.def(#NAME, [](const T& a, const T& b) { return a.NAME(b); }, "other"_a);                  \
  cls.def(#NAME, [](const T& a, PyScalar b) { return a.NAME(b.get()); }, "other"_a);            \
  cls.def("__" #NAME "__", [](const T& a, py::handle o) {                                       \
    return binary(                                                                              \
        a, o, [](const T& a, const T& b) { return a.NAME(b); },                                 \
        [](const T& a, gt::Scalar b) { return a.NAME(b); });                                    \
  });
#define GT_API_UNARY(NAME, FUNCTIONAL) cls.def(#NAME, [](const T& a) { return a.NAME(); });
#define GT_API_REDUCE(NAME) GT_PY_REDUCTION(NAME)
#define GT_API_REDUCE_INDEXED(NAME, INDEX_OP) GT_PY_INDEXED_REDUCTION(NAME, NAME##imum)
#include "gt/tensor_api.def"
  // Logical reductions (bool results).
  GT_PY_REDUCTION(any)
  GT_PY_REDUCTION(all)

  cls.def("__matmul__", [](const T& a, py::handle o) {
    return binary(a, o, [](const T& a, const T& b) { return a.matmul(b); }, nullptr);
  });
  cls.def("__rmatmul__", [](const T& b, py::handle o) {
    return binary(b, o, [](const T& b, const T& a) { return a.matmul(b); }, nullptr);
  });

  cls.def("__neg__", [](const T& a) { return a.neg(); })
      .def("__pos__", [](const T& a) { return a; })
      .def("__abs__", [](const T& a) { return a.abs(); })
      .def("__invert__", [](const T& a) { return a.bitwise_not(); })
      .def("bitwise_not", [](const T& a) { return a.bitwise_not(); });

  cls.def("matmul", &T::matmul)
      .def("mm", &T::matmul)
      .def("bmm", [](const T& a, const T& b) { return gt::bmm(a, b); }, "mat2"_a)
      .def(
          "repeat",
          [](const T& a, py::args sizes) { return gt::repeat(a, dims_from_args(sizes, "repeat")); },
          "t.repeat(*sizes): tiles the tensor (torch.Tensor.repeat).")
      .def(
          "clamp",
          [](const T& a, std::optional<PyScalar> lo, std::optional<PyScalar> hi) {
            // Python ints stay integers (an int tensor with int bounds keeps its dtype).
            return a.clamp(lo ? std::optional<gt::Scalar>(lo->get()) : std::nullopt,
                           hi ? std::optional<gt::Scalar>(hi->get()) : std::nullopt);
          },
          "min"_a = py::none(), "max"_a = py::none());

  // ---- unary ------------------------------------------------------------------------------------
  cls.def("softmax", [](const T& a, int64_t dim) { return gt::softmax(a, dim); }, "dim"_a = -1)
      .def(
          "log_softmax", [](const T& a, int64_t dim) { return gt::log_softmax(a, dim); },
          "dim"_a = -1);

  // ---- reductions -------------------------------------------------------------------------------
  cls.def(
      "logsumexp",
      [](const T& a, py::handle dim, bool keepdim) {
        std::optional<std::vector<int64_t>> d = reduce_dims(dim, py::none(), false, "logsumexp");
        if (!d) return keepdim ? a.logsumexp().reshape(std::vector<int64_t>(a.dim(), 1))
                               : a.logsumexp();
        return reduce_merged(a, *d, keepdim,
                             [](const T& x, int64_t i, bool k) { return x.logsumexp(i, k); },
                             "logsumexp");
      },
      "dim"_a = py::none(), "keepdim"_a = false);
  // var(dim=None, unbiased=True, keepdim=False, *, correction=None) as torch.var; numpy's
  // axis/keepdims are accepted too (ddof as correction).
  // std: the square root of the same variance.
  cls.def("var", variance<false>, "dim"_a = py::none(), "unbiased"_a = py::none(),
          "keepdim"_a = false, py::kw_only(), "axis"_a = py::none(), "keepdims"_a = py::none(),
          "correction"_a = py::none(), "ddof"_a = py::none());
  cls.def("std", variance<true>, "dim"_a = py::none(), "unbiased"_a = py::none(),
          "keepdim"_a = false, py::kw_only(), "axis"_a = py::none(), "keepdims"_a = py::none(),
          "correction"_a = py::none(), "ddof"_a = py::none());
  cls.def("isclose", &T::isclose, "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8,
          "equal_nan"_a = false)
      .def("allclose", &T::allclose, "other"_a, "rtol"_a = 1e-5, "atol"_a = 1e-8,
           "equal_nan"_a = false, "A sync point: isclose everywhere (torch.allclose).")
      .def("equal", &T::equal, "other"_a,
           "A sync point: the same shape and every element equal (torch.equal).");
  cls.def("cumsum", &T::cumsum, "dim"_a, "Running sums along dim (torch.cumsum).");

  // ---- sorting: always stable (torch's stable=True order, a valid stable=False one) ----------
  cls.def(
         "argsort",
         [](const T& t, int64_t dim, bool descending, bool) { return t.argsort(dim, descending); },
         "dim"_a = -1, "descending"_a = false, py::kw_only(), "stable"_a = false,
         "Positions that sort t along dim (torch.argsort; NaN sorts above every number).")
      .def(
          "sort",
          [](const T& t, int64_t dim, bool descending, bool) {
            return indexed_result("sort", t.sort(dim, descending));
          },
          "dim"_a = -1, "descending"_a = false, py::kw_only(), "stable"_a = false,
          "(values, indices) sorted along dim, stably (torch.sort).")
      .def(
          "topk",
          [](const T& t, int64_t k, int64_t dim, bool largest, bool sorted) {
            return indexed_result("topk", t.topk(k, dim, largest, sorted));
          },
          "k"_a, "dim"_a = -1, "largest"_a = true, "sorted"_a = true,
          "(values, indices) of the k largest (or smallest) along dim (torch.topk).")
      .def("msort", &T::msort, "The values sorted along dim 0 (torch.msort).");

  // ---- layout -------------------------------------------------------------------------------------
  cls.def("reshape", [](const T& a, py::args shape) { return a.reshape(dims_from_args(shape, "reshape")); })
      .def("view", [](const T& a, py::args shape) { return a.view(dims_from_args(shape, "view")); })
      .def("permute", [](const T& a, py::args dims) { return a.permute(dims_from_args(dims, "permute")); })
      .def(
          "flatten",
          [](const T& a, int64_t start, int64_t end) {
            if (a.dim() == 0) return a.reshape(std::vector<int64_t>{1});
            return gt::flatten(a, start, end);
          },
          "start_dim"_a = 0, "end_dim"_a = -1)
      .def(
          "transpose",
          [](const T& a, py::args dims) {
            if (dims.size() == 0) return transpose_last(a);
            if (dims.size() != 2)
              throw gt::Error("transpose: expects no dims (the last two) or two dims, got " +
                              std::to_string(dims.size()));
            return a.transpose(dims[0].cast<int64_t>(), dims[1].cast<int64_t>());
          },
          "transpose() swaps the last two dims; transpose(d0, d1) swaps d0 and d1.")
      .def_property_readonly("T", &reverse_dims, "All dims reversed (PyTorch's x.T).")
      .def_property_readonly("mT", &transpose_last, "The last two dims swapped (batched matrix transpose).")
      .def("t", &T::t)
      .def("unsqueeze", &T::unsqueeze, "dim"_a)
      .def(
          "squeeze",
          [](const T& a, py::object d) {
            if (d.is_none()) return a.squeeze();
            return a.squeeze(d.cast<int64_t>());
          },
          "dim"_a = py::none())
      // torch names the size `split_size` on the method and `split_size_or_sections` on
      // torch.split: both keywords are accepted (the second overload is tried for the first).
      .def("split", split_tensor, "split_size_or_sections"_a, "dim"_a = 0)
      .def("split", split_tensor, "split_size"_a, "dim"_a = 0)
      .def(
          "chunk", [](const T& a, int64_t chunks, int64_t dim) { return to_tuple(gt::chunk(a, chunks, dim)); },
          "chunks"_a, "dim"_a = 0)
      .def("contiguous", &T::contiguous)
      .def("is_contiguous", &T::is_contiguous)
      .def(
          "stride",
          [](const T& a, py::object dim) -> py::object {
            std::vector<int64_t> st = a.stride();
            if (dim.is_none()) return py::tuple(py::cast(st));
            return py::int_(st[static_cast<size_t>(gt::wrap_dim(dim.cast<int64_t>(), a.dim(), "stride"))]);
          },
          "dim"_a = py::none(), "Strides in elements (PyTorch's): views share their base's elements.")
      .def("storage_offset", &T::storage_offset)
      .def("_is_view", &T::is_view)
      .def("expand", [](const T& a, py::args shape) { return a.expand(dims_from_args(shape, "expand")); })
      .def("expand_as", &T::expand_as, "other"_a);

  // ---- index tensors (values are checked on the worker: out of range fails at the next sync) ---
  cls.def("index_select", &T::index_select, "dim"_a, "index"_a)
      .def("gather", &T::gather, "dim"_a, "index"_a)
      .def("scatter_add", &T::scatter_add, "dim"_a, "index"_a, "src"_a)
      .def("index_add", &T::index_add, "dim"_a, "index"_a, "source"_a)
      .def(
          "masked_fill", [](const T& a, const T& mask, PyScalar v) { return a.masked_fill(mask, v.get()); },
          "mask"_a, "value"_a)
      .def(
          "masked_select",
          [](const T& a, const T& mask) { return released([&] { return a.masked_select(mask); }); },
          "mask"_a, "The elements where mask (broadcast) is true, 1-d (a sync point).")
      .def(
          "index_copy_",
          [](py::object self, int64_t dim, const T& index, const T& source) {
            self.cast<const T&>().index_copy_(dim, index, source);
            return self;
          },
          "dim"_a, "index"_a, "source"_a);

  // ---- dtype conversion ---------------------------------------------------------------------------
  cls.def("type", [](const T& a, py::handle dtype) { return a.to(to_dtype(dtype)); }, "dtype"_a)
      .def("float", [](const T& a) { return a.to(gt::kFloat32); })
      .def("half", [](const T& a) { return a.to(gt::kFloat16); })
      .def("bfloat16", [](const T& a) { return a.to(gt::kBFloat16); })
      .def("int", [](const T& a) { return a.to(gt::kInt32); })
      .def("long", [](const T& a) { return a.to(gt::kInt64); })
      .def("bool", [](const T& a) { return a.to(gt::kBool); })
      .def("double", [](const T& a) { return a.to(gt::kFloat64); })
      .def("char", [](const T& a) { return a.to(gt::kInt8); })
      .def("byte", [](const T& a) { return a.to(gt::kUInt8); });
  // The rows themselves, for the Python-level free functions (gt.exp(t), gt.add(a, b), ...) and
  // gt.nn.functional (python/gt/_tensor.py, python/gt/nn/functional.py).
  py::dict api;
  py::list unary, functional, binary, compare, reduce;
#define GT_API_UNARY(NAME, FUNCTIONAL) \
  unary.append(#NAME);                 \
  if (FUNCTIONAL) functional.append(#NAME);
#define GT_API_BINARY(NAME, DUNDER) binary.append(#NAME);
#define GT_API_COMPARE(NAME) compare.append(#NAME);
#define GT_API_REDUCE(NAME) reduce.append(#NAME);
#define GT_API_REDUCE_INDEXED(NAME, INDEX_OP) reduce.append(#NAME);
#include "gt/tensor_api.def"
  api["unary"] = unary;
  api["functional"] = functional;
  api["binary"] = binary;
  api["compare"] = compare;
  api["reduce"] = reduce;
  m.attr("_api") = api;
}

}  // namespace gtpy
