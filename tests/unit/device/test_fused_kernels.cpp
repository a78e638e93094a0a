// Fused-chain kernels generated at run time (workerd/device/fused_kernel_source.h) and their cache
// (fused_kernel_cache.h), with a fake compiler: signatures name the whole dataflow (the side the
// chain's value is on, how an operand lines up), the program holds each step in order, a launch's
// parameters describe the operands' broadcasts, and compiled binaries are reused from memory and
// from disk -- never a damaged one, one of another key or one of another compiler -- and are
// compiled off the caller's thread. (test_nvrtc_programs compiles the programs with NVRTC.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "workerd/backend.h"
#include "workerd/device/fused_kernel_cache.h"
#include "workerd/device/fused_kernel_source.h"

using namespace gt;
using namespace gt::worker;
using namespace gt::worker::device;

namespace {

FusedKernelSignature sig(std::vector<FusedKernelStep> steps) { return {std::move(steps)}; }

const FusedKernelSignature kChain = sig({{OpId::k_mul, FusedArg::kScalar},
                                         {OpId::k_add, FusedArg::kTensor, false, OperandMode::kRepeat},
                                         {OpId::k_relu},
                                         {OpId::k_sub, FusedArg::kScalar, true},
                                         {OpId::k_exp}});

// Compiles by returning "bin:" + the program's name, counting calls; fails for names in `bad`.
struct FakeCompiler final : KernelCompiler {
  std::string ident = "fake 1.0";
  std::atomic<int>* calls;
  std::vector<std::string> bad;
  explicit FakeCompiler(std::atomic<int>* c) : calls(c) {}
  std::string id() const override { return ident; }
  Result<std::string> compile(const FusedKernelSource& src) override {
    ++*calls;
    for (const std::string& b : bad)
      if (src.key == b) return internal_error("cannot compile {}", src.name);
    return "bin:" + src.name;
  }
};

// Loads a binary as a handle that remembers it (checked against the program's name).
struct Loaded {
  std::vector<std::unique_ptr<std::string>> binaries;
  FusedKernelCache::Loader loader() {
    return [this](const std::string& bin, const std::string& name) -> Result<void*> {
      if (bin != "bin:" + name) return data_loss("binary {} is not {}'s", bin, name);
      binaries.push_back(std::make_unique<std::string>(bin));
      return static_cast<void*>(binaries.back().get());
    };
  }
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("gt_fused_kernels_" + std::to_string(::getpid()) + "_" + std::to_string(rand()));
    std::filesystem::remove_all(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::vector<std::filesystem::path> files() const {
    std::vector<std::filesystem::path> v;
    if (std::filesystem::exists(path))
      for (const auto& e : std::filesystem::directory_iterator(path)) v.push_back(e.path());
    return v;
  }
};

Tensor tensor(std::vector<float>& data, Shape s) {
  Tensor t;
  t.meta = TensorMeta{s, DType::kFloat32};
  t.storage = std::make_shared<Storage>(data.data(), data.size() * 4, data.size() * 4, nullptr);
  return t;
}

}  // namespace

TEST_CASE("a fused kernel's signature names its whole dataflow", "[device][fused]") {
  const std::string key = kChain.key();
  CHECK(key == sig(kChain.steps).key());  // the same structure, the same key
  auto changed = [&](auto edit) {
    FusedKernelSignature s = kChain;
    edit(s.steps);
    return s.key();
  };
  // The same op names with the value on the other side (2 - x against x - 2) is another kernel.
  CHECK(changed([](auto& st) { st[3].value_right = false; }) != key);
  CHECK(changed([](auto& st) { st[1].value_right = true; }) != key);
  CHECK(changed([](auto& st) { st[1].mode = OperandMode::kGather; }) != key);
  CHECK(changed([](auto& st) { st[1].mode = OperandMode::kSame; }) != key);
  CHECK(changed([](auto& st) { st[0].arg = FusedArg::kTensor; }) != key);
  CHECK(changed([](auto& st) { st[2].op = OpId::k_sigmoid; }) != key);
  CHECK(changed([](auto& st) { std::swap(st[2], st[4]); }) != key);
  const FusedKernelSource src = fused_kernel_source(kChain);
  CHECK(src.key == key);
  CHECK(src.name.rfind("gt_fused_", 0) == 0);
  CHECK(src.name.size() == 9 + 16);
  CHECK(fused_kernel_source(sig({{OpId::k_relu}, {OpId::k_exp}})).name != src.name);
}

TEST_CASE("a fused kernel's program holds each step in order, the value on its side",
          "[device][fused]") {
  const std::string p = fused_kernel_source(kChain).source;
  const std::vector<std::string> steps = {
      "v = BinaryFn<OpId::k_mul>::f(v, s0);",
      "v = BinaryFn<OpId::k_add>::f(v, t1.p[i % t1.period]);",
      "v = UnaryFn<OpId::k_relu>::f(v);",
      "v = BinaryFn<OpId::k_sub>::f(s3, v);",
      "v = UnaryFn<OpId::k_exp>::f(v);",
  };
  size_t at = p.find("float v = head[i];");
  REQUIRE(at != std::string::npos);
  for (const std::string& s : steps) {
    const size_t next = p.find(s, at);
    INFO(s);
    REQUIRE(next != std::string::npos);
    // Each step's result is kept as a float before the next reads it.
    const std::string done = "\n    gt_step_done(v);\n";
    CHECK(p.compare(next + s.size(), done.size(), done) == 0);
    at = next;
  }
  CHECK(p.find("out[i] = v;", at) != std::string::npos);
  CHECK(p.find("const float s0, const GtOperand t1, const float s3)") != std::string::npos);
  CHECK(p.find("#include \"workerd/kernels/elementwise_math.h\"") != std::string::npos);
  // Every header the program reaches is compiled in.
  std::vector<std::string> names;
  for (const RtcHeader& h : rtc_headers()) {
    names.push_back(h.name);
    CHECK(std::string(h.text).size() > 100);
  }
  for (const char* want : {"workerd/kernels/elementwise_math.h", "workerd/kernels/numeric.h",
                           "workerd/kernels/rtc_std.h", "gt/core/op_id.h", "gt/core/ops.def"})
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
}

TEST_CASE("a launch's parameters describe each operand's broadcast", "[device][fused]") {
  std::vector<float> x(6 * 5), bias(5), col(6), one(1), same(30);
  Tensor head = tensor(x, Shape{6, 5}), out = tensor(same, Shape{6, 5});
  Tensor b = tensor(bias, Shape{5}), c = tensor(col, Shape{6, 1}), o = tensor(one, Shape{1, 1});
  std::vector<float> same2(30);
  Tensor s = tensor(same2, Shape{6, 5});
  std::vector<FusedStep> steps = {
      {OpId::k_mul, FusedArg::kScalar, false, 1.5f},
      {OpId::k_add, FusedArg::kTensor, false, 0, &b},
      {OpId::k_sub, FusedArg::kTensor, true, 0, &c},
      {OpId::k_relu},
      {OpId::k_div, FusedArg::kTensor, false, 0, &o},
      {OpId::k_maximum, FusedArg::kTensor, false, 0, &s},
  };
  FusedArgs args{head, steps, out, 1};
  const FusedKernelSignature g = signature_of(args);
  REQUIRE(g.steps.size() == 6);
  CHECK(g.steps[1].mode == OperandMode::kRepeat);
  CHECK(g.steps[2].mode == OperandMode::kGather);
  CHECK(g.steps[2].value_right);
  CHECK(g.steps[4].mode == OperandMode::kOne);
  CHECK(g.steps[5].mode == OperandMode::kSame);
  FusedLaunchParams p;
  fill_launch_params(args, g, p);
  // head, out, n, then one per step with an operand: the scalar and four tensors.
  REQUIRE(p.pointers.size() == 3 + 5);
  CHECK(*static_cast<const float* const*>(p.pointers[0]) == x.data());
  CHECK(*static_cast<float* const*>(p.pointers[1]) == same.data());
  CHECK(*static_cast<const int64_t*>(p.pointers[2]) == 30);
  CHECK(*static_cast<const float*>(p.pointers[3]) == 1.5f);
  const auto& bias_p = *static_cast<const FusedOperandParam*>(p.pointers[4]);
  CHECK(bias_p.p == bias.data());
  CHECK(bias_p.period == 5);
  const auto& col_p = *static_cast<const FusedOperandParam*>(p.pointers[5]);
  CHECK(col_p.p == col.data());
  REQUIRE(col_p.rank == 2);
  CHECK(col_p.size[0] == 6);
  CHECK(col_p.size[1] == 5);
  CHECK(col_p.stride[0] == 1);  // one value per row
  CHECK(col_p.stride[1] == 0);  // the same along the row
  // The gather rule against the broadcast itself: element (r, k) reads col[r].
  for (int64_t i = 0; i < 30; ++i) {
    int64_t off = 0, rest = i;
    for (int d = col_p.rank - 1; d >= 0; --d) {
      off += (rest % col_p.size[d]) * col_p.stride[d];
      rest /= col_p.size[d];
    }
    CHECK(off == i / 5);
  }
  CHECK(static_cast<const FusedOperandParam*>(p.pointers[6])->p == one.data());
  CHECK(static_cast<const FusedOperandParam*>(p.pointers[7])->p == same2.data());
}

TEST_CASE("compiled kernels are reused from memory and from disk", "[device][fused]") {
  TempDir dir;
  std::atomic<int> calls{0};
  Loaded loaded;
  FusedKernelCache::Options o{dir.path.string(), true};
  void* first = nullptr;
  {
    FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
    first = cache.find(kChain);
    REQUIRE(first != nullptr);
    CHECK(*static_cast<std::string*>(first) == "bin:" + fused_kernel_source(kChain).name);
    CHECK(cache.find(kChain) == first);  // from memory: no second compile or load
    CHECK(calls == 1);
    CHECK(cache.stats().compiled == 1);
    CHECK(cache.stats().disk_writes == 1);
    CHECK(cache.stats().ready == 1);
  }
  REQUIRE(dir.files().size() == 1);
  CHECK(dir.files()[0].filename().string().rfind(fused_kernel_source(kChain).name, 0) == 0);
  // The directory the cache made is its user's alone.
  CHECK((std::filesystem::status(dir.path).permissions() & std::filesystem::perms::all) ==
        std::filesystem::perms::owner_all);
  {  // a restarted worker: read back, not compiled
    FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
    CHECK(cache.find(kChain) != nullptr);
    CHECK(calls == 1);
    CHECK(cache.stats().disk_hits == 1);
    CHECK(cache.stats().compiled == 0);
  }
  {  // another compiler (another NVRTC, another GPU): its own file, compiled
    auto c = std::make_unique<FakeCompiler>(&calls);
    c->ident = "fake 2.0";
    FusedKernelCache cache(o, std::move(c), loaded.loader());
    CHECK(cache.find(kChain) != nullptr);
    CHECK(calls == 2);
    CHECK(cache.stats().disk_hits == 0);
  }
  CHECK(dir.files().size() == 2);
}

TEST_CASE("a damaged or foreign cached kernel is compiled again and replaced", "[device][fused]") {
  TempDir dir;
  std::atomic<int> calls{0};
  Loaded loaded;
  FusedKernelCache::Options o{dir.path.string(), true};
  const FusedKernelSignature other = sig({{OpId::k_tanh}, {OpId::k_neg}});
  {
    FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
    REQUIRE(cache.find(kChain) != nullptr);
    REQUIRE(cache.find(other) != nullptr);
  }
  REQUIRE(dir.files().size() == 2);
  const std::string name = fused_kernel_source(kChain).name;
  std::filesystem::path mine, theirs;
  for (const auto& f : dir.files())
    (f.filename().string().rfind(name, 0) == 0 ? mine : theirs) = f;
  auto reread = [&] {
    FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
    const int before = calls;
    void* k = cache.find(kChain);
    REQUIRE(k != nullptr);
    CHECK(*static_cast<std::string*>(k) == "bin:" + name);  // never the other kernel's binary
    return calls - before;
  };
  SECTION("truncated") {
    std::filesystem::resize_file(mine, std::filesystem::file_size(mine) - 3);
    CHECK(reread() == 1);
    CHECK(reread() == 0);  // replaced by a good one
  }
  SECTION("another kernel's file under this name (a hash collision)") {
    std::filesystem::copy_file(theirs, mine, std::filesystem::copy_options::overwrite_existing);
    CHECK(reread() == 1);
    CHECK(reread() == 0);
  }
  SECTION("a file others may write (not trusted as code)") {
    std::filesystem::permissions(mine, std::filesystem::perms::group_write,
                                 std::filesystem::perm_options::add);
    CHECK(reread() == 1);
    CHECK(reread() == 0);  // replaced by the worker's own
    CHECK((std::filesystem::status(mine).permissions() & std::filesystem::perms::group_write) ==
          std::filesystem::perms::none);
  }
  SECTION("garbage") {
    std::ofstream(mine, std::ios::trunc) << "GTKERNEL1\nnot a key\n";
    CHECK(reread() == 1);
  }
  SECTION("a size far beyond any kernel") {
    std::string text;
    {
      std::ifstream in(mine, std::ios::binary);
      text.assign(std::istreambuf_iterator<char>(in), {});
    }
    const size_t size_at = text.find('\n', text.find('\n', text.find('\n') + 1) + 1) + 1;
    text.replace(size_at, text.find('\n', size_at) - size_at, "99999999999999");
    std::ofstream(mine, std::ios::binary | std::ios::trunc) << text;
    CHECK(reread() == 1);
  }
}

TEST_CASE("a kernel that fails to compile or load runs op by op for good, logged once",
          "[device][fused]") {
  std::atomic<int> calls{0};
  Loaded loaded;
  auto c = std::make_unique<FakeCompiler>(&calls);
  c->bad = {kChain.key()};
  FusedKernelCache cache({"", true}, std::move(c), loaded.loader());
  CHECK(cache.find(kChain) == nullptr);
  CHECK(cache.find(kChain) == nullptr);
  CHECK(calls == 1);  // not compiled again
  CHECK(cache.stats().failed == 1);
  const FusedKernelSignature fine = sig({{OpId::k_relu}, {OpId::k_exp}});
  CHECK(cache.find(fine) != nullptr);  // other kernels are unaffected

  FusedKernelCache unloadable({"", true}, std::make_unique<FakeCompiler>(&calls),
                              [](const std::string&, const std::string&) -> Result<void*> {
                                return internal_error("no such device");
                              });
  CHECK(unloadable.find(fine) == nullptr);
  CHECK(unloadable.stats().failed == 1);
  CHECK(unloadable.stats().ready == 0);
}

TEST_CASE("a cache directory that cannot be written keeps kernels in memory", "[device][fused]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path);
  const std::filesystem::path file = dir.path / "a_file";
  std::ofstream(file) << "x";
  std::atomic<int> calls{0};
  Loaded loaded;
  // A directory below a regular file can never be created.
  FusedKernelCache cache({(file / "kernels").string(), true},
                         std::make_unique<FakeCompiler>(&calls), loaded.loader());
  void* k = cache.find(kChain);
  CHECK(k != nullptr);
  CHECK(cache.find(kChain) == k);
  CHECK(cache.find(sig({{OpId::k_relu}, {OpId::k_exp}})) != nullptr);
  CHECK(calls == 2);
  CHECK(cache.stats().disk_writes == 0);
  CHECK(dir.files().size() == 1);  // only the file
}

TEST_CASE("kernels compile off the caller's thread, the caller is answered at once",
          "[device][fused]") {
  std::atomic<int> calls{0};
  Loaded loaded;
  FusedKernelCache cache({"", false}, std::make_unique<FakeCompiler>(&calls), loaded.loader());
  CHECK(cache.find(kChain) == nullptr);  // queued: the chain runs op by op this time
  cache.wait_idle();
  void* k = cache.find(kChain);
  REQUIRE(k != nullptr);
  CHECK(calls == 1);
  // Many keys queued at once all become ready, each compiled once.
  std::vector<FusedKernelSignature> sigs;
  for (OpId op : {OpId::k_relu, OpId::k_exp, OpId::k_tanh, OpId::k_sigmoid, OpId::k_neg})
    sigs.push_back(sig({{op}, {OpId::k_abs}}));
  for (const auto& s : sigs) CHECK(cache.find(s) == nullptr);
  cache.wait_idle();
  for (const auto& s : sigs) CHECK(cache.find(s) != nullptr);
  CHECK(calls == 6);
}

TEST_CASE("the kernels a device holds are bounded, beyond, chains run op by op",
          "[device][fused]") {
  std::atomic<int> calls{0};
  Loaded loaded;
  FusedKernelCache::Options o{"", true};
  o.max_kernels = 3;
  FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
  std::vector<FusedKernelSignature> sigs;
  for (OpId op : {OpId::k_relu, OpId::k_exp, OpId::k_tanh, OpId::k_sigmoid, OpId::k_neg})
    sigs.push_back(sig({{op}, {OpId::k_abs}}));
  for (size_t i = 0; i < 3; ++i) CHECK(cache.find(sigs[i]) != nullptr);
  CHECK(cache.find(sigs[3]) == nullptr);
  CHECK(cache.find(sigs[4]) == nullptr);
  CHECK(cache.find(sigs[0]) != nullptr);  // those held keep working
  CHECK(calls == 3);
  CHECK(cache.stats().refused == 2);
}

TEST_CASE("the cache directory keeps at most max_disk_files kernels, the newest",
          "[device][fused]") {
  TempDir dir;
  std::filesystem::create_directories(dir.path);
  // Five older kernels of earlier runs, and a file of another kind that is not the cache's.
  const auto old_time = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (int i = 0; i < 5; ++i) {
    const auto f = dir.path / ("gt_fused_old" + std::to_string(i) + ".0.gtk");
    std::ofstream(f) << "GTKERNEL1\n";
    std::filesystem::last_write_time(f, old_time + std::chrono::minutes(i));
  }
  std::ofstream(dir.path / "notes.txt") << "x";
  std::atomic<int> calls{0};
  Loaded loaded;
  FusedKernelCache::Options o{dir.path.string(), true};
  o.max_disk_files = 3;
  FusedKernelCache cache(o, std::make_unique<FakeCompiler>(&calls), loaded.loader());
  REQUIRE(cache.find(kChain) != nullptr);
  std::vector<std::string> names;
  for (const auto& f : dir.files()) names.push_back(f.filename().string());
  std::sort(names.begin(), names.end());
  const std::string written = fused_kernel_source(kChain).name + ".";
  auto has = [&](const std::string& prefix) {
    return std::any_of(names.begin(), names.end(),
                       [&](const std::string& n) { return n.rfind(prefix, 0) == 0; });
  };
  CHECK(names.size() == 4);
  CHECK(has(written));                  // the one just written
  CHECK(has("gt_fused_old3.0.gtk"));    // and the two newest of the old ones
  CHECK(has("gt_fused_old4.0.gtk"));
  CHECK(has("notes.txt"));              // another kind of file is left alone
  CHECK_FALSE(has("gt_fused_old2"));
}
