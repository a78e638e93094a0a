// ErrorLedger (dispatcherd/error_ledger.h): which reported failure a fetched poison is, so a
// failure raised by a FETCH is not raised again at SYNC, and a new one never goes unreported.
#include <catch2/catch.hpp>

#include <memory>
#include <tuple>
#include <unordered_map>

#include "dispatcherd/error_ledger.h"

using namespace gt;
using namespace gt::dispatcher;

namespace {

v1::ErrorInfo err(const std::string& op, const std::string& msg, const std::string& origin = "worker 0") {
  v1::ErrorInfo e;
  e.set_op(op);
  e.set_message(msg);
  e.set_origin(origin);
  return e;
}

}  // namespace

TEST_CASE("error ids are fresh and non-zero", "[dispatcher][errors]") {
  uint64_t a = new_error_id(), b = new_error_id();
  CHECK(a != 0);
  CHECK(b != a);
}

TEST_CASE("a fetched poison is identified by handle, then by a unique match, then by window",
          "[dispatcher][errors]") {
  ErrorLedger l;
  v1::ErrorInfo e1 = err("zeros", "out of memory");
  l.reported(e1, /*worker=*/0, /*handle=*/10, /*horizon=*/15);
  REQUIRE(e1.id() != 0);

  // The failed result itself.
  v1::ErrorInfo f = err("zeros", "out of memory");
  CHECK(l.identify_fetched(f, 0, 10));
  CHECK(f.id() == e1.id());
  // A dependent (newer handle), the only failure with that text: it.
  f = err("zeros", "out of memory");
  CHECK(l.identify_fetched(f, 0, 12));
  CHECK(f.id() == e1.id());
  f = err("zeros", "out of memory");
  CHECK(l.identify_fetched(f, 0, 40));  // issued after the report: still the only candidate
  CHECK(f.id() == e1.id());
  // Another worker, another text, an older handle: not it.
  for (auto [w, h, msg] : {std::tuple{1u, 12u, "out of memory"}, std::tuple{0u, 12u, "other"},
                           std::tuple{0u, 9u, "out of memory"}}) {
    f = err("zeros", msg);
    CHECK_FALSE(l.identify_fetched(f, w, h));
    CHECK(f.id() != e1.id());
    CHECK(f.id() != 0);
  }

  // The same failure again (a loop): each step's fetch, issued before its report, is its own.
  v1::ErrorInfo e2 = err("zeros", "out of memory");
  l.reported(e2, 0, 20, 25);
  f = err("zeros", "out of memory");
  CHECK(l.identify_fetched(f, 0, 22));
  CHECK(f.id() == e2.id());
  // In no window (or in two): cannot be told; a fresh id, nothing consumed.
  f = err("zeros", "out of memory");
  CHECK_FALSE(l.identify_fetched(f, 0, 30));
  CHECK(f.id() != e1.id());
  CHECK(f.id() != e2.id());
  v1::ErrorInfo e3 = err("zeros", "out of memory");
  l.reported(e3, 0, 21, 26);
  f = err("zeros", "out of memory");
  CHECK_FALSE(l.identify_fetched(f, 0, 23));  // in e2's window and in e3's
  // The exact handle still works.
  f = err("zeros", "out of memory");
  CHECK(l.identify_fetched(f, 0, 21));
  CHECK(f.id() == e3.id());
}

TEST_CASE("past kMaxReports only exact handles are identified", "[dispatcher][errors]") {
  ErrorLedger l;
  v1::ErrorInfo first = err("add", "boom");
  l.reported(first, 0, 1, 2);
  for (size_t i = 1; i < ErrorLedger::kMaxReports; ++i) {
    v1::ErrorInfo e = err("mul", "bang " + std::to_string(i));
    l.reported(e, 0, 10 + i, 11 + i);
  }
  CHECK_FALSE(l.overflowed());
  v1::ErrorInfo extra = err("add", "boom");
  l.reported(extra, 0, 5000, 5001);  // not kept
  CHECK(l.overflowed());
  v1::ErrorInfo f = err("add", "boom");
  CHECK(l.identify_fetched(f, 0, 1));
  CHECK(f.id() == first.id());
  f = err("add", "boom");
  CHECK_FALSE(l.identify_fetched(f, 0, 6000));  // the kept one is no longer provably the only
}

TEST_CASE("consume_error and dedupe_errors", "[dispatcher][errors]") {
  std::vector<v1::ErrorInfo> pending;
  for (uint64_t id : {3, 4, 3, 0}) {
    v1::ErrorInfo e = err("x", "m" + std::to_string(id));
    e.set_id(id);
    pending.push_back(e);
  }
  consume_error(pending, 3);
  REQUIRE(pending.size() == 2);
  CHECK(pending[0].id() == 4);
  consume_error(pending, 0);  // id 0: nothing
  CHECK(pending.size() == 2);

  google::protobuf::RepeatedPtrField<v1::ErrorInfo> r;
  for (uint64_t id : {7, 8, 7, 0, 0, 8}) {
    v1::ErrorInfo* e = r.Add();
    e->set_id(id);
    e->set_message("m" + std::to_string(id));
  }
  dedupe_errors(&r);
  REQUIRE(r.size() == 4);
  CHECK(r[0].id() == 7);
  CHECK(r[1].id() == 8);
  CHECK(r[2].id() == 0);
  CHECK(r[3].id() == 0);
  CHECK(r[0].message() == "m7");
  google::protobuf::RepeatedPtrField<v1::ErrorInfo> none;
  none.Add()->set_message("kept");
  dedupe_errors(&none);
  REQUIRE(none.size() == 1);
  CHECK(none[0].message() == "kept");
}

TEST_CASE("poison_failed_result marks the tensor holding the handle", "[dispatcher][errors]") {
  std::unordered_map<uint64_t, TensorEntry> tensors;
  TensorEntry a;
  a.placement = Placement::single(0);
  a.handles = {5};
  TensorEntry b;
  b.placement = Placement::single(1);
  b.handles = {5};
  tensors.emplace(1, a);
  tensors.emplace(2, b);
  auto e = std::make_shared<v1::ErrorInfo>(err("zeros", "out of memory"));
  poison_failed_result(tensors, 1, 5, e);
  CHECK_FALSE(tensors[1].poison);
  REQUIRE(tensors[2].poison);
  CHECK(tensors[2].poison->message() == "out of memory");
  CHECK(tensors[2].handles == std::vector<uint64_t>{5});  // still freed on the worker later
}

TEST_CASE("a tensor written in place is dated by its latest write", "[dispatcher][errors]") {
  // t (handle 3) is written in place after index_select (handle 8) failed: its fetched poison
  // is that failure, though t's own handle is older.
  ErrorLedger l;
  v1::ErrorInfo e = err("index_select", "index 9 is out of bounds");
  l.reported(e, 0, /*handle=*/8, /*horizon=*/12);
  v1::ErrorInfo f = err("index_select", "index 9 is out of bounds");
  CHECK_FALSE(l.identify_fetched(f, 0, 3));  // dated by its handle: older than the failure
  f = err("index_select", "index 9 is out of bounds");
  CHECK(l.identify_fetched(f, 0, 3, /*age=*/11));  // written when handle 11 was next
  CHECK(f.id() == e.id());
  // The same text failing again later: the write before that report (age 12 <= its horizon
  // 12, as no handle was issued in between) tells them apart by window.
  v1::ErrorInfo e2 = err("index_select", "index 9 is out of bounds");
  l.reported(e2, 0, /*handle=*/9, /*horizon=*/12);
  v1::ErrorInfo e3 = err("index_select", "index 9 is out of bounds");
  l.reported(e3, 0, /*handle=*/14, /*horizon=*/20);
  f = err("index_select", "index 9 is out of bounds");
  CHECK(l.identify_fetched(f, 0, 3, /*age=*/15));
  CHECK(f.id() == e3.id());
}

TEST_CASE("a fetched poison naming its failed result is matched exactly", "[dispatcher][errors]") {
  // The same failure text twice, reported after the fetched tensor was issued (its window
  // would hold both): the handle the worker names decides, and is not passed on to clients.
  ErrorLedger l;
  v1::ErrorInfo a = err("index_select", "index 9 is out of bounds");
  l.reported(a, 0, /*handle=*/5, /*horizon=*/9);
  v1::ErrorInfo b = err("index_select", "index 9 is out of bounds");
  l.reported(b, 0, /*handle=*/6, /*horizon=*/9);
  v1::ErrorInfo f = err("index_select", "index 9 is out of bounds");
  CHECK_FALSE(l.identify_fetched(f, 0, 7));  // by text and window: ambiguous
  f = err("index_select", "index 9 is out of bounds");
  f.set_failed_handle(6);
  CHECK(l.identify_fetched(f, 0, 7));
  CHECK(f.id() == b.id());
  CHECK(f.failed_handle() == 0);
  f = err("index_select", "index 9 is out of bounds");
  f.set_failed_handle(6);
  CHECK_FALSE(l.identify_fetched(f, /*worker=*/1, 7));  // another worker's handle 6: not it
}
