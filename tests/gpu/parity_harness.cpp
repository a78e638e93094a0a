#include "tests/gpu/parity_harness.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "gt/core/half.h"
#include "libgtcore/shape_rules.h"
#include "require_ok.h"

namespace gt::gpu_test {

bool require_device() { return std::getenv("GT_GPU_TESTS_REQUIRE_DEVICE") != nullptr; }

Backends* backends() {
  static std::unique_ptr<Backends> b = []() -> std::unique_ptr<Backends> {
    if (cuda_device_count() < 1) return nullptr;
    auto gpu = CudaBackend::create(0);
    if (!gpu.is_ok()) return nullptr;
    auto out = std::make_unique<Backends>();
    out->gpu = std::move(gpu).value();
    return out;
  }();
  return b.get();
}

std::string describe(const Shape& s, DType dt) {
  return fmt::format("{} {}", dtype_name(dt), s.str());
}

std::vector<double> random_values(int64_t n, DType dt, std::mt19937& rng, double lo, double hi) {
  std::vector<double> v(static_cast<size_t>(n));
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int> bit(0, 1);
  for (auto& x : v) {
    if (dt == DType::kBool) x = bit(rng);
    else if (is_integral(dt)) x = std::floor(real(rng));
    else x = real(rng);
  }
  return v;
}

namespace {

std::vector<unsigned char> encode(const std::vector<double>& vals, DType dt) {
  const size_t es = dtype_size(dt);
  std::vector<unsigned char> raw(vals.size() * es);
  for (size_t i = 0; i < vals.size(); ++i) {
    unsigned char* p = raw.data() + i * es;
    const double v = vals[i];
    switch (dt) {
      case DType::kFloat32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DType::kFloat16: { half h(static_cast<float>(v)); std::memcpy(p, &h.bits, 2); break; }
      case DType::kBFloat16: {
        bfloat16 h(static_cast<float>(v));
        std::memcpy(p, &h.bits, 2);
        break;
      }
      case DType::kInt32: {  // clamped: out-of-range double -> int32 is undefined behaviour
        const int32_t x = static_cast<int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::kInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
      case DType::kBool: *p = v != 0 ? 1 : 0; break;
      case DType::kFloat64: std::memcpy(p, &v, 8); break;
      case DType::kInt8: *p = static_cast<unsigned char>(static_cast<int8_t>(v)); break;
      case DType::kUInt8: *p = static_cast<unsigned char>(v); break;
    }
  }
  return raw;
}

std::vector<double> decode(const std::vector<unsigned char>& raw, DType dt) {
  const size_t es = dtype_size(dt);
  std::vector<double> out(raw.size() / es);
  for (size_t i = 0; i < out.size(); ++i) {
    const unsigned char* p = raw.data() + i * es;
    switch (dt) {
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
        out[i] = bits_float(static_cast<uint32_t>(b) << 16);
        break;
      }
      case DType::kInt32: { int32_t x; std::memcpy(&x, p, 4); out[i] = x; break; }
      case DType::kInt64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        out[i] = static_cast<double>(x);
        break;
      }
      case DType::kBool: out[i] = *p; break;
      case DType::kFloat64: { double d; std::memcpy(&d, p, 8); out[i] = d; break; }
      case DType::kInt8: out[i] = static_cast<int8_t>(*p); break;
      case DType::kUInt8: out[i] = *p; break;
    }
  }
  return out;
}

}  // namespace

Pair upload(const Shape& s, DType dt, const std::vector<double>& vals, uint64_t session) {
  Backends* b = backends();
  REQUIRE(b != nullptr);
  const TensorMeta m{s, dt};
  const std::vector<unsigned char> raw = encode(vals, dt);
  Pair p;
  auto cs = b->cpu.alloc(static_cast<size_t>(m.nbytes()));
  GT_REQUIRE_OK(cs);
  p.c = Tensor{m, *cs, nullptr};
  if (!raw.empty()) std::memcpy(p.c.storage->data(), raw.data(), raw.size());
  auto gs = b->gpu->alloc(static_cast<size_t>(m.nbytes()));
  GT_REQUIRE_OK(gs);
  p.g = Tensor{m, *gs, nullptr};
  OpAttrs a = make_shape_dtype(s, dt);
  a.data = std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size());
  Status st = b->gpu->run(KernelArgs{OpId::k_from_host, a, {}, p.g, session});
  INFO(st.message());
  GT_REQUIRE_OK(st);
  return p;
}

Pair random_pair(const Shape& s, DType dt, std::mt19937& rng, double lo, double hi,
                 uint64_t session) {
  return upload(s, dt, random_values(s.numel(), dt, rng, lo, hi), session);
}

RunResult run_both(OpId op, const OpAttrs& attrs, const std::vector<const Pair*>& ins,
                   uint64_t session) {
  Backends* b = backends();
  REQUIRE(b != nullptr);
  RunResult r;
  std::vector<TensorMeta> metas;
  std::vector<const Tensor*> cin, gin;
  for (const Pair* p : ins) {
    metas.push_back(p->meta());
    cin.push_back(&p->c);
    gin.push_back(&p->g);
  }
  auto meta = infer_meta(op, metas, attrs);
  if (!meta.is_ok()) return r;
  r.rule_ok = true;
  const size_t nbytes = static_cast<size_t>(meta->nbytes());
  auto cs = b->cpu.alloc(nbytes);
  auto gs = b->gpu->alloc(nbytes);
  GT_REQUIRE_OK(cs);
  GT_REQUIRE_OK(gs);
  r.out.c = Tensor{*meta, *cs, nullptr};
  r.out.g = Tensor{*meta, *gs, nullptr};
  if (nbytes > 0) {
    std::memset(r.out.c.storage->data(), 0xff, nbytes);
    // The block may have been another session's: order it onto this session's stream before
    // the prefill, as run() does for its operands (otherwise the prefill races that work).
    GT_REQUIRE_OK(b->gpu->use_on_session(r.out.g.storage->data(), session));
    auto stream = b->gpu->native_stream(session);
    GT_REQUIRE_OK(stream);
    REQUIRE(cudaMemsetAsync(r.out.g.storage->data(), 0xff, nbytes,
                            static_cast<cudaStream_t>(*stream)) == cudaSuccess);
  }
  r.cpu = b->cpu.run(KernelArgs{op, attrs, cin, r.out.c, session});
  r.gpu = b->gpu->run(KernelArgs{op, attrs, gin, r.out.g, session});
  return r;
}

std::vector<double> fetch_cpu(const Tensor& t) {
  std::vector<unsigned char> raw(static_cast<size_t>(t.meta.nbytes()));
  if (!raw.empty()) std::memcpy(raw.data(), t.storage->data(), raw.size());
  return decode(raw, t.meta.dtype);
}

std::vector<double> fetch_gpu(const Tensor& t, uint64_t session) {
  std::vector<unsigned char> raw(static_cast<size_t>(t.meta.nbytes()));
  Status st = backends()->gpu->copy_to_host(t, 0, raw.data(), raw.size(), session);
  INFO(st.message());
  GT_REQUIRE_OK(st);
  return decode(raw, t.meta.dtype);
}

Tol default_tol(DType dt) {
  switch (dt) {
    case DType::kFloat32: return {1e-5, 1e-6};
    case DType::kFloat16: return {2e-3, 1e-4};
    case DType::kBFloat16: return {1.6e-2, 1e-3};
    default: return {0, 0};
  }
}

void expect_close(const Pair& out, Tol tol, const std::string& what, uint64_t session) {
  const std::vector<double> c = fetch_cpu(out.c);
  const std::vector<double> g = fetch_gpu(out.g, session);
  REQUIRE(c.size() == g.size());
  int bad = 0;
  std::string first;
  for (size_t i = 0; i < c.size(); ++i) {
    const double x = c[i], y = g[i];
    bool ok;
    if (std::isnan(x) || std::isnan(y)) ok = std::isnan(x) && std::isnan(y);
    else if (std::isinf(x) || std::isinf(y)) ok = x == y;
    else ok = std::fabs(x - y) <= tol.atol + tol.rtol * std::fabs(x);
    if (!ok && bad++ < 5) first += fmt::format(" [{}] cpu {} gpu {};", i, x, y);
  }
  INFO(what << ": " << bad << " of " << c.size() << " elements differ:" << first);
  CHECK(bad == 0);
}

RunResult check_op(OpId op, const OpAttrs& attrs, const std::vector<const Pair*>& ins,
                   const std::string& what, Tol tol, uint64_t session) {
  RunResult r = run_both(op, attrs, ins, session);
  if (!r.rule_ok) return r;
  INFO(what << ": cpu status '" << r.cpu.message() << "', gpu status '" << r.gpu.message() << "'");
  // CHECK, not REQUIRE: one failing op must not hide the rest of the case (device time is
  // scarce; a run should report every mismatch at once).
  CHECK(r.cpu.is_ok() == r.gpu.is_ok());
  if (r.cpu.is_ok() != r.gpu.is_ok()) return r;
  if (!r.cpu.is_ok()) {
    CHECK(r.cpu.code() == r.gpu.code());
    return r;
  }
  if (tol.rtol < 0) tol = default_tol(r.out.meta().dtype);
  expect_close(r.out, tol, what, session);
  return r;
}

}  // namespace gt::gpu_test
