// The fused-chain programs (workerd/device/fused_kernel_source.h) through NVRTC, which compiles
// without a GPU: every fusable op of ops.def, in every form a step takes (unary; scalar on either
// side; a tensor operand in each broadcast mode, on either side: fused_cases.h, the cases
// test_fused_host runs as host code), compiles for sm_90 into a
// CUBIN -- the shared elementwise math included through rtc_std.h, as a GPU worker compiles it.
// A program NVRTC rejects reports NVRTC's own log. Running them needs a GPU: tests/gpu.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "fused_cases.h"
#include "workerd/cuda/nvrtc_compiler.h"
#include "workerd/fusion.h"

using namespace gt;
using namespace gt::worker;
using namespace gt::worker::device;

namespace {

std::unique_ptr<KernelCompiler> nvrtc() {
  auto c = cuda::make_nvrtc_compiler(90);
  // CI builds with the CUDA toolkit, so libnvrtc is there: its absence is a failure, not a skip.
  INFO((c.is_ok() ? std::string() : c.status().message()));
  REQUIRE(c.is_ok());
  return std::move(*c);
}

bool is_elf(const std::string& bin) { return bin.size() > 64 && bin.compare(0, 4, "\x7f" "ELF") == 0; }

}  // namespace

TEST_CASE("every fusable op compiles with NVRTC in every form a step takes, 16-bit heads and "
          "results too", "[device][nvrtc]") {
  auto compiler = nvrtc();
  CHECK(compiler->id().find("sm_90") != std::string::npos);
  const auto cases = fused_test::cases();
  int unary = 0, binary = 0, mixed = 0;
  for (const FusedKernelSignature& sig : cases) {
    const FusedKernelSource src = fused_kernel_source(sig);
    INFO(src.key);
    auto bin = compiler->compile(src);
    INFO((bin.is_ok() ? std::string() : bin.status().message()));
    REQUIRE(bin.is_ok());
    CHECK(is_elf(*bin));
    CHECK(bin->find(src.name) != std::string::npos);  // the kernel is there under its name
    if (sig.head != DType::kFloat32 || sig.out != DType::kFloat32) ++mixed;
    if (sig.steps.empty()) continue;  // (casts alone)
    const FusedKernelStep& last = sig.steps.back();
    if (sig.steps.size() == 3 && last.arg == FusedArg::kNone) ++unary;
    if (sig.steps[0].arg == FusedArg::kScalar && sig.steps.size() == 12) ++binary;
  }
  CHECK(binary == 6);  // add sub mul div maximum minimum
  CHECK(unary >= 10);
  CHECK(mixed == 5);  // 16-bit heads and results (their conversions in PTX), casts alone
}

TEST_CASE("a program NVRTC rejects reports NVRTC's log", "[device][nvrtc]") {
  auto compiler = nvrtc();
  FusedKernelSource bad = fused_kernel_source({{{OpId::k_relu}, {OpId::k_exp}}});
  bad.source += "\nthis is not CUDA;\n";
  auto bin = compiler->compile(bad);
  REQUIRE_FALSE(bin.is_ok());
  CHECK(bin.status().message().find("NVRTC cannot compile " + bad.name) != std::string::npos);
  CHECK(bin.status().message().find("this") != std::string::npos);  // the log quotes the line
}

TEST_CASE("a GPU newer than NVRTC knows gets PTX for the newest it does", "[device][nvrtc]") {
  auto c = cuda::make_nvrtc_compiler(999);
  REQUIRE(c.is_ok());
  CHECK((*c)->id().find("compute_") != std::string::npos);
  auto ptx = (*c)->compile(fused_kernel_source({{{OpId::k_relu}, {OpId::k_exp}}}));
  REQUIRE(ptx.is_ok());
  CHECK(ptx->find(".entry") != std::string::npos);
  CHECK(ptx->back() == '\0');  // as the loader takes PTX text
  // And one older than every target it knows is refused clearly.
  auto old = cuda::make_nvrtc_compiler(10);
  REQUIRE_FALSE(old.is_ok());
  CHECK(old.status().message().find("no architecture") != std::string::npos);
}
