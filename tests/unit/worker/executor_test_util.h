// What the executor tests share: an outbox standing in for the dispatcher, and batch and
// hot-path builders.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <initializer_list>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "libgtcore/instr_codec.h"
#include "proto/gt.pb.h"

namespace gt::test {

using Clock = std::chrono::steady_clock;

// Everything the executor sent "to the dispatcher", with arrival times.
struct Outbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<Clock::time_point, v1::WorkerMessage>> sent;

  void push(v1::WorkerMessage&& m) {
    std::lock_guard<std::mutex> lk(mu);
    sent.emplace_back(Clock::now(), std::move(m));
    cv.notify_all();
  }
  // Waits for the reply to `request_id`; returns when it arrived.
  Clock::time_point wait_reply(uint64_t request_id, int timeout_ms = 20000) {
    std::unique_lock<std::mutex> lk(mu);
    Clock::time_point at{};
    cv.wait_for(lk, std::chrono::milliseconds(timeout_ms), [&] {
      for (auto& [t, m] : sent)
        if (m.has_reply() && m.reply().request_id() == request_id) {
          at = t;
          return true;
        }
      return false;
    });
    return at;
  }
  // Every reply message to `request_id` so far (fetch chunks in arrival order).
  std::vector<v1::Reply> replies(uint64_t request_id) {
    std::lock_guard<std::mutex> lk(mu);
    std::vector<v1::Reply> r;
    for (auto& [t, m] : sent)
      if (m.has_reply() && m.reply().request_id() == request_id) r.push_back(m.reply());
    return r;
  }
  // What a FETCH's replies carried: the value's bytes (its chunks in order), and the op its
  // poison names ("" when it has a value).
  std::pair<std::string, std::string> fetched(uint64_t request_id) {
    std::string bytes, poison;
    for (const auto& r : replies(request_id)) {
      bytes += r.tensor().data();
      if (r.errors_size() > 0) poison = r.errors(0).op();
    }
    return {bytes, poison};
  }
  std::vector<v1::ErrorReport> errors() {
    std::lock_guard<std::mutex> lk(mu);
    std::vector<v1::ErrorReport> e;
    for (auto& [t, m] : sent)
      if (m.has_error()) e.push_back(m.error());
    return e;
  }
  uint64_t last_executed_seq() {
    std::lock_guard<std::mutex> lk(mu);
    uint64_t s = 0;
    for (auto& [t, m] : sent)
      if (m.has_ack()) s = std::max(s, m.ack().executed_seq());
    return s;
  }
};

inline v1::Instr op(OpId id, uint64_t out, std::initializer_list<uint64_t> inputs, const OpAttrs& a = {}) {
  v1::Instr in;
  encode_instr(id, a, &in);
  in.set_out(out);
  for (uint64_t i : inputs) in.add_inputs(i);
  return in;
}

// Frees `handles` at this point of b's stream (after the instructions added so far).
inline void free_here(v1::WorkerBatch& b, std::initializer_list<uint64_t> handles) {
  for (uint64_t h : handles) {
    b.add_frees(h);
    b.add_free_at(static_cast<uint32_t>(b.instrs_size()));
  }
}

// Hot-path references (v1::HotPath): instruction k's result, binding s.
constexpr uint64_t local(uint64_t k) { return k << 1; }
constexpr uint64_t bound(uint64_t s) { return (s << 1) | 1; }

// A run of hot path `path` with `bindings`, its results numbered from first_out.
inline v1::Instr hot_run(uint64_t path, std::initializer_list<uint64_t> bindings, uint64_t first_out) {
  v1::Instr in;
  in.mutable_hot()->set_path(path);
  in.mutable_hot()->set_first_out(first_out);
  for (uint64_t b : bindings) in.mutable_hot()->add_bindings(b);
  return in;
}

// A batch built over path references (local(k), bound(s)) as HotPath `id`: its frees of local
// results become the path's.
inline v1::HotPath path_of(const v1::WorkerBatch& tmp, uint64_t id, uint32_t bindings) {
  v1::HotPath p;
  p.set_id(id);
  p.set_bindings(bindings);
  *p.mutable_instrs() = tmp.instrs();
  for (int i = 0; i < tmp.frees_size(); ++i) {
    p.add_frees(static_cast<uint32_t>(tmp.frees(i) >> 1));
    p.add_free_at(tmp.free_at(i));
  }
  return p;
}

inline void add_request(v1::WorkerBatch& b, uint64_t id, v1::Request::Kind kind, uint64_t handle = 0) {
  auto* r = b.add_requests();
  r->set_request_id(id);
  r->set_kind(kind);
  r->set_id(handle);
}


}  // namespace gt::test
