// Every op in libgtcore/include/gt/core/ops.def must have a test in this suite: each test file declares the ops
// it covers with GT_OPS_COVERED (registered at static-init time, so this check holds whichever
// test cases run, e.g. one per process under ctest). Adding an op without a test fails here.
#include <string>

#include "op_test_util.h"

TEST_CASE("every op in the op table is covered by the op suite", "[ops][coverage]") {
  const std::set<std::string>& covered = gtt::covered_ops();
  std::string missing;
  for (int i = 0; i < gt::kNumOps; ++i) {
    const gt::OpInfo& info = gt::op_info(static_cast<gt::OpId>(i));
    if (!covered.count(info.name)) missing += std::string(missing.empty() ? "" : ", ") + info.name;
  }
  INFO("ops without a test in tests/integration/ops: " << missing);
  CHECK(missing.empty());
  // And every name claimed as covered is a real op (a typo would hide a gap).
  for (const std::string& name : covered) {
    INFO("GT_OPS_COVERED names an unknown op: " << name);
    CHECK(gt::op_from_name(name).has_value());
  }
  CHECK(covered.size() == static_cast<size_t>(gt::kNumOps));
}
