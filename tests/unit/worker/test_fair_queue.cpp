// FairQueue (workerd/fair_queue.h): sessions take turns, a session's batches and all batches
// holding communication keep their arrival order, and a session's end drops its queued work.
#include <catch2/catch.hpp>

#include "libgtcore/comm.h"
#include "libgtcore/instr_codec.h"
#include "workerd/fair_queue.h"

using namespace gt;
using worker::FairQueue;

namespace {

std::unique_ptr<v1::WorkerBatch> batch(uint64_t session, uint64_t first_seq, int ops,
                                       bool comm = false) {
  auto b = std::make_unique<v1::WorkerBatch>();
  b->set_session(session);
  b->set_first_seq(first_seq);
  for (int i = 0; i < ops; ++i) {
    v1::Instr* in = b->add_instrs();
    if (comm && i == 0) in->set_comm(1);  // send's wire id (libgtcore/comm.def)
    else in->set_op(1);
  }
  return b;
}

std::vector<std::pair<uint64_t, uint64_t>> drain(FairQueue& q) {
  std::vector<std::pair<uint64_t, uint64_t>> order;  // (session, first_seq)
  while (auto e = q.pop()) {
    order.emplace_back(e->batch->session(), e->batch->first_seq());
    if (e->comm) q.comm_done(e->batch.get());
  }
  return order;
}

}  // namespace

TEST_CASE("sessions take turns, each session's batches keep their order", "[worker][fair]") {
  FairQueue q;
  q.push(batch(1, 0, 10), nullptr);
  q.push(batch(1, 10, 10), nullptr);
  q.push(batch(1, 20, 10), nullptr);
  q.push(batch(2, 30, 1), nullptr);
  q.push(batch(3, 31, 1), nullptr);
  CHECK(q.size() == 5);
  auto order = drain(q);
  std::vector<std::pair<uint64_t, uint64_t>> want{{1, 0}, {2, 30}, {3, 31}, {1, 10}, {1, 20}};
  CHECK(order == want);
  CHECK(q.size() == 0);
  CHECK_FALSE(q.runnable());
}

TEST_CASE("a batch that used its slice continues first on its session's next turn",
          "[worker][fair]") {
  FairQueue q;
  q.push(batch(1, 0, 10), nullptr);
  q.push(batch(1, 10, 10), nullptr);
  q.push(batch(2, 20, 1), nullptr);
  auto e = q.pop();
  REQUIRE(e);
  CHECK(e->batch->first_seq() == 0);
  e->next = 4;  // ran 4 of 10 instructions, then yielded
  q.push_front(std::move(*e));
  auto light = q.pop();
  REQUIRE(light);
  CHECK(light->batch->session() == 2);  // the other session's turn comes first
  auto resumed = q.pop();
  REQUIRE(resumed);
  CHECK(resumed->batch->first_seq() == 0);
  CHECK(resumed->next == 4);
  auto last = q.pop();
  REQUIRE(last);
  CHECK(last->batch->first_seq() == 10);
}

TEST_CASE("batches holding communication run in arrival order across sessions",
          "[worker][fair]") {
  FairQueue q;
  q.push(batch(1, 0, 2, /*comm=*/true), nullptr);
  q.push(batch(2, 2, 2, /*comm=*/true), nullptr);
  q.push(batch(2, 4, 1), nullptr);
  q.push(batch(1, 5, 1), nullptr);
  auto a = q.pop();
  REQUIRE(a);
  CHECK(a->batch->first_seq() == 0);
  // Session 2's collective must wait for session 1's (else two workers could each block in a
  // different one); nothing else of session 2 may pass it either.
  auto b = q.pop();
  REQUIRE(b);
  CHECK(b->batch->first_seq() == 5);
  CHECK_FALSE(q.runnable());
  CHECK_FALSE(q.pop());
  q.comm_done(a->batch.get());
  REQUIRE(q.runnable());
  auto c = q.pop();
  REQUIRE(c);
  CHECK(c->batch->first_seq() == 2);
  q.comm_done(c->batch.get());
  auto d = q.pop();
  REQUIRE(d);
  CHECK(d->batch->first_seq() == 4);
}

TEST_CASE("a session's end drops its queued work but keeps its communication",
          "[worker][fair]") {
  FairQueue q;
  q.push(batch(1, 0, 100), nullptr);
  q.push(batch(1, 100, 3, /*comm=*/true), nullptr);
  q.push(batch(1, 103, 50), nullptr);
  q.push(batch(2, 153, 1), nullptr);
  auto end = std::make_unique<v1::WorkerBatch>();
  end->set_session(1);
  end->set_first_seq(154);
  end->set_end_session(true);
  std::vector<FairQueue::SeqRange> dropped;
  q.push(std::move(end), &dropped);
  std::vector<FairQueue::SeqRange> want{{0, 100}, {103, 50}};
  CHECK(dropped == want);
  auto order = drain(q);
  std::vector<std::pair<uint64_t, uint64_t>> left{{1, 100}, {2, 153}, {1, 154}};
  CHECK(order == left);
}

TEST_CASE("instructions() counts what is queued and not yet run (the worker's queue depth)",
          "[worker][fair]") {
  FairQueue q;
  q.push(batch(1, 0, 10), nullptr);
  q.push(batch(2, 10, 5), nullptr);
  CHECK(q.instructions() == 15);
  auto e = q.pop();
  REQUIRE(e);
  CHECK(q.instructions() == 5);  // the popped batch is running, no longer queued
  e->next = 4;                   // it ran 4 of its 10, then used up its slice
  q.push_front(std::move(*e));
  CHECK(q.instructions() == 11);
  std::vector<FairQueue::SeqRange> dropped;
  auto end = batch(2, 15, 0);
  end->set_end_session(true);
  q.push(std::move(end), &dropped);  // session 2's queued batch is dropped
  CHECK(dropped.size() == 1);
  CHECK(q.instructions() == 6);
  q.clear();
  CHECK(q.instructions() == 0);
}
