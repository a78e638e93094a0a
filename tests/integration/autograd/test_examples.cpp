// Runs the training examples as separate client processes against test daemons (GT_ADDRESS) and
// checks what they print: the MLP reaches >= 95% accuracy, the transformer's loss falls >= 50%.
#include <cstdlib>
#include <fstream>
#include <string>

#include "ag_test_util.h"

using gt::testing::bin_path;
using gt::testing::spawn_process;
using gt::testing::wait_process;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs an example against the suite's daemons; returns {exit status, output}.
std::pair<int, std::string> run_example(const std::string& name) {
  gt::testing::Daemons& d = agt::daemons();
  ::setenv("GT_ADDRESS", d.address().c_str(), 1);
  const std::string log = d.dir() + "/" + name + ".log";
  pid_t pid = spawn_process(bin_path(name), {}, log);
  int rc = wait_process(pid, 60000);
  ::unsetenv("GT_ADDRESS");
  return {rc, slurp(log)};
}

double value_after(const std::string& out, const std::string& key) {
  size_t p = out.rfind(key);
  REQUIRE(p != std::string::npos);
  return std::stod(out.substr(p + key.size()));
}

}  // namespace

TEST_CASE("examples/train_mlp reaches >= 95% accuracy through the daemons", "[examples]") {
  auto [rc, out] = run_example("train_mlp");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("step    1") != std::string::npos);  // progress lines
  CHECK(value_after(out, "final accuracy:") >= 0.95);
}

TEST_CASE("examples/tiny_transformer's loss falls by >= 50%", "[examples]") {
  auto [rc, out] = run_example("tiny_transformer");
  INFO(out);
  CHECK(rc == 0);
  CHECK(out.find("step   20") != std::string::npos);
  CHECK(value_after(out, "loss ratio:") <= 0.5);
}
