// GT_REQUIRE_OK(expr) / GT_CHECK_OK(expr): assert that a gt::Status or gt::Result is ok, and on
// failure print its code and message ("RESOURCE_EXHAUSTED: out of memory ...") instead of
// Catch2's "false".
#pragma once

#include <catch2/catch.hpp>

#include <string>

#include "libgtcore/status.h"

namespace gt::testing {

inline std::string status_text(const Status& s) { return s.to_string(); }
template <typename T>
std::string status_text(const Result<T>& r) {
  return r.status().to_string();
}

}  // namespace gt::testing

#define GT_STATUS_ASSERT_(macro, expr)                                  \
  do {                                                                  \
    const auto& gt_status_under_test_ = (expr);                         \
    INFO(#expr " -> " << ::gt::testing::status_text(gt_status_under_test_)); \
    macro(gt_status_under_test_.is_ok());                               \
  } while (0)

#define GT_REQUIRE_OK(expr) GT_STATUS_ASSERT_(REQUIRE, expr)
#define GT_CHECK_OK(expr) GT_STATUS_ASSERT_(CHECK, expr)
