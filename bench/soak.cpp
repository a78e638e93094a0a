// gt-soak: the multi-user soak of issue 7. N concurrent clients, each a thread with its own
// raw-protocol connection (its own session), run T seconds of mixed work against a dispatcher
// with 2 CPU workers that gt-soak starts itself (or against --address):
//
//   each round: one batch of creations (from_host, full, arange), elementwise ops, matmuls,
//   reductions and frees, with a SYNC and a FETCH of every tensor made in the round, so every
//   result is checked against a host computation (a wrong or missing value counts as a lost
//   instruction); about one round in ten also carries a deliberate error: an unknown id, a
//   shape error (sent raw, which libgtclient would refuse at the call site) or an allocation
//   larger than the workers' memory limit. The SYNC must report exactly the deliberate errors
//   and a FETCH of their results must fail the same way. Now and then a client sends a round and
//   hangs up at once (without reading, with work still queued), then reconnects.
//
// It prints ops/s, p50/p99 sync latency, errors by kind (expected vs unexpected), lost
// instructions, the workers' tensors/bytes before and after (a STATS request) and the
// dispatcher's RSS before, at its peak and after. Exit status 1 on any unexpected error, lost
// instruction, or workers not back to their baseline bytes once the clients are gone.
// A benchmark program, not a test (ARCHITECTURE §11): `gt-soak --clients 64 --seconds 60`.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "daemons.h"
#include "instr_builder.h"
#include "libgtcore/instr_codec.h"
#include "raw_client.h"

using namespace gt;
using gt::testing::RawClient;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int clients = 64;
  int seconds = 60;
  std::string address;         // empty: start a dispatcher and 2 CPU workers
  std::string token;           // for a dispatcher that requires tokens
  pid_t dispatcher_pid = 0;    // with --address: whose RSS to watch
  uint64_t worker_memory = uint64_t{256} << 20;  // the started workers' --max-memory-bytes
  int max_batch = 24;          // instructions per round, at most
  double error_rate = 0.1;     // rounds with a deliberate error
  double abandon_rate = 0.01;  // rounds after which the client hangs up without reading
  uint64_t seed = 1;
  int reply_timeout_ms = 30000;
  bool sharded = false;        // half the clients train data parallel (gt-test-client dp)
};

enum ErrKind { kBadId, kShape, kOom, kRefused, kOther, kNumKinds };
const char* const kKindNames[kNumKinds] = {"bad_id", "shape", "out_of_memory", "refused", "other"};

ErrKind classify(const v1::ErrorInfo& e) {
  const std::string& m = e.message();
  if (m.find("unknown tensor id") != std::string::npos) return kBadId;
  if (m.find("broadcast") != std::string::npos || m.find("cannot be multiplied") != std::string::npos)
    return kShape;
  if (m.find("out of memory") != std::string::npos) return kOom;
  return kOther;
}

struct Stats {
  uint64_t rounds = 0, instrs = 0, frees = 0, requests = 0, fetched = 0, values_checked = 0;
  uint64_t expected[kNumKinds] = {}, unexpected[kNumKinds] = {};
  uint64_t missing_expected = 0;  // a deliberate error that was not reported
  uint64_t lost = 0;              // a wrong value, or a reply that never came
  uint64_t sessions = 0, abandoned = 0;
  uint64_t dp_runs = 0, dp_steps = 0;  // --sharded: data-parallel training programs run
  std::vector<double> sync_ms;
  std::vector<std::string> samples;  // the first few unexpected things, for the report

  void note(const std::string& what) {
    if (samples.size() < 8) samples.push_back(what);
  }
  void merge(const Stats& o) {
    rounds += o.rounds;
    instrs += o.instrs;
    frees += o.frees;
    requests += o.requests;
    fetched += o.fetched;
    values_checked += o.values_checked;
    for (int k = 0; k < kNumKinds; ++k) {
      expected[k] += o.expected[k];
      unexpected[k] += o.unexpected[k];
    }
    missing_expected += o.missing_expected;
    lost += o.lost;
    sessions += o.sessions;
    abandoned += o.abandoned;
    dp_runs += o.dp_runs;
    dp_steps += o.dp_steps;
    sync_ms.insert(sync_ms.end(), o.sync_ms.begin(), o.sync_ms.end());
    for (const auto& s : o.samples) note(s);
  }
  uint64_t total_unexpected() const {
    uint64_t n = missing_expected;
    for (uint64_t u : unexpected) n += u;
    return n;
  }
};

// What a tensor must hold, computed on the host.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> v;
  std::string how;  // the op that made it (for reports)
  // Per element: what the value would be with every term taken by absolute value (empty: |v|).
  // float32 rounding scales with it, not with the result: a matmul whose terms cancel to 0
  // may come back as -81920 when the terms are ~1e12, and that is correct float32 arithmetic.
  std::vector<double> mag;
  double mag_at(size_t i) const { return mag.empty() ? std::fabs(double(v[i])) : mag[i]; }
};

Shape to_shape(const std::vector<int64_t>& dims) {
  Shape s;
  for (int64_t d : dims) s.push_back(d);
  return s;
}

bool close_enough(float a, float b, double mag) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(double(a) - b) <=
         1e-3 * std::max({1.0, std::fabs(double(a)), std::fabs(double(b))}) + 1e-4 * mag;
}

class SoakClient {
 public:
  SoakClient(const Options& o, std::string address, int index, Clock::time_point deadline)
      : o_(o), address_(std::move(address)), rng_(o.seed * 7919 + index), deadline_(deadline) {}

  void run(Stats& st) {
    while (Clock::now() < deadline_) {
      if (!conn_ && !connect(st)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      round(st);
    }
    if (conn_ && coin(0.5)) {  // half leave tidily, half just hang up (the dispatcher frees)
      v1::ClientMessage m;
      for (const auto& [id, t] : live_) m.mutable_batch()->add_frees(id);
      for (uint64_t id : pending_frees_) m.mutable_batch()->add_frees(id);
      st.frees += static_cast<uint64_t>(m.batch().frees_size());
      auto* r = m.mutable_batch()->add_requests();
      r->set_request_id(next_rid_++);
      r->set_kind(v1::Request::SYNC);
      conn_->send(m);
      auto reply = conn_->read(o_.reply_timeout_ms);
      if (!reply) {
        ++st.lost;
        st.note("no reply to the final sync");
      }
    }
    conn_.reset();
  }

 private:
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }

  bool connect(Stats& st) {
    conn_.reset();
    live_.clear();
    pending_frees_.clear();
    next_id_ = 1;
    try {
      auto c = std::make_unique<RawClient>(address_);
      v1::ServerMessage w = c->hello(0, 0, o_.token);
      if (w.kind_case() != v1::ServerMessage::kWelcome) {
        ++st.unexpected[kRefused];
        st.note("hello refused: " + w.refusal().reason());
        return false;
      }
      conn_ = std::move(c);
      ++st.sessions;
      return true;
    } catch (const std::exception& e) {
      ++st.unexpected[kRefused];
      st.note(std::string("cannot connect: ") + e.what());
      return false;
    }
  }

  // --- building a round -----------------------------------------------------------------
  struct Round {
    v1::ClientMessage msg;
    std::map<uint64_t, HostTensor> made;           // results to fetch and check
    std::vector<ErrKind> expected_errors;          // what the SYNC must report
    std::vector<std::pair<uint64_t, ErrKind>> poisoned;  // results of deliberate errors
  };

  v1::ClientBatch& batch(Round& r) { return *r.msg.mutable_batch(); }

  const HostTensor* find(Round& r, uint64_t id) {
    if (auto it = r.made.find(id); it != r.made.end()) return &it->second;
    if (auto it = live_.find(id); it != live_.end()) return &it->second;
    return nullptr;
  }

  uint64_t emit(Round& r, OpId op, std::initializer_list<uint64_t> in, const OpAttrs& a,
                std::optional<HostTensor> expect) {
    uint64_t id = next_id_++;
    *batch(r).add_instrs() = testing::make_instr(op, id, in, a);
    if (expect) {
      if (expect->how.empty()) expect->how = std::string(op_name(op));
      r.made.emplace(id, std::move(*expect));
    }
    return id;
  }

  uint64_t create(Round& r, std::vector<int64_t> shape) {
    HostTensor t;
    t.shape = shape;
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    int kind = static_cast<int>(uniform(0, 2));
    if (kind == 0) {  // from_host, small integers
      t.v.resize(static_cast<size_t>(n));
      for (auto& x : t.v) x = static_cast<float>(uniform(-3, 3));
      uint64_t id = next_id_++;
      *batch(r).add_instrs() = testing::from_floats(id, t.v, to_shape(shape));
      t.how = "from_host";
      r.made.emplace(id, std::move(t));
      return id;
    }
    if (kind == 1) {  // full
      static const float kValues[] = {-2, -1, 0.5f, 1, 2, 3};
      float v = kValues[uniform(0, 5)];
      t.v.assign(static_cast<size_t>(n), v);
      return emit(r, OpId::k_full, {}, make_full(to_shape(shape), DType::kFloat32, v), t);
    }
    // arange, then reshape: two instructions, both checked
    uint64_t a = emit(r, OpId::k_arange, {}, make_arange(0, static_cast<double>(n), 1, DType::kFloat32),
                      std::nullopt);
    HostTensor ar;
    ar.shape = {n};
    for (int64_t i = 0; i < n; ++i) ar.v.push_back(static_cast<float>(i));
    ar.how = "arange";
    r.made.emplace(a, ar);
    t.v = ar.v;
    return emit(r, OpId::k_reshape, {a}, make_reshape(to_shape(shape)), t);
  }

  std::vector<int64_t> random_shape() { return {uniform(1, 12), uniform(1, 12)}; }

  // An existing tensor (made this round or verified earlier), or a new one.
  uint64_t pick(Round& r) {
    size_t n = live_.size() + r.made.size();
    if (n == 0 || coin(0.15)) return create(r, random_shape());
    size_t k = static_cast<size_t>(uniform(0, static_cast<int64_t>(n) - 1));
    if (k < live_.size()) return std::next(live_.begin(), static_cast<long>(k))->first;
    return std::next(r.made.begin(), static_cast<long>(k - live_.size()))->first;
  }

  // A tensor of exactly `shape`: an existing one if there is, else a new one.
  uint64_t pick_shaped(Round& r, const std::vector<int64_t>& shape) {
    std::vector<uint64_t> same;
    for (const auto& [id, t] : live_)
      if (t.shape == shape) same.push_back(id);
    for (const auto& [id, t] : r.made)
      if (t.shape == shape) same.push_back(id);
    if (same.empty() || coin(0.3)) return create(r, shape);
    return same[static_cast<size_t>(uniform(0, static_cast<int64_t>(same.size()) - 1))];
  }

  void elementwise(Round& r) {
    uint64_t a = pick(r);
    HostTensor x = *find(r, a);
    int which = static_cast<int>(uniform(0, 8));
    if (which >= 5) {  // unary, or a scalar operand
      HostTensor out = x;
      OpId op;
      OpAttrs attrs;
      if (which == 5) {
        op = OpId::k_relu;
        for (auto& v : out.v) v = v > 0 ? v : 0;
      } else if (which == 6) {
        op = OpId::k_neg;
        for (auto& v : out.v) v = -v;
      } else if (which == 7) {
        op = OpId::k_mul;
        attrs = make_binary_scalar(ScalarSide::kRight, 0.5, false);
        for (auto& v : out.v) v = v * 0.5f;
        for (auto& m : out.mag) m *= 0.5;
      } else {
        op = OpId::k_add;
        attrs = make_binary_scalar(ScalarSide::kRight, 1, true);
        for (auto& v : out.v) v = v + 1.0f;
        for (auto& m : out.mag) m += 1.0;
      }
      emit(r, op, {a}, attrs, out);
      return;
    }
    uint64_t b = pick_shaped(r, x.shape);
    const HostTensor& y = *find(r, b);
    static const OpId kOps[] = {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_maximum,
                                OpId::k_minimum};
    OpId op = kOps[which];
    HostTensor out;
    out.shape = x.shape;
    out.v.resize(x.v.size());
    out.mag.resize(x.v.size());
    for (size_t i = 0; i < x.v.size(); ++i) {
      float p = x.v[i], q = y.v[i];
      const double mp = x.mag_at(i), mq = y.mag_at(i);
      out.mag[i] = which == 2 ? mp * mq : which <= 1 ? mp + mq : std::max(mp, mq);
      switch (which) {
        case 0: out.v[i] = p + q; break;
        case 1: out.v[i] = p - q; break;
        case 2: out.v[i] = p * q; break;
        case 3: out.v[i] = std::max(p, q); break;
        default: out.v[i] = std::min(p, q); break;
      }
    }
    emit(r, op, {a, b}, {}, out);
  }

  void matmul(Round& r) {
    uint64_t a = pick(r);
    HostTensor x = *find(r, a);
    if (x.shape.size() != 2) {
      a = create(r, random_shape());
      x = *find(r, a);
    }
    int64_t m = x.shape[0], k = x.shape[1], n = uniform(1, 12);
    uint64_t b = pick_shaped(r, {k, n});
    const HostTensor& y = *find(r, b);
    HostTensor out;
    out.shape = {m, n};
    out.v.resize(static_cast<size_t>(m * n));
    out.mag.resize(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          const size_t ia = static_cast<size_t>(i * k + p), ib = static_cast<size_t>(p * n + j);
          acc += static_cast<double>(x.v[ia]) * y.v[ib];
          mag += x.mag_at(ia) * y.mag_at(ib);
        }
        out.v[static_cast<size_t>(i * n + j)] = static_cast<float>(acc);
        out.mag[static_cast<size_t>(i * n + j)] = mag;
      }
    out.how = fmt::format("matmul of {} ({}x{}, {}) and {} ({}x{}, {})", a, m, k, x.how, b, k, n,
                          y.how);
    emit(r, OpId::k_matmul, {a, b}, {}, std::move(out));
  }

  void reduction(Round& r) {
    uint64_t a = pick(r);
    HostTensor x = *find(r, a);
    if (x.shape.empty()) return;
    const bool is_max = coin(0.4);
    const OpId op = is_max ? OpId::k_max : OpId::k_sum;
    HostTensor out;
    if (coin(0.3) || x.shape.size() == 1) {  // over everything
      double acc = is_max ? -INFINITY : 0, mag = 0;
      for (size_t i = 0; i < x.v.size(); ++i) {
        acc = is_max ? std::max<double>(acc, x.v[i]) : acc + x.v[i];
        mag = is_max ? std::max(mag, x.mag_at(i)) : mag + x.mag_at(i);
      }
      out.v = {static_cast<float>(acc)};
      out.mag = {mag};
      emit(r, op, {a}, make_reduce(kAllDims, false), out);
      return;
    }
    const int64_t dim = uniform(0, 1), rows = x.shape[0], cols = x.shape[1];
    out.shape = {dim == 0 ? cols : rows};
    out.v.assign(static_cast<size_t>(out.shape[0]), is_max ? -INFINITY : 0.0f);
    out.mag.assign(out.v.size(), 0.0);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const size_t src = static_cast<size_t>(i * cols + j);
        const size_t dst = static_cast<size_t>(dim == 0 ? j : i);
        float& o = out.v[dst];
        o = is_max ? std::max(o, x.v[src]) : o + x.v[src];
        out.mag[dst] = is_max ? std::max(out.mag[dst], x.mag_at(src)) : out.mag[dst] + x.mag_at(src);
      }
    emit(r, op, {a}, make_reduce(dim, false), out);
  }

  void deliberate_error(Round& r) {
    int which = static_cast<int>(uniform(0, 2));
    uint64_t id;
    ErrKind kind;
    if (which == 0) {  // an id this session never made
      uint64_t a = pick(r);
      id = emit(r, OpId::k_add, {a, uint64_t{1} << 50}, {}, std::nullopt);
      kind = kBadId;
    } else if (which == 1) {  // shapes that do not broadcast, sent raw
      uint64_t a = create(r, {2, 3}), b = create(r, {4, 5});
      id = emit(r, coin(0.5) ? OpId::k_add : OpId::k_matmul, {a, b}, {}, std::nullopt);
      kind = kShape;
    } else {  // larger than the worker's memory limit
      const int64_t n = static_cast<int64_t>(o_.worker_memory / 4) + 4096;
      id = emit(r, OpId::k_zeros, {}, make_shape_dtype(Shape{n}, DType::kFloat32), std::nullopt);
      kind = kOom;
    }
    r.expected_errors.push_back(kind);
    r.poisoned.emplace_back(id, kind);
    // A dependent inherits the poison without a new report.
    uint64_t dep = emit(r, OpId::k_neg, {id}, {}, std::nullopt);
    r.poisoned.emplace_back(dep, kind);
  }

  // --- one round ------------------------------------------------------------------------------
  void round(Stats& st) {
    Round r;
    auto& b = batch(r);
    const int n = static_cast<int>(uniform(4, o_.max_batch));
    for (int i = 0; i < n; ++i) {
      int what = static_cast<int>(uniform(0, 99));
      if (what < 20) create(r, random_shape());
      else if (what < 60) elementwise(r);
      else if (what < 75) matmul(r);
      else if (what < 90) reduction(r);
      else if (!live_.empty()) {  // free an older tensor (after this batch's instructions)
        auto it = std::next(live_.begin(), static_cast<long>(uniform(0, static_cast<int64_t>(live_.size()) - 1)));
        pending_frees_.push_back(it->first);
        live_.erase(it);
      }
    }
    if (coin(o_.error_rate)) deliberate_error(r);
    // Keep each session small: the oldest verified tensors go.
    while (live_.size() > 48) {
      pending_frees_.push_back(live_.begin()->first);
      live_.erase(live_.begin());
    }
    for (uint64_t id : pending_frees_) b.add_frees(id);
    pending_frees_.clear();

    // Requests: a SYNC, then every result of the round, then the poisoned ones.
    struct Want {
      enum { kSync, kFetch, kPoison } kind;
      uint64_t id;
      ErrKind err;
      std::string data;
    };
    std::map<uint64_t, Want> want;  // by request id
    auto request = [&](v1::Request::Kind k, uint64_t id) {
      auto* q = b.add_requests();
      q->set_request_id(next_rid_++);
      q->set_kind(k);
      q->set_id(id);
      return q->request_id();
    };
    const uint64_t sync_rid = request(v1::Request::SYNC, 0);
    want[sync_rid] = Want{Want::kSync, 0, kOther, {}};
    for (const auto& [id, t] : r.made) want[request(v1::Request::FETCH, id)] = Want{Want::kFetch, id, kOther, {}};
    for (const auto& [id, kind] : r.poisoned) {
      want[request(v1::Request::FETCH, id)] = Want{Want::kPoison, id, kind, {}};
      pending_frees_.push_back(id);  // the poisoned ids exist in the session until freed
    }

    st.instrs += static_cast<uint64_t>(b.instrs_size());
    st.frees += static_cast<uint64_t>(b.frees_size());
    st.requests += static_cast<uint64_t>(b.requests_size());
    ++st.rounds;
    const auto t0 = Clock::now();
    conn_->send(r.msg);
    if (coin(o_.abandon_rate)) {  // hang up with the round in flight; the dispatcher cleans up
      ++st.abandoned;
      conn_.reset();
      return;
    }

    while (!want.empty()) {
      auto m = conn_->read(o_.reply_timeout_ms);
      if (!m) {
        st.lost += want.size();
        st.note(fmt::format("{} replies never came (session {})", want.size(), st.sessions));
        conn_.reset();
        return;
      }
      if (m->kind_case() == v1::ServerMessage::kRefusal) {
        ++st.unexpected[kRefused];
        st.lost += want.size();
        st.note("refused mid-session: " + m->refusal().reason());
        conn_.reset();
        return;
      }
      if (m->kind_case() != v1::ServerMessage::kReply) continue;
      const v1::Reply& rep = m->reply();
      auto it = want.find(rep.request_id());
      if (it == want.end()) {
        ++st.unexpected[kOther];
        st.note(fmt::format("a reply to request {} that is not pending", rep.request_id()));
        continue;
      }
      Want& w = it->second;
      if (w.kind == Want::kSync) {
        st.sync_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        std::vector<ErrKind> expected = r.expected_errors;
        for (const auto& e : rep.errors()) {
          ErrKind k = classify(e);
          auto pos = std::find(expected.begin(), expected.end(), k);
          if (pos != expected.end()) {
            expected.erase(pos);
            ++st.expected[k];
          } else {
            ++st.unexpected[k];
            st.note(fmt::format("sync reported {}: {}: {}", kKindNames[k], e.op(), e.message()));
          }
        }
        st.missing_expected += expected.size();
        for (ErrKind k : expected) st.note(fmt::format("a deliberate {} error was not reported", kKindNames[k]));
        want.erase(it);
        continue;
      }
      if (rep.errors_size() > 0) {
        ErrKind k = classify(rep.errors(0));
        if (w.kind == Want::kPoison && k == w.err) {
          ++st.expected[k];
        } else {
          ++st.unexpected[k];
          if (w.kind == Want::kFetch) ++st.lost;
          st.note(fmt::format("fetch of {} failed: {}: {}", w.id, rep.errors(0).op(),
                              rep.errors(0).message()));
        }
        want.erase(it);
        continue;
      }
      if (rep.has_tensor()) {
        if (w.data.size() != rep.tensor().offset()) {
          ++st.lost;
          st.note(fmt::format("fetch of {}: chunk at offset {} after {} bytes", w.id,
                              rep.tensor().offset(), w.data.size()));
        }
        w.data += rep.tensor().data();
      }
      if (!rep.last()) continue;
      if (w.kind == Want::kPoison) {
        ++st.missing_expected;
        st.note(fmt::format("fetch of poisoned {} returned a value", w.id));
      } else {
        ++st.fetched;
        const HostTensor& t = r.made.at(w.id);
        bool ok = w.data.size() == t.v.size() * sizeof(float);
        size_t bad = 0;
        float got = 0;
        for (size_t i = 0; ok && i < t.v.size(); ++i) {
          std::memcpy(&got, w.data.data() + i * sizeof(float), sizeof(float));
          ok = close_enough(got, t.v[i], t.mag_at(i));
          bad = i;
        }
        st.values_checked += t.v.size();
        if (!ok) {
          ++st.lost;
          st.note(fmt::format("fetch of {} (made by {}): wrong value ({} bytes): element {} is {}, "
                              "expected {}",
                              w.id, t.how, w.data.size(), bad, got,
                              bad < t.v.size() ? t.v[bad] : 0.0f));
        }
      }
      want.erase(it);
    }
    for (auto& [id, t] : r.made) live_.emplace(id, std::move(t));
  }

  const Options& o_;
  std::string address_;
  std::mt19937_64 rng_;
  Clock::time_point deadline_;
  std::unique_ptr<RawClient> conn_;
  std::map<uint64_t, HostTensor> live_;  // verified, usable as inputs
  std::vector<uint64_t> pending_frees_;
  uint64_t next_id_ = 1, next_rid_ = 1;
};

long rss_kib(pid_t pid) {
  if (pid <= 0) return -1;
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

std::string mib(long kib) { return kib < 0 ? "n/a" : fmt::format("{:.1f} MiB", kib / 1024.0); }

std::vector<v1::WorkerStats> worker_stats(const std::string& address, const std::string& token) {
  RawClient c(address);
  if (c.hello(0, 0, token).kind_case() != v1::ServerMessage::kWelcome)
    throw std::runtime_error("the stats client was refused");
  return c.worker_stats();
}

void print_stats(const char* when, const std::vector<v1::WorkerStats>& ws) {
  for (const auto& w : ws)
    std::printf("  %-6s worker %u (%s): %llu tensors, %llu bytes (peak %llu)\n", when,
                w.worker_id(), w.device().c_str(), static_cast<unsigned long long>(w.tensors()),
                static_cast<unsigned long long>(w.bytes()),
                static_cast<unsigned long long>(w.peak_bytes()));
}

uint64_t total_bytes(const std::vector<v1::WorkerStats>& ws) {
  uint64_t n = 0;
  for (const auto& w : ws) n += w.bytes();
  return n;
}
uint64_t total_tensors(const std::vector<v1::WorkerStats>& ws) {
  uint64_t n = 0;
  for (const auto& w : ws) n += w.tensors();
  return n;
}

void usage() {
  std::printf(
      "usage: gt-soak [--clients N] [--seconds T] [--address HOST:PORT [--token T]\n"
      "               [--dispatcher-pid PID]] [--worker-memory BYTES] [--max-batch N]\n"
      "               [--error-rate P] [--abandon-rate P] [--seed S] [--sharded]\n"
      "--sharded: half the clients are data-parallel training programs (gt-test-client dp,\n"
      "a signal config sharding the batch over both workers), run one after another.\n"
      "Without --address it starts gt-dispatcherd and 2 CPU gt-workerd (from its own bin/\n"
      "folder) with --max-memory-bytes = --worker-memory (default 256 MiB). Worker stats need\n"
      "an admin session (no users file, or an admin token).\n");
}

}  // namespace

// --sharded: data-parallel training programs, one after another until the deadline. Each
// trains 30 steps (its loss must fall) and exits; its session's tensors must all go.
void run_training(Clock::time_point deadline, Stats& st) {
  constexpr int kSteps = 30;
  while (Clock::now() < deadline) {
    pid_t p = testing::spawn_process(testing::bin_path("gt-test-client"),
                                     {"dp", std::to_string(kSteps), "--no-leak-check"}, "/dev/null");
    int rc = testing::wait_process(p, 120000);
    ++st.sessions;
    if (rc == 0) {
      ++st.dp_runs;
      st.dp_steps += kSteps;
    } else {
      ++st.unexpected[kOther];
      st.note("a data-parallel training run failed (exit status " + std::to_string(rc) + ")");
    }
  }
}

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gt-soak: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--clients") o.clients = std::stoi(val());
    else if (a == "--seconds") o.seconds = std::stoi(val());
    else if (a == "--address") o.address = val();
    else if (a == "--token") o.token = val();
    else if (a == "--dispatcher-pid") o.dispatcher_pid = std::stoi(val());
    else if (a == "--worker-memory") o.worker_memory = std::stoull(val());
    else if (a == "--max-batch") o.max_batch = std::max(4, std::stoi(val()));
    else if (a == "--error-rate") o.error_rate = std::stod(val());
    else if (a == "--abandon-rate") o.abandon_rate = std::stod(val());
    else if (a == "--seed") o.seed = std::stoull(val());
    else if (a == "--sharded") o.sharded = true;
    else if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "gt-soak: unknown argument %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<testing::Daemons> daemons;
  std::string address = o.address;
  pid_t dpid = o.dispatcher_pid;
  if (address.empty()) {
    testing::DaemonOptions d;
    d.workers = 2;
    d.worker_args = {"--max-memory-bytes", std::to_string(o.worker_memory)};
    daemons = std::make_unique<testing::Daemons>(d);
    address = daemons->address();
    dpid = daemons->dispatcher_pid();
    std::printf("gt-soak: started a dispatcher at %s (pid %d) and 2 CPU workers (limit %llu bytes); "
                "logs in %s\n",
                address.c_str(), static_cast<int>(dpid),
                static_cast<unsigned long long>(o.worker_memory), daemons->dir().c_str());
  }

  std::vector<v1::WorkerStats> before;
  try {
    before = worker_stats(address, o.token);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gt-soak: cannot read worker stats: %s\n", e.what());
    return 1;
  }
  const long rss_before = rss_kib(dpid);
  std::atomic<long> rss_peak{rss_before};
  std::atomic<bool> done{false};
  std::thread monitor([&] {
    while (!done) {
      long r = rss_kib(dpid);
      if (r > rss_peak) rss_peak = r;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  std::printf("gt-soak: %d clients for %d s against %s\n", o.clients, o.seconds, address.c_str());
  std::fflush(stdout);
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::seconds(o.seconds);
  std::vector<Stats> per(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  if (o.sharded) {  // the training programs find the dispatcher (and token) in the environment
    ::setenv("GT_ADDRESS", address.c_str(), 1);
    if (!o.token.empty()) ::setenv("GT_TOKEN", o.token.c_str(), 1);
  }
  for (int i = 0; i < o.clients; ++i)
    threads.emplace_back([&, i] {
      if (o.sharded && i % 2 == 1) {
        run_training(deadline, per[static_cast<size_t>(i)]);
        return;
      }
      SoakClient c(o, address, i, deadline);
      try {
        c.run(per[static_cast<size_t>(i)]);
      } catch (const std::exception& e) {
        ++per[static_cast<size_t>(i)].unexpected[kOther];
        per[static_cast<size_t>(i)].note(std::string("client exception: ") + e.what());
      }
    });
  for (auto& t : threads) t.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();

  // The clients are gone: their tensors must go too (frees and disconnects are asynchronous).
  std::vector<v1::WorkerStats> after;
  const uint64_t base_bytes = total_bytes(before), base_tensors = total_tensors(before);
  const auto settle_start = Clock::now();
  const auto settle_deadline = settle_start + std::chrono::seconds(30);
  bool baseline = false;
  while (true) {
    try {
      after = worker_stats(address, o.token);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gt-soak: cannot read worker stats: %s\n", e.what());
    }
    baseline = !after.empty() && total_bytes(after) == base_bytes &&
               total_tensors(after) == base_tensors;
    if (baseline || Clock::now() > settle_deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const double settle_s = std::chrono::duration<double>(Clock::now() - settle_start).count();
  done = true;
  monitor.join();
  const long rss_after = rss_kib(dpid);

  Stats all;
  for (const auto& s : per) all.merge(s);
  std::sort(all.sync_ms.begin(), all.sync_ms.end());
  auto pct = [&](double p) {
    if (all.sync_ms.empty()) return 0.0;
    size_t k = static_cast<size_t>(p * static_cast<double>(all.sync_ms.size() - 1));
    return all.sync_ms[k];
  };
  const uint64_t ops = all.instrs + all.frees + all.requests;

  std::printf("\n== gt-soak: %d clients, %.1f s\n", o.clients, elapsed);
  std::printf("  rounds %llu, sessions %llu (%llu hung up mid-round)\n",
              static_cast<unsigned long long>(all.rounds), static_cast<unsigned long long>(all.sessions),
              static_cast<unsigned long long>(all.abandoned));
  std::printf("  ops/s %.0f  (instructions %.0f/s, frees %.0f/s, requests %.0f/s)\n", ops / elapsed,
              all.instrs / elapsed, all.frees / elapsed, all.requests / elapsed);
  std::printf("  sync latency p50 %.2f ms, p99 %.2f ms, max %.2f ms (%zu syncs)\n", pct(0.5),
              pct(0.99), all.sync_ms.empty() ? 0.0 : all.sync_ms.back(), all.sync_ms.size());
  if (o.sharded)
    std::printf("  data-parallel training runs %llu (%llu steps) on 2 workers\n",
                static_cast<unsigned long long>(all.dp_runs),
                static_cast<unsigned long long>(all.dp_steps));
  std::printf("  fetched %llu tensors, %llu values checked\n",
              static_cast<unsigned long long>(all.fetched),
              static_cast<unsigned long long>(all.values_checked));
  std::printf("  errors by kind (expected / unexpected):\n");
  for (int k = 0; k < kNumKinds; ++k)
    std::printf("    %-14s %8llu / %llu\n", kKindNames[k],
                static_cast<unsigned long long>(all.expected[k]),
                static_cast<unsigned long long>(all.unexpected[k]));
  std::printf("    %-14s %8s / %llu\n", "not reported", "-",
              static_cast<unsigned long long>(all.missing_expected));
  std::printf("  lost instructions: %llu\n", static_cast<unsigned long long>(all.lost));
  print_stats("before", before);
  print_stats("after", after);
  std::printf("  workers %s baseline bytes (%llu -> %llu bytes, %llu -> %llu tensors; %.1f s after "
              "the clients left)\n",
              baseline ? "back to" : "NOT back to", static_cast<unsigned long long>(base_bytes),
              static_cast<unsigned long long>(total_bytes(after)),
              static_cast<unsigned long long>(base_tensors),
              static_cast<unsigned long long>(total_tensors(after)), settle_s);
  std::printf("  dispatcher RSS: before %s, peak %s, after %s\n", mib(rss_before).c_str(),
              mib(rss_peak.load()).c_str(), mib(rss_after).c_str());
  for (const auto& s : all.samples) std::printf("  ! %s\n", s.c_str());

  const bool ok = all.total_unexpected() == 0 && all.lost == 0 && baseline;
  std::printf("gt-soak: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
