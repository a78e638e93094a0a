// Executors exchanging shards: three Executors, each with a CpuBackend and a TcpPeerLink, fed
// hand-built WorkerBatches (ops + communication instructions + FETCH requests) the way the
// dispatcher would send them; the replies captured from each executor's SendFn are checked.
#include "peer_test_util.h"

#include <mutex>

#include "libgtcore/instr_codec.h"
#include "workerd/cpu/cpu_backend.h"
#include "workerd/executor.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::test;
using worker::CpuBackend;
using worker::Executor;

namespace {

// One worker: backend, peer link, executor, and everything it sent "to the dispatcher".
struct Member {
  CpuBackend backend;
  std::unique_ptr<TcpPeerLink> link;
  std::unique_ptr<Executor> exec;
  std::mutex mu;
  std::vector<v1::WorkerMessage> sent;

  Member() {
    exec = std::make_unique<Executor>(
        backend,
        [this](v1::WorkerMessage&& m) {
          std::lock_guard<std::mutex> lk(mu);
          sent.push_back(std::move(m));
        },
        1 << 20);
  }
  std::vector<v1::ErrorReport> errors() {
    std::vector<v1::ErrorReport> e;
    for (auto& m : sent)
      if (m.has_error()) e.push_back(m.error());
    return e;
  }
  const v1::Reply* reply(uint64_t request_id) {
    for (auto& m : sent)
      if (m.has_reply() && m.reply().request_id() == request_id) return &m.reply();
    return nullptr;
  }
};

struct Workers {
  std::vector<std::unique_ptr<Member>> m;
  std::vector<uint32_t> ids;
  Workers(int n, int timeout_ms = 5000) {
    std::map<uint32_t, std::string> table;
    TcpPeerLinkOptions o;
    o.timeout_ms = timeout_ms;
    for (int i = 0; i < n; ++i) {
      auto w = std::make_unique<Member>();
      auto l = TcpPeerLink::create(o);
      GT_REQUIRE_OK(l);
      w->link = std::move(*l);
      const uint32_t id = 5 + static_cast<uint32_t>(i);
      ids.push_back(id);
      w->exec->set_worker_id(id);
      w->exec->set_peer_link(w->link.get());
      w->link->set_self(id);
      table[id] = w->link->address();
      m.push_back(std::move(w));
    }
    for (auto& w : m) w->link->set_peers(table);
  }
  // Runs each member's batch on its own thread (the executor threads of separate workers).
  void execute(std::vector<v1::WorkerBatch>& batches) {
    run_parallel(static_cast<int>(m.size()),
                 [&](int i) { m[static_cast<size_t>(i)]->exec->execute(batches[static_cast<size_t>(i)]); });
  }
};

void add_op(v1::WorkerBatch& b, OpId op, uint64_t out, std::vector<uint64_t> inputs, const OpAttrs& a) {
  v1::Instr* in = b.add_instrs();
  encode_instr(op, a, in);
  in->set_out(out);
  for (uint64_t h : inputs) in->add_inputs(h);
}

void add_comm(v1::WorkerBatch& b, CommId c, uint64_t out, std::vector<uint64_t> inputs, const OpAttrs& a) {
  v1::Instr* in = b.add_instrs();
  encode_comm_instr(c, a, in);
  in->set_out(out);
  for (uint64_t h : inputs) in->add_inputs(h);
}

void add_request(v1::WorkerBatch& b, v1::Request::Kind kind, uint64_t request_id, uint64_t id = 0) {
  v1::Request* r = b.add_requests();
  r->set_kind(kind);
  r->set_request_id(request_id);
  r->set_id(id);
}

std::vector<float> floats_of(const v1::Reply& r) {
  const std::string& d = r.tensor().data();
  std::vector<float> v(d.size() / 4);
  std::memcpy(v.data(), d.data(), d.size());
  return v;
}

std::vector<int64_t> shape_of(const v1::Reply& r) {
  return {r.tensor().shape().begin(), r.tensor().shape().end()};
}

}  // namespace

TEST_CASE("executors gather, all-reduce and reduce-scatter shards built with arange", "[peer][executor]") {
  Workers w(3);
  const std::vector<int64_t> ext = {1, 3, 2};  // each member's extent along axis 1
  const int64_t total = 6;
  std::vector<v1::WorkerBatch> batches(3);
  for (int k = 0; k < 3; ++k) {
    v1::WorkerBatch& b = batches[static_cast<size_t>(k)];
    b.set_session(1);
    b.set_first_seq(1);
    const int64_t e = ext[static_cast<size_t>(k)];
    add_op(b, OpId::k_arange, 100, {}, make_arange(k * 100, k * 100 + 2 * e * 4, 1, DType::kFloat32));
    add_op(b, OpId::k_reshape, 101, {100}, make_reshape(Shape{2, e, 4}));
    add_comm(b, CommId::k_all_gather, 102, {101}, make_all_gather(1, 1, w.ids, ext));
    add_comm(b, CommId::k_all_reduce, 103, {102}, make_all_reduce(2, ReduceKind::kMax, w.ids));
    add_comm(b, CommId::k_reduce_scatter, 104, {102}, make_reduce_scatter(3, 1, w.ids, ext));
    add_request(b, v1::Request::FETCH, 1, 102);
    add_request(b, v1::Request::FETCH, 2, 103);
    add_request(b, v1::Request::FETCH, 3, 104);
    add_request(b, v1::Request::STATS, 4);
  }
  auto t0 = std::chrono::steady_clock::now();
  w.execute(batches);
  CHECK(seconds_since(t0) < 5);

  // The gathered tensor: [2, 6, 4], member k's arange block at columns [off_k, off_k + e_k).
  std::vector<float> want(2 * total * 4);
  std::vector<int64_t> off = {0, 1, 4};
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < ext[static_cast<size_t>(k)]; ++j)
        for (int64_t l = 0; l < 4; ++l)
          want[static_cast<size_t>((i * total + off[static_cast<size_t>(k)] + j) * 4 + l)] =
              static_cast<float>(k * 100 + (i * ext[static_cast<size_t>(k)] + j) * 4 + l);
  for (int k = 0; k < 3; ++k) {
    Member& m = *w.m[static_cast<size_t>(k)];
    INFO("member " << k);
    for (auto& e : m.errors()) FAIL_CHECK(e.error().op() << ": " << e.error().message());
    const v1::Reply* g = m.reply(1);
    REQUIRE(g);
    REQUIRE(g->errors_size() == 0);
    CHECK(shape_of(*g) == std::vector<int64_t>{2, total, 4});
    CHECK(floats_of(*g) == want);
    const v1::Reply* r = m.reply(2);  // max over identical copies: the same tensor
    REQUIRE(r);
    REQUIRE(r->errors_size() == 0);
    CHECK(floats_of(*r) == want);
    const v1::Reply* s = m.reply(3);  // sum of three identical copies, this member's columns
    REQUIRE(s);
    REQUIRE(s->errors_size() == 0);
    CHECK(shape_of(*s) == std::vector<int64_t>{2, ext[static_cast<size_t>(k)], 4});
    std::vector<float> mine;
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < ext[static_cast<size_t>(k)]; ++j)
        for (int64_t l = 0; l < 4; ++l)
          mine.push_back(3 * want[static_cast<size_t>((i * total + off[static_cast<size_t>(k)] + j) * 4 + l)]);
    CHECK(floats_of(*s) == mine);
    const v1::Reply* st = m.reply(4);
    REQUIRE(st);
    REQUIRE(st->stats_size() == 1);
    CHECK(st->stats(0).peer_bytes_sent() > 0);
    CHECK(st->stats(0).peer_bytes_received() > 0);
    CHECK(st->stats(0).ops_executed() == 5);
  }
}

TEST_CASE("executors: send/recv moves a tensor between two workers", "[peer][executor]") {
  Workers w(2);
  std::vector<v1::WorkerBatch> b(2);
  for (auto& x : b) x.set_session(3);
  add_op(b[0], OpId::k_arange, 1, {}, make_arange(0, 12, 1, DType::kInt64));
  add_comm(b[0], CommId::k_send, 0, {1}, make_send(w.ids[1], 9));
  add_comm(b[1], CommId::k_recv, 7, {}, make_recv(w.ids[0], 9, TensorMeta{Shape{12}, DType::kInt64}));
  add_request(b[1], v1::Request::FETCH, 1, 7);
  w.execute(b);
  CHECK(w.m[0]->errors().empty());
  const v1::Reply* r = w.m[1]->reply(1);
  REQUIRE(r);
  REQUIRE(r->errors_size() == 0);
  std::vector<int64_t> got(12);
  REQUIRE(r->tensor().data().size() == 96);
  std::memcpy(got.data(), r->tensor().data().data(), 96);
  for (int64_t i = 0; i < 12; ++i) CHECK(got[static_cast<size_t>(i)] == i);
}

TEST_CASE("executors: a failed input poisons every member's result, reported once", "[peer][executor]") {
  Workers w(3);
  std::vector<v1::WorkerBatch> batches(3);
  for (int k = 0; k < 3; ++k) {
    v1::WorkerBatch& b = batches[static_cast<size_t>(k)];
    b.set_session(2);
    add_op(b, OpId::k_arange, 100, {}, make_arange(0, 8, 1, DType::kFloat32));
    // Member 1's reshape is wrong (8 elements into [3, 3]): its shard is poisoned.
    add_op(b, OpId::k_reshape, 101, {100}, make_reshape(k == 1 ? Shape{3, 3} : Shape{2, 4}));
    add_comm(b, CommId::k_all_gather, 102, {101}, make_all_gather(1, 0, w.ids, std::vector<int64_t>{2, 2, 2}));
    add_request(b, v1::Request::FETCH, 1, 102);
  }
  auto t0 = std::chrono::steady_clock::now();
  w.execute(batches);
  CHECK(seconds_since(t0) < 3);  // markers, not the 5 s deadline
  CHECK(w.m[0]->errors().empty());
  CHECK(w.m[2]->errors().empty());
  REQUIRE(w.m[1]->errors().size() == 1);
  CHECK(w.m[1]->errors()[0].error().op() == "reshape");
  for (int k = 0; k < 3; ++k) {
    const v1::Reply* r = w.m[static_cast<size_t>(k)]->reply(1);
    REQUIRE(r);
    REQUIRE(r->errors_size() == 1);
    CHECK(r->errors(0).op() == "reshape");
    CHECK(r->errors(0).origin() == "worker 6");
  }
}

TEST_CASE("executors: a local failure in a collective is reported there and poisons the peers",
          "[peer][executor]") {
  Workers w(2);
  std::vector<v1::WorkerBatch> b(2);
  for (int k = 0; k < 2; ++k) {
    b[static_cast<size_t>(k)].set_session(4);
    add_op(b[static_cast<size_t>(k)], OpId::k_arange, 1, {}, make_arange(0, 4, 1, DType::kFloat32));
  }
  // Member 0 names a tensor it does not have; member 1 must not wait for it.
  add_comm(b[0], CommId::k_all_reduce, 2, {999}, make_all_reduce(5, ReduceKind::kSum, w.ids));
  add_comm(b[1], CommId::k_all_reduce, 2, {1}, make_all_reduce(5, ReduceKind::kSum, w.ids));
  for (auto& x : b) add_request(x, v1::Request::FETCH, 1, 2);
  auto t0 = std::chrono::steady_clock::now();
  w.execute(b);
  CHECK(seconds_since(t0) < 3);
  REQUIRE(w.m[0]->errors().size() == 1);
  CHECK(w.m[0]->errors()[0].error().op() == "all_reduce");
  CHECK_THAT(w.m[0]->errors()[0].error().message(), Catch::Contains("999"));
  CHECK(w.m[1]->errors().empty());
  const v1::Reply* r = w.m[1]->reply(1);
  REQUIRE(r);
  REQUIRE(r->errors_size() == 1);
  CHECK_THAT(r->errors(0).message(), Catch::Contains("999"));
  CHECK(r->errors(0).origin() == "worker 5");
}

TEST_CASE("executors refuse malformed communication instructions", "[peer][executor]") {
  Workers w(2);
  v1::WorkerBatch b;
  b.set_session(1);
  add_op(b, OpId::k_arange, 1, {}, make_arange(0, 4, 1, DType::kFloat32));
  add_comm(b, CommId::k_send, 5, {1}, make_send(w.ids[1], 1));          // send has no result
  add_comm(b, CommId::k_send, 0, {1}, make_send(w.ids[0], 2));          // to itself
  add_comm(b, CommId::k_all_reduce, 6, {1}, make_all_reduce(3, ReduceKind::kSum, std::vector<uint32_t>{6}));  // not a member
  add_comm(b, CommId::k_recv, 0, {}, make_recv(w.ids[1], 4, TensorMeta{Shape{4}, DType::kFloat32}));  // no result
  w.m[0]->exec->execute(b);
  auto e = w.m[0]->errors();
  REQUIRE(e.size() == 4);
  CHECK_THAT(e[0].error().message(), Catch::Contains("no result"));
  CHECK_THAT(e[1].error().message(), Catch::Contains("this worker"));
  CHECK_THAT(e[2].error().message(), Catch::Contains("not in the group"));
  CHECK_THAT(e[3].error().message(), Catch::Contains("missing result"));

  // Without a peer link, communication is a clear error, not a crash.
  CpuBackend be;
  std::vector<v1::WorkerMessage> sent;
  Executor lone(be, [&](v1::WorkerMessage&& m) { sent.push_back(std::move(m)); }, 1 << 20);
  v1::WorkerBatch b2;
  b2.set_session(1);
  add_op(b2, OpId::k_arange, 1, {}, make_arange(0, 4, 1, DType::kFloat32));
  add_comm(b2, CommId::k_all_reduce, 2, {1}, make_all_reduce(3, ReduceKind::kSum, std::vector<uint32_t>{0}));
  lone.execute(b2);
  REQUIRE(sent.size() == 1);
  CHECK_THAT(sent[0].error().error().message(), Catch::Contains("no peer link"));
}
