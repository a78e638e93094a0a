#include "tests/unit/cpu/cpu_test_util.h"

#include <cstring>
#include <sstream>

#include "gt/core/half.h"
#include "require_ok.h"

namespace gt::test {

std::set<std::string>& claimed_ops() {
  static std::set<std::string> s;
  return s;
}

ClaimOps::ClaimOps(std::initializer_list<const char*> ops) {
  for (const char* o : ops) claimed_ops().insert(o);
}
ClaimOps::ClaimOps(const std::vector<OpId>& ops) {
  for (OpId o : ops) claimed_ops().insert(op_name(o));
}

double quantize(double v, DType dt) {
  switch (dt) {
    case DType::kFloat32: return static_cast<double>(static_cast<float>(v));
    case DType::kFloat16:
      return static_cast<double>(static_cast<float>(half(static_cast<float>(v))));
    case DType::kBFloat16:
      return static_cast<double>(static_cast<float>(bfloat16(static_cast<float>(v))));
    case DType::kInt32: return static_cast<double>(static_cast<int32_t>(v));
    case DType::kInt64: return static_cast<double>(static_cast<int64_t>(v));
    case DType::kBool: return v != 0 ? 1.0 : 0.0;
    case DType::kFloat64: return v;
    case DType::kInt8: return static_cast<double>(static_cast<int8_t>(v));
    case DType::kUInt8: return static_cast<double>(static_cast<uint8_t>(v));
  }
  return v;
}

Tensor make_tensor(CpuBackend& be, const Shape& s, DType dt, const std::vector<double>& vals) {
  TensorMeta m{s, dt};
  REQUIRE(static_cast<int64_t>(vals.size()) == s.numel());
  auto st = be.alloc(static_cast<size_t>(m.nbytes()));
  GT_REQUIRE_OK(st);
  Tensor t{m, *st, nullptr};
  void* p = t.storage->data();
  for (size_t i = 0; i < vals.size(); ++i) {
    double v = vals[i];
    switch (dt) {
      case DType::kFloat32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
      case DType::kFloat16: static_cast<half*>(p)[i] = half(static_cast<float>(v)); break;
      case DType::kBFloat16: static_cast<bfloat16*>(p)[i] = bfloat16(static_cast<float>(v)); break;
      case DType::kInt32: static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v); break;
      case DType::kInt64: static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v); break;
      case DType::kBool: static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0; break;
      case DType::kFloat64: static_cast<double*>(p)[i] = v; break;
      case DType::kInt8: static_cast<int8_t*>(p)[i] = static_cast<int8_t>(v); break;
      case DType::kUInt8: static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(v); break;
    }
  }
  return t;
}

std::vector<double> to_doubles(CpuBackend& be, const Tensor& t) {
  const int64_t n = t.meta.shape.numel();
  const size_t es = dtype_size(t.meta.dtype);
  std::vector<unsigned char> raw(static_cast<size_t>(n) * es);
  if (n > 0) GT_REQUIRE_OK(be.copy_to_host(t, 0, raw.data(), raw.size(), 0));
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const unsigned char* p = raw.data() + static_cast<size_t>(i) * es;
    switch (t.meta.dtype) {
      case DType::kFloat32: { float f; std::memcpy(&f, p, 4); out[i] = f; break; }
      case DType::kFloat16: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        out[i] = half::to_float(b);
        break;
      }
      case DType::kBFloat16: {
        uint16_t b;
        std::memcpy(&b, p, 2);
        uint32_t u = static_cast<uint32_t>(b) << 16;
        float f;
        std::memcpy(&f, &u, 4);
        out[i] = f;
        break;
      }
      case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); out[i] = v; break; }
      case DType::kInt64: {
        int64_t v;
        std::memcpy(&v, p, 8);
        out[i] = static_cast<double>(v);
        break;
      }
      case DType::kBool: {
        REQUIRE((*p == 0 || *p == 1));  // a bool result must be a canonical 0/1 byte
        out[i] = *p;
        break;
      }
      case DType::kFloat64: { double d; std::memcpy(&d, p, 8); out[i] = d; break; }
      case DType::kInt8: out[i] = static_cast<int8_t>(*p); break;
      case DType::kUInt8: out[i] = *p; break;
    }
  }
  return out;
}

std::vector<double> random_values(std::mt19937& rng, int64_t n, DType dt, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  if (dt == DType::kBool) {
    std::uniform_int_distribution<int> d(0, 1);
    for (auto& x : v) x = d(rng);
  } else if (is_integral(dt)) {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (auto& x : v) x = static_cast<double>(d(rng));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (auto& x : v) x = quantize(d(rng), dt);
  }
  return v;
}

Result<Tensor> try_run(CpuBackend& be, OpId op, const std::vector<const Tensor*>& ins,
                       const OpAttrs& attrs) {
  std::vector<TensorMeta> metas;
  for (const Tensor* t : ins) metas.push_back(t->meta);
  GT_ASSIGN_OR_RETURN(TensorMeta m, infer_meta(op, metas, attrs));
  GT_ASSIGN_OR_RETURN(auto st, be.alloc(static_cast<size_t>(m.nbytes())));
  Tensor out{m, st, nullptr};
  worker::KernelArgs args{op, attrs, ins, out, 0};
  GT_RETURN_IF_ERROR(be.run(args));
  return out;
}

Tensor run_op(CpuBackend& be, OpId op, const std::vector<const Tensor*>& ins,
              const OpAttrs& attrs) {
  INFO("op " << op_name(op));
  REQUIRE(claimed_ops().count(op_name(op)) == 1);  // every op a test runs is in the registry
  auto r = try_run(be, op, ins, attrs);
  INFO(r.status().to_string());
  GT_REQUIRE_OK(r);
  return std::move(r).value();
}

void run_in_place(CpuBackend& be, OpId op, Tensor& dst, const std::vector<const Tensor*>& ins,
                  const OpAttrs& attrs) {
  INFO("op " << op_name(op));
  REQUIRE(claimed_ops().count(op_name(op)) == 1);
  REQUIRE(ins.at(0) == &dst);
  std::vector<TensorMeta> metas;
  for (const Tensor* t : ins) metas.push_back(t->meta);
  auto m = infer_meta(op, metas, attrs);
  INFO(m.status().to_string());
  GT_REQUIRE_OK(m);
  REQUIRE(*m == dst.meta);
  worker::KernelArgs args{op, attrs, ins, dst, 0};
  Status s = be.run(args);
  INFO(s.to_string());
  GT_REQUIRE_OK(s);
}

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
  std::vector<int64_t> idx(static_cast<size_t>(s.rank()));
  for (int d = s.rank() - 1; d >= 0; --d) {
    idx[d] = flat % s[d];
    flat /= s[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t flat = 0;
  for (int d = 0; d < s.rank(); ++d) flat = flat * s[d] + idx[d];
  return flat;
}

int64_t broadcast_source(const std::vector<int64_t>& out_idx, const Shape& in) {
  const int shift = static_cast<int>(out_idx.size()) - in.rank();
  std::vector<int64_t> idx(static_cast<size_t>(in.rank()));
  for (int d = 0; d < in.rank(); ++d) idx[d] = in[d] == 1 ? 0 : out_idx[d + shift];
  return ravel(idx, in);
}

Tol tol_for(DType dt) {
  switch (dt) {
    case DType::kFloat32: return {1e-5, 1e-6};
    case DType::kFloat16: return {2e-3, 1e-4};
    case DType::kBFloat16: return {1.6e-2, 1e-3};
    default: return {0, 0};
  }
}

bool close(double got, double want, Tol t) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  if (std::isnan(got) || std::isinf(got)) return false;
  return std::fabs(got - want) <= t.atol + t.rtol * std::fabs(want);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol,
                 const std::string& what) {
  INFO(what);
  REQUIRE(got.size() == want.size());
  int bad = 0;
  std::ostringstream msg;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!close(got[i], want[i], tol)) {
      if (bad < 8) msg << "  [" << i << "] got " << got[i] << " want " << want[i] << "\n";
      ++bad;
    }
  }
  INFO("mismatches: " << bad << "\n" << msg.str());
  CHECK(bad == 0);
}

void check_close(const std::vector<double>& got, const std::vector<double>& want, DType dt,
                 const std::string& what) {
  check_close(got, want, tol_for(dt), what + " (" + dtype_name(dt) + ")");
}

std::string str(const Shape& s) { return s.str(); }

}  // namespace gt::test
