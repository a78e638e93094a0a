// FETCHes answered before the HotRun they wait behind ends (workerd/executor_early_fetch.cpp):
// a FETCH whose tensor the path has made and will not write again is answered at that point of
// the run -- before the errors of the path's later instructions are sent -- with eager
// execution's value, whether it is in the run's batch or in the next batch of requests alone;
// one the path writes later, one the batch frees, and the FETCHes of a batch with instructions
// after its HotRun wait for the end, as eagerly.
#include <catch2/catch.hpp>

#include <memory>
#include <string>
#include <vector>

#include "cpu_rig.h"
#include "executor_test_util.h"
#include "libgtcore/instr_codec.h"

using namespace gt;
using gt::test::add_request;
using gt::test::bound;
using gt::test::free_here;
using gt::test::hot_run;
using gt::test::local;
using gt::test::op;
using gt::test::path_of;

namespace {

using Rig = gt::test::CpuRig;

// a = x * 2; c = a + 1; a.copy_(z); d = c * 3; bad = x @ x (fails: [8, 16] @ [8, 16]);
// e = d - 1; d.copy_(x). `in(k)` names instruction k's result.
template <class In>
void body(v1::WorkerBatch& b, const In& in, uint64_t x, uint64_t z, const std::vector<uint64_t>& outs) {
  const OpAttrs two = make_binary_scalar(ScalarSide::kRight, 2.0, false);
  *b.add_instrs() = op(OpId::k_mul, outs[0], {x}, two);
  *b.add_instrs() = op(OpId::k_add, outs[1], {in(0)}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  *b.add_instrs() = op(OpId::k_copy_, 0, {in(0), z});
  *b.add_instrs() = op(OpId::k_mul, outs[3], {in(1)}, make_binary_scalar(ScalarSide::kRight, 3.0, false));
  *b.add_instrs() = op(OpId::k_matmul, outs[4], {x, x});
  *b.add_instrs() = op(OpId::k_sub, outs[5], {in(3)}, make_binary_scalar(ScalarSide::kRight, 1.0, false));
  *b.add_instrs() = op(OpId::k_copy_, 0, {in(3), x});
}

constexpr uint64_t kPath = 9;

v1::HotPath the_path() {
  v1::WorkerBatch tmp;
  body(tmp, [](uint64_t k) { return local(k); }, bound(0), bound(1), {1, 1, 0, 1, 1, 1, 0});
  return path_of(tmp, kPath, 2);
}

// x (1) and z (2), [8, 16]; the body run eagerly on them (results 200 + k).
void make_inputs_and_eager(Rig& r) {
  v1::WorkerBatch b = r.batch();
  *b.add_instrs() = op(OpId::k_randn, 1, {}, make_random(Shape{8, 16}, DType::kFloat32, 3, 0));
  *b.add_instrs() = op(OpId::k_randn, 2, {}, make_random(Shape{8, 16}, DType::kFloat32, 4, 0));
  r.run(std::move(b));
  v1::WorkerBatch eager = r.batch();
  body(eager, [](uint64_t k) { return 200 + k; }, 1, 2, {200, 201, 0, 203, 204, 205, 0});
  r.run(std::move(eager));
}

// Where in what the executor sent the reply to `request_id` (its first chunk) is, and where
// the error report naming `op` is after `from`; -1 when absent.
int reply_at(gt::test::Outbox& out, uint64_t request_id) {
  std::lock_guard<std::mutex> lk(out.mu);
  for (size_t i = 0; i < out.sent.size(); ++i)
    if (out.sent[i].second.has_reply() && out.sent[i].second.reply().request_id() == request_id)
      return static_cast<int>(i);
  return -1;
}
int error_at(gt::test::Outbox& out, const std::string& op_name, size_t from) {
  std::lock_guard<std::mutex> lk(out.mu);
  for (size_t i = from; i < out.sent.size(); ++i)
    if (out.sent[i].second.has_error() && out.sent[i].second.error().error().op() == op_name)
      return static_cast<int>(i);
  return -1;
}
size_t sent_count(gt::test::Outbox& out) {
  std::lock_guard<std::mutex> lk(out.mu);
  return out.sent.size();
}

}  // namespace

TEST_CASE("a fetch whose tensor a hot path has made final is answered before the path ends",
          "[worker][hot][early]") {
  Rig r;
  make_inputs_and_eager(r);
  const size_t before = sent_count(r.out);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = the_path();
  // Results in order, in-place instructions have none: 100 (a), 101 (c), 102 (d), 103, 104.
  *hot.add_instrs() = hot_run(kPath, {1, 2}, 100);
  add_request(hot, 501, v1::Request::FETCH, 101);  // c: final after instruction 1
  add_request(hot, 502, v1::Request::FETCH, 100);  // a: written by instruction 2
  add_request(hot, 503, v1::Request::FETCH, 1);    // x: a binding the path reads only
  add_request(hot, 504, v1::Request::FETCH, 102);  // d: written by the last instruction
  add_request(hot, 505, v1::Request::SYNC);
  r.run(std::move(hot));

  const int err = error_at(r.out, "matmul", before);
  REQUIRE(err >= 0);
  for (uint64_t id : {501, 502, 503}) {
    INFO("request " << id);
    CHECK(reply_at(r.out, id) >= 0);
    CHECK(reply_at(r.out, id) < err);
  }
  CHECK(reply_at(r.out, 501) < reply_at(r.out, 502));  // in request order
  CHECK(reply_at(r.out, 502) < reply_at(r.out, 503));
  CHECK(reply_at(r.out, 504) > err);
  CHECK(reply_at(r.out, 505) > reply_at(r.out, 504));
  CHECK(r.load().early_fetches() == 3);

  // The values are eager execution's, bitwise: c and d as computed, a after its copy_ (z's).
  const auto value = [&](uint64_t id) {
    const auto [bytes, poison] = r.out.fetched(id);
    CHECK(poison.empty());
    return bytes;
  };
  CHECK(value(501) == r.fetch(201).first);
  CHECK(value(502) == r.fetch(200).first);
  CHECK(value(502) == r.fetch(2).first);
  CHECK(value(503) == r.fetch(1).first);
  CHECK(value(504) == r.fetch(203).first);
  CHECK(value(504) == r.fetch(1).first);  // (d.copy_(x) ran before its fetch)
  CHECK(r.fetch(201).first.size() == 8 * 16 * sizeof(float));
}

TEST_CASE("fetches wait for the end of a hot path when the batch goes on after it or frees "
          "their tensor", "[worker][hot][early]") {
  Rig r;
  make_inputs_and_eager(r);
  {
    v1::WorkerBatch hot = r.batch();
    *hot.add_hot_define() = the_path();
    *hot.add_instrs() = hot_run(kPath, {1, 2}, 100);
    *hot.add_instrs() = op(OpId::k_neg, 300, {1});  // an instruction after the HotRun
    add_request(hot, 601, v1::Request::FETCH, 101);
    const size_t before = sent_count(r.out);
    r.run(std::move(hot));
    CHECK(reply_at(r.out, 601) > error_at(r.out, "matmul", before));
    CHECK(r.out.fetched(601).first == r.fetch(201).first);
  }
  {
    v1::WorkerBatch hot = r.batch();
    *hot.add_instrs() = hot_run(kPath, {1, 2}, 400);
    free_here(hot, {401});  // c, freed by the batch: its fetch fails, as eagerly
    add_request(hot, 602, v1::Request::FETCH, 401);
    const size_t before = sent_count(r.out);
    r.run(std::move(hot));
    CHECK(reply_at(r.out, 602) > error_at(r.out, "matmul", before));
    const auto replies = r.out.replies(602);
    REQUIRE(replies.size() == 1);
    CHECK(replies[0].errors_size() == 1);
  }
  CHECK(r.load().early_fetches() == 0);
  CHECK(r.load().hot_path_hits() == 2);
}

TEST_CASE("the fetches of a batch of requests queued behind a hot path's batch are answered "
          "early too", "[worker][hot][early]") {
  // gt::compile: the scope's HotRun leaves the dispatcher at the scope's end, the function's
  // fetch in the next frame: two batches, the second queued while the first runs.
  Rig r;
  make_inputs_and_eager(r);
  auto queued = [&](v1::WorkerBatch b) {
    b.set_first_seq(r.next_seq);
    r.next_seq += static_cast<uint64_t>(b.instrs_size() + b.frees_size()) + b.hot_extra();
    r.ex.enqueue(std::make_unique<v1::WorkerBatch>(std::move(b)));
  };
  const size_t before = sent_count(r.out);
  v1::WorkerBatch hot = r.batch();
  *hot.add_hot_define() = the_path();
  *hot.add_instrs() = hot_run(kPath, {1, 2}, 100);
  queued(std::move(hot));
  v1::WorkerBatch fetches = r.batch();
  add_request(fetches, 701, v1::Request::FETCH, 101);  // c: final after instruction 1
  add_request(fetches, 702, v1::Request::FETCH, 102);  // d: written by the last instruction
  add_request(fetches, 703, v1::Request::FETCH, 101);  // (after 702: waits for it)
  queued(std::move(fetches));
  r.ex.start();
  REQUIRE(r.out.wait_reply(703) != gt::test::Clock::time_point{});
  r.ex.stop();

  const int err = error_at(r.out, "matmul", before);
  REQUIRE(err >= 0);
  CHECK(reply_at(r.out, 701) < err);
  CHECK(reply_at(r.out, 702) > err);
  CHECK(reply_at(r.out, 703) > reply_at(r.out, 702));
  CHECK(r.load().early_fetches() == 1);
  CHECK(r.out.replies(701).size() == 1);  // answered once
  CHECK(r.out.replies(703).size() == 1);
  CHECK(r.out.fetched(701).first == r.fetch(201).first);
  CHECK(r.out.fetched(702).first == r.fetch(1).first);
  CHECK(r.out.fetched(703).first == r.fetch(201).first);
}
