// gt-fuzz-seeds DIR: writes the seed corpora of the four fuzz targets into DIR/<target>/ (the
// committed tests/fuzz/corpus/ was made with it). Small, valid inputs that reach deep: frames of
// every envelope, hellos of every kind, programs that use every op of ops.def (in several
// dtypes), plus the usual hostile cases (unknown ids, shape errors, absurd sizes, forged
// handles), each laid out the way its harness reads its input (tests/fuzz/harness.h).
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "libgtcore/frame_codec.h"
#include "libgtcore/instr_codec.h"
#include "gt/core/ops.h"
#include "libgtcore/version.h"
#include "proto/gt.pb.h"
#include "tests/fuzz/dispatcher_rig.h"
#include "tests/fuzz/harness.h"

using namespace gt;
using gt::fuzz::client_hello;
using gt::fuzz::worker_hello;

namespace {

std::string g_root;
int g_written = 0;

void write_seed(const std::string& target, const std::string& name, const std::string& bytes) {
  std::string dir = g_root + "/" + target;
  ::mkdir(g_root.c_str(), 0755);
  ::mkdir(dir.c_str(), 0755);
  std::ofstream f(dir + "/" + name, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ++g_written;
}

std::string frame(const google::protobuf::MessageLite& m) {
  std::string out;
  if (!append_frame(&out, m, 0xffffffffull).is_ok()) std::abort();
  return out;
}

std::string bytes_of(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

// A list of instructions on ids (client) or handles (worker): the same numbers work for both.
struct Prog {
  std::vector<v1::Instr> instrs;
  std::vector<uint64_t> frees;
  std::vector<v1::Request> requests;
  uint64_t next = 1;

  uint64_t op(OpId op, std::initializer_list<uint64_t> in, const OpAttrs& a = {}) {
    v1::Instr i;
    encode_instr(op, a, &i);
    uint64_t out = is_in_place(op) ? 0 : next++;
    i.set_out(out);
    for (uint64_t x : in) i.add_inputs(x);
    instrs.push_back(i);
    return out;
  }
  void raw(const v1::Instr& i) { instrs.push_back(i); }
  void request(v1::Request::Kind k, uint64_t id = 0) {
    v1::Request r;
    r.set_request_id(100 + requests.size());
    r.set_kind(k);
    r.set_id(id);
    requests.push_back(r);
  }
  v1::ClientBatch client_batch() const {
    v1::ClientBatch b;
    for (const auto& i : instrs) *b.add_instrs() = i;
    for (uint64_t f : frees) b.add_frees(f);
    for (const auto& r : requests) *b.add_requests() = r;
    return b;
  }
  v1::WorkerBatch worker_batch(uint64_t session, uint64_t first_seq) const {
    v1::WorkerBatch b;
    b.set_session(session);
    b.set_first_seq(first_seq);
    for (const auto& i : instrs) *b.add_instrs() = i;
    for (uint64_t f : frees) b.add_frees(f);
    for (const auto& r : requests) *b.add_requests() = r;
    return b;
  }
};

// Every op of ops.def on small tensors of dtype `dt`; returns the ids worth fetching.
std::vector<uint64_t> every_op(Prog& p, DType dt) {
  const Shape s23{2, 3};
  uint64_t a = p.op(OpId::k_zeros, {}, make_shape_dtype(s23, dt));
  uint64_t b = p.op(OpId::k_ones, {}, make_shape_dtype(s23, dt));
  uint64_t c = p.op(OpId::k_full, {}, make_full(s23, dt, 2.5));
  uint64_t d = p.op(OpId::k_arange, {}, make_arange(0, 6, 1, dt == DType::kBool ? DType::kInt64 : dt));
  uint64_t e = p.op(OpId::k_randn, {}, make_random(s23, DType::kFloat32, 7, 0));
  uint64_t f = p.op(OpId::k_rand, {}, make_random(s23, DType::kBFloat16, 7, 1));
  std::string host = bytes_of({1, 2, 3, 4, 5, 6});
  OpAttrs fh = make_shape_dtype(s23, DType::kFloat32);
  fh.data = std::string_view(host).substr(0, 12);
  uint64_t g = p.op(OpId::k_from_host, {}, fh);
  OpAttrs hc;
  hc.push_int(12);
  hc.data = std::string_view(host).substr(12);
  p.op(OpId::k_host_chunk, {g}, hc);
  std::vector<uint64_t> keep = {a, b, c, d, e, f, g};
  for (OpId op : {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_div, OpId::k_pow,
                  OpId::k_maximum, OpId::k_minimum, OpId::k_eq, OpId::k_ne, OpId::k_lt,
                  OpId::k_le, OpId::k_gt, OpId::k_ge})
    keep.push_back(p.op(op, {c, g}));
  keep.push_back(p.op(OpId::k_add, {c}, make_binary_scalar(ScalarSide::kRight, 1, true)));
  keep.push_back(p.op(OpId::k_sub, {c}, make_binary_scalar(ScalarSide::kLeft, 0.5, false)));
  keep.push_back(p.op(OpId::k_pow, {c}, make_binary_scalar(ScalarSide::kRight, 2, true)));
  // Broadcasting (a row [3], a column [2, 1]) and mixed dtypes.
  uint64_t row = p.op(OpId::k_arange, {}, make_arange(1, 4, 1, dt == DType::kBool ? DType::kInt64 : dt));
  uint64_t col = p.op(OpId::k_full, {}, make_full(Shape{2, 1}, DType::kFloat32, -1.5));
  uint64_t i64 = p.op(OpId::k_ones, {}, make_shape_dtype(s23, DType::kInt64));
  for (OpId op : {OpId::k_add, OpId::k_sub, OpId::k_mul, OpId::k_div, OpId::k_pow,
                  OpId::k_maximum, OpId::k_lt, OpId::k_eq}) {
    keep.push_back(p.op(op, {c, row}));
    keep.push_back(p.op(op, {col, c}));
    keep.push_back(p.op(op, {i64, c}));
  }
  // Large enough for the kernels that split work over threads.
  uint64_t big = p.op(OpId::k_randn, {}, make_random(Shape{64, 1024}, DType::kFloat32, 3, 9));
  keep.push_back(p.op(OpId::k_sum, {p.op(OpId::k_exp, {big})}, make_reduce(1, false)));
  uint64_t cond = p.op(OpId::k_lt, {g, c});
  keep.push_back(p.op(OpId::k_where, {cond, g, c}));
  for (int i = 0; i < kNumOps; ++i) {  // every unary elementwise op of the table
    const auto op = static_cast<OpId>(i);
    if (op_rule(op) == ShapeRule::kUnarySame || op_rule(op) == ShapeRule::kUnaryFloat)
      keep.push_back(p.op(op, {g}));
  }
  const int64_t perm[] = {1, 0};
  uint64_t t = p.op(OpId::k_permute, {c}, make_permute(perm));
  keep.push_back(p.op(OpId::k_matmul, {g, t}));                       // [2,3] @ [3,2]
  uint64_t v = p.op(OpId::k_reshape, {d}, make_reshape(Shape{6}));
  uint64_t m3 = p.op(OpId::k_reshape, {v}, make_reshape(Shape{3, 2}));
  keep.push_back(p.op(OpId::k_matmul, {c, m3}));
  uint64_t batched = p.op(OpId::k_reshape, {g}, make_reshape(Shape{1, 2, 3}));
  keep.push_back(p.op(OpId::k_matmul, {batched, t}));                 // broadcast batch
  for (OpId op : {OpId::k_sum, OpId::k_mean, OpId::k_max, OpId::k_min, OpId::k_argmax,
                  OpId::k_argmin}) {
    keep.push_back(p.op(op, {g}, make_reduce(kAllDims, false)));
    keep.push_back(p.op(op, {g}, make_reduce(1, true)));
    keep.push_back(p.op(op, {g}, make_reduce(-2, false)));
  }
  keep.push_back(p.op(OpId::k_cumsum, {g}, make_axis(1)));
  keep.push_back(p.op(OpId::k_cumsum, {g}, make_axis(-2)));
  OpAttrs sl = make_reshape(Shape{1, 2});
  for (int64_t x : {1, 1, 0, 2}) sl.push_int(x);
  keep.push_back(p.op(OpId::k_slice, {g}, sl));
  OpAttrs rev = make_reshape(Shape{2, 3});
  for (int64_t x : {1, -1, 2, -1}) rev.push_int(x);
  keep.push_back(p.op(OpId::k_slice, {c}, rev));
  keep.push_back(p.op(OpId::k_cat, {a, b, g}, make_axis(0)));
  keep.push_back(p.op(OpId::k_cat, {a, g}, make_axis(-1)));
  for (DType to : {DType::kInt64, DType::kBFloat16, DType::kFloat16, DType::kBool,
                   DType::kFloat32, DType::kInt32})
    keep.push_back(p.op(OpId::k_cast, {g}, make_cast(to)));
  p.op(OpId::k_copy_, {a, g});
  p.op(OpId::k_copy_, {v, d});  // v shares d's bytes: copy-on-write
  // Strided views: g transposed, reversed with a repeated row; a column written in place, and
  // into v, which shares d's bytes (copy-on-write keeps the elements outside the view).
  const int64_t st_tr[] = {1, 3}, st_rev[] = {0, -1}, st_col[] = {3};
  keep.push_back(p.op(OpId::k_as_strided, {g}, make_strided(Shape{3, 2}, st_tr, 0)));
  keep.push_back(p.op(OpId::k_as_strided, {g}, make_strided(Shape{4, 3}, st_rev, 5)));
  uint64_t two = p.op(OpId::k_full, {}, make_full(Shape{2}, dt, 1.5));
  p.op(OpId::k_strided_copy_, {a, two}, make_strided(Shape{2}, st_col, 1));
  const DType vdt = dt == DType::kBool ? DType::kInt64 : dt;  // v's (d's) dtype
  uint64_t pair = p.op(OpId::k_ones, {}, make_shape_dtype(Shape{2}, vdt));
  p.op(OpId::k_strided_copy_, {v, pair}, make_strided(Shape{2}, st_col, 2));
  return keep;
}

// Hostile and mistaken instructions, after a few valid ones (ids 1..3).
void bad_ops(Prog& p) {
  uint64_t x = p.op(OpId::k_ones, {}, make_shape_dtype(Shape{2, 3}, DType::kFloat32));
  uint64_t y = p.op(OpId::k_ones, {}, make_shape_dtype(Shape{4, 5}, DType::kFloat32));
  p.op(OpId::k_add, {x, y});                                       // shape mismatch
  p.op(OpId::k_matmul, {x, x});                                    // inner dims differ
  p.op(OpId::k_add, {x, 999999});                                  // unknown id
  p.op(OpId::k_zeros, {}, make_shape_dtype(Shape{int64_t{1} << 40, 1 << 20}, DType::kFloat32));
  p.op(OpId::k_zeros, {}, make_shape_dtype(Shape{2048, 2048}, DType::kFloat32));  // > worker limit
  p.op(OpId::k_reshape, {x}, make_reshape(Shape{7}));
  const int64_t bad_perm[] = {0, 0};
  p.op(OpId::k_permute, {x}, make_permute(bad_perm));
  p.op(OpId::k_cat, {x, y}, make_axis(0));
  p.op(OpId::k_arange, {}, make_arange(0, 1, 0, DType::kFloat32));
  p.op(OpId::k_sum, {x}, make_reduce(5, false));
  OpAttrs sl = make_reshape(Shape{3, 3});
  for (int64_t v : {0, 1, 0, 1}) sl.push_int(v);
  p.op(OpId::k_slice, {x}, sl);
  OpAttrs hc;
  hc.push_int(20);
  hc.data = "0123456789";
  p.op(OpId::k_host_chunk, {x}, hc);  // overruns the tensor
  const int64_t huge[] = {INT64_MAX, INT64_MIN}, out_of[] = {4, 1};
  p.op(OpId::k_as_strided, {x}, make_strided(Shape{2, 2}, huge, 0));    // overflow-sized
  p.op(OpId::k_as_strided, {x}, make_strided(Shape{2, 3}, out_of, 0));  // reaches 6 of 6
  p.op(OpId::k_strided_copy_, {x, y}, make_strided(Shape{2, 2}, out_of, 0));  // src shape
  v1::Instr i;
  i.set_op(255);                      // unknown op
  i.set_out(p.next++);
  p.raw(i);
  i.Clear();
  i.set_op(op_wire_id(OpId::k_zeros));  // negative dim, rank 9, bad dtype
  i.set_out(p.next++);
  i.add_shape(-3);
  p.raw(i);
  i.clear_shape();
  for (int k = 0; k < 9; ++k) i.add_shape(1);
  i.set_out(p.next++);
  p.raw(i);
  i.clear_shape();
  i.set_dtype(static_cast<v1::DType>(77));
  i.set_out(p.next++);
  p.raw(i);
  i.Clear();
  i.set_op(op_wire_id(OpId::k_neg));  // in use / missing result id / in-place with a result
  i.set_out(x);
  i.add_inputs(x);
  p.raw(i);
  i.set_out(0);
  p.raw(i);
  i.set_op(op_wire_id(OpId::k_copy_));
  i.set_out(p.next++);
  i.add_inputs(y);
  p.raw(i);
  uint64_t z = p.op(OpId::k_neg, {999999});   // poisoned
  p.op(OpId::k_exp, {z});                     // inherits
  p.frees = {x, x, 424242};
  p.request(v1::Request::FETCH, x);          // freed
  p.request(v1::Request::FETCH, z);          // poisoned
  p.request(v1::Request::FETCH, y);
  p.request(v1::Request::SYNC);
  p.request(static_cast<v1::Request::Kind>(9));
}

// Hot paths, signals and shared memory (issue 11, 15): what newer clients send.
//   hot_loop     one step (a chain, a reduction, its temporaries freed) in five batches, each a
//                stretch cut by its SYNC: detected at the second, replayed by reference from the
//                third (with an executing worker), then the same op names on another dataflow;
//                hot_loop_split: each step in two frames
//   compile_scope  a `compile: true` signal config, then the step inside its scope twice (a hot
//                path at first sight) and once under `compile: false`, a backward-pass scope
//   shm_no_arena a from_host and a FETCH naming shared-memory regions with no arena registered
//                (refused; nothing is read)
// `split`: each step in two frames, the first without a request (the dispatcher holds a stretch
// that follows a hot path until its end comes, ClientSession::hold_if_hot).
std::vector<v1::ClientBatch> hot_loop_batches(bool split = false) {
  std::vector<v1::ClientBatch> out;
  Prog first;
  const uint64_t x = first.op(OpId::k_randn, {}, make_random(Shape{64}, DType::kFloat32, 3, 0));
  const uint64_t w = first.op(OpId::k_full, {}, make_full(Shape{64}, DType::kFloat32, 0.5));
  first.request(v1::Request::SYNC);
  first.requests.back().set_request_id(199);
  out.push_back(first.client_batch());
  uint64_t next = first.next;
  for (int step = 0; step < 5; ++step) {
    Prog p;
    p.next = next;
    const bool other_dataflow = step == 4;  // the same ops, reading w where x was
    const uint64_t a = p.op(OpId::k_mul, {other_dataflow ? w : x}, make_binary_scalar(ScalarSide::kRight, 1.5, false));
    const uint64_t b = p.op(OpId::k_add, {a, w});
    const uint64_t c = p.op(OpId::k_relu, {b});
    const uint64_t d = p.op(OpId::k_sum, {c}, make_reduce(kAllDims, false));
    p.frees = {a, b, c};
    v1::Request r;
    r.set_request_id(200 + static_cast<uint64_t>(step));
    r.set_kind(v1::Request::FETCH);
    r.set_id(d);
    p.requests.push_back(r);
    v1::ClientBatch cb = p.client_batch();
    for (int i = 0; i < 3; ++i) cb.add_free_at(4);  // after the step's four instructions
    if (split) {
      v1::ClientBatch head;
      for (int i = 0; i < 2; ++i) *head.add_instrs() = cb.instrs(i);
      cb.mutable_instrs()->DeleteSubrange(0, 2);
      for (int i = 0; i < cb.free_at_size(); ++i) cb.set_free_at(i, 2);
      out.push_back(head);
    }
    out.push_back(cb);
    next = p.next;
  }
  return out;
}

v1::Instr signal_instr(v1::SignalEvent::Kind kind, const std::string& name, bool backward_pass = false) {
  v1::Instr i;
  i.mutable_signal()->set_kind(kind);
  i.mutable_signal()->set_name(name);
  i.mutable_signal()->set_backward_pass(backward_pass);
  return i;
}

v1::Instr config_instr(const std::string& name, bool compile) {
  v1::Instr i;
  i.mutable_config()->set_name(name);
  i.mutable_config()->set_compile(compile);
  return i;
}

std::vector<v1::ClientBatch> compile_scope_batches() {
  std::vector<v1::ClientBatch> out;
  Prog first;
  first.raw(config_instr("step", true));
  first.raw(config_instr("eager", false));
  const uint64_t x = first.op(OpId::k_ones, {}, make_shape_dtype(Shape{4, 4}, DType::kFloat32));
  out.push_back(first.client_batch());
  uint64_t next = first.next;
  for (int k = 0; k < 3; ++k) {
    const std::string scope = k < 2 ? "step" : "eager";
    Prog p;
    p.next = next;
    p.raw(signal_instr(v1::SignalEvent::ENTER, scope));
    const uint64_t y = p.op(OpId::k_matmul, {x, x});
    const uint64_t z = p.op(OpId::k_exp, {y});
    p.raw(signal_instr(v1::SignalEvent::EXIT, scope));
    p.raw(signal_instr(v1::SignalEvent::ENTER, scope, true));  // its backward pass
    const uint64_t g = p.op(OpId::k_mul, {z, y});
    p.raw(signal_instr(v1::SignalEvent::EXIT, scope));
    p.frees = {y, z, g};
    p.request(v1::Request::SYNC);
    p.requests.back().set_request_id(300 + static_cast<uint64_t>(k));  // unique in the session
    out.push_back(p.client_batch());
    next = p.next;
  }
  return out;
}

v1::ClientBatch shm_no_arena_batch() {
  Prog p;
  OpAttrs fh = make_shape_dtype(Shape{1024}, DType::kFloat32);
  const uint64_t t = p.op(OpId::k_from_host, {}, fh);  // no data: the payload "is" in shm
  p.instrs.back().mutable_shm()->set_generation(1);
  p.instrs.back().mutable_shm()->set_offset(0);
  p.instrs.back().mutable_shm()->set_bytes(4096);
  const uint64_t u = p.op(OpId::k_ones, {}, make_shape_dtype(Shape{1024}, DType::kFloat32));
  p.request(v1::Request::FETCH, u);
  p.requests.back().mutable_shm()->set_generation(1);
  p.requests.back().mutable_shm()->set_offset(4096);
  p.requests.back().mutable_shm()->set_bytes(4096);
  p.request(v1::Request::FETCH, t);
  p.request(v1::Request::STATUS);
  p.request(v1::Request::SYNC);
  return p.client_batch();
}

std::string u16le(size_t n) {
  return std::string{static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff)};
}

// run_client_batch input: mode byte, then either length-prefixed ClientBatch protos (structured)
// or the frames of ClientMessages (raw).
std::string client_input(uint8_t mode, const std::vector<v1::ClientBatch>& batches) {
  std::string s(1, static_cast<char>(mode));
  for (const auto& b : batches) {
    if (mode & fuzz::kBatchRaw) {
      v1::ClientMessage m;
      *m.mutable_batch() = b;
      s += frame(m);
    } else {
      std::string body = b.SerializeAsString();
      s += u16le(body.size()) + body;
    }
  }
  return s;
}

std::string worker_input(const std::vector<v1::WorkerBatch>& batches) {
  std::string s;
  for (const auto& b : batches) s += frame(b);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gt-fuzz-seeds CORPUS_DIR\n");
    return 2;
  }
  g_root = argv[1];
  const DType dtypes[] = {DType::kFloat32, DType::kInt64, DType::kBFloat16, DType::kFloat16,
                          DType::kBool, DType::kInt32};

  // Programs shared by the targets.
  std::vector<std::pair<std::string, Prog>> progs;
  for (DType dt : dtypes) {
    Prog p;
    auto keep = every_op(p, dt);
    p.request(v1::Request::SYNC);
    for (size_t k = 0; k < keep.size(); k += 5) p.request(v1::Request::FETCH, keep[k]);
    p.request(v1::Request::STATS);
    for (size_t k = 0; k < keep.size(); k += 2) p.frees.push_back(keep[k]);
    progs.emplace_back(std::string("every_op_") + dtype_name(dt), std::move(p));
  }
  {
    Prog p;
    bad_ops(p);
    progs.emplace_back("bad_ops", std::move(p));
  }
  {
    Prog p;  // a bigger tensor fetched in several 64 KiB chunks
    uint64_t big = p.op(OpId::k_arange, {}, make_arange(0, 40000, 1, DType::kFloat32));
    uint64_t sq = p.op(OpId::k_mul, {big, big});
    p.request(v1::Request::FETCH, sq);
    p.request(v1::Request::SYNC);
    progs.emplace_back("chunked_fetch", std::move(p));
  }

  // --- frame_codec: byte 0 = piece seed + limit, then a stream of frames.
  {
    std::string all;
    all += frame(client_hello());
    all += frame(client_hello(fuzz::kTokenAlice));
    all += frame(worker_hello(fuzz::kWorkerSecret));
    for (auto& [name, p] : progs) {
      v1::ClientMessage cm;
      *cm.mutable_batch() = p.client_batch();
      v1::DispatchMessage dm;
      *dm.mutable_batch() = p.worker_batch(1, 0);
      write_seed("frame_codec", "client_" + name, std::string(1, '\x03') + frame(cm));
      write_seed("frame_codec", "dispatch_" + name, std::string(1, '\x47') + frame(dm));
    }
    v1::ServerMessage welcome;
    welcome.mutable_welcome()->set_session_id(3);
    welcome.mutable_welcome()->set_max_frame_bytes(1 << 20);
    all += frame(welcome);
    v1::ServerMessage reply;
    reply.mutable_reply()->set_request_id(9);
    reply.mutable_reply()->mutable_tensor()->add_shape(2);
    reply.mutable_reply()->mutable_tensor()->set_total_bytes(8);
    reply.mutable_reply()->mutable_tensor()->set_data(std::string(8, '\x01'));
    reply.mutable_reply()->set_last(true);
    auto* err = reply.mutable_reply()->add_errors();
    err->set_op("add");
    err->set_message("shapes do not broadcast");
    all += frame(reply);
    v1::WorkerMessage ack, hb, rep;
    ack.mutable_ack()->set_executed_seq(17);
    hb.mutable_heartbeat()->set_nonce(5);
    rep.mutable_error()->set_session(1);
    rep.mutable_error()->set_handle(2);
    rep.mutable_error()->mutable_error()->set_op("exp");
    auto* st = rep.mutable_reply();
    st->add_stats()->set_bytes(4096);
    all += frame(ack) + frame(hb) + frame(rep);
    v1::DispatchMessage refusal;
    refusal.mutable_refusal()->set_reason("no");
    all += frame(refusal);
    for (uint8_t b0 : {0x03, 0x07, 0x0b, 0xff, 0x02})
      write_seed("frame_codec", "mixed_stream_" + std::to_string(b0),
                 std::string(1, static_cast<char>(b0)) + all);
    write_seed("frame_codec", "empty_frames", std::string("\x03", 1) + std::string(12, '\0'));
    write_seed("frame_codec", "oversized_header", std::string("\x03\xff\xff\xff\x7f", 5) + "abc");
    write_seed("frame_codec", "limit_16", std::string("\x00", 1) + frame(client_hello()));
    write_seed("frame_codec", "truncated",
               std::string("\x03", 1) + frame(client_hello()).substr(0, 9));
    write_seed("frame_codec", "garbage_body",
               std::string("\x03\x06\x00\x00\x00\xff\xff\xff\xff\xff\xff", 11));
  }

  // --- handshake: mode byte, then what the connection sends.
  {
    auto hs = [](uint8_t mode, const std::string& name, const std::string& stream) {
      write_seed("handshake", name + "_m" + std::to_string(mode),
                 std::string(1, static_cast<char>(mode)) + stream);
    };
    v1::ClientMessage program;
    *program.mutable_batch() = progs[0].second.client_batch();
    const std::string hello = frame(client_hello());
    for (uint8_t mode : {0, 1, 4, 5}) {
      hs(mode, "client_hello", hello);
      hs(mode, "client_hello_program", hello + frame(program));
    }
    for (uint8_t mode : {2, 3, 6, 7}) {
      hs(mode, "token_alice", frame(client_hello(fuzz::kTokenAlice)) + frame(program));
      hs(mode, "token_root", frame(client_hello(fuzz::kTokenRoot)) + frame(program));
      hs(mode, "token_wrong", frame(client_hello("gt_wrong")));
      hs(mode, "no_token", hello);
      hs(mode, "worker_wrong_secret", frame(worker_hello("nope")));
    }
    for (uint8_t mode : {0, 2, 6}) {
      v1::WorkerMessage ack, rep, err, hb;
      ack.mutable_ack()->set_executed_seq(3);
      rep.mutable_reply()->set_request_id(1);
      rep.mutable_reply()->set_last(true);
      err.mutable_error()->set_session(1);
      err.mutable_error()->mutable_error()->set_op("add");
      hb.mutable_heartbeat()->set_nonce(1);
      hs(mode, "worker", frame(worker_hello(fuzz::kWorkerSecret)) + frame(ack) + frame(rep) +
                             frame(err) + frame(hb));
    }
    v1::ClientMessage h = client_hello();
    h.mutable_hello()->set_proto_major(kProtoMajor + 1);
    hs(4, "wrong_major", frame(h));
    h = client_hello();
    h.mutable_hello()->set_op_table_hash(12345);
    hs(4, "wrong_op_table", frame(h));
    h = client_hello();
    h.mutable_hello()->set_role(v1::ROLE_UNSPECIFIED);
    hs(4, "no_role", frame(h));
    hs(4, "batch_first", frame(program));
    hs(4, "length_lie", std::string("\xff\xff\xff\x00", 4) + hello);
    hs(4, "garbage", std::string("\x05\x00\x00\x00\xde\xad\xbe\xef\x01", 9));
    hs(4, "two_hellos", hello + hello);
  }

  // --- client_batch: mode byte, then batches (structured or raw frames).
  {
    for (uint8_t mode : {0, 1, 2, 3, 4, 5, 6, 7}) {
      for (auto& [name, p] : progs)
        write_seed("client_batch", name + "_m" + std::to_string(mode),
                   client_input(mode, {p.client_batch()}));
      // A program split over several frames, then frees, then a sync.
      Prog p;
      auto keep = every_op(p, DType::kFloat32);
      std::vector<v1::ClientBatch> parts;
      v1::ClientBatch cur;
      for (size_t k = 0; k < p.instrs.size(); ++k) {
        *cur.add_instrs() = p.instrs[k];
        if (k % 16 == 15) {
          parts.push_back(cur);
          cur.Clear();
        }
      }
      parts.push_back(cur);
      v1::ClientBatch tail;
      for (uint64_t id : keep) tail.add_frees(id);
      auto* r = tail.add_requests();
      r->set_request_id(1);
      r->set_kind(v1::Request::SYNC);
      parts.push_back(tail);
      write_seed("client_batch", "split_program_m" + std::to_string(mode),
                 client_input(mode, parts));
    }
    for (uint8_t mode : {0, 1, 2, 3, 4, 5, 6, 7}) {
      const std::string m = "_m" + std::to_string(mode);
      // (bit 3 set: no instruction log, so the dispatcher replays the paths by reference)
      // (bit 4 too: stretches cut into segments, which a client's frames may say ended)
      for (uint8_t mm : {mode, static_cast<uint8_t>(mode | fuzz::kBatchNoLog),
                         static_cast<uint8_t>(mode | fuzz::kBatchNoLog | fuzz::kBatchSegments)}) {
        const std::string suffix = "_m" + std::to_string(mm);
        write_seed("client_batch", "hot_loop" + suffix, client_input(mm, hot_loop_batches()));
        write_seed("client_batch", "hot_loop_split" + suffix,
                   client_input(mm, hot_loop_batches(true)));
        write_seed("client_batch", "compile_scope" + suffix,
                   client_input(mm, compile_scope_batches()));
        if (mm & fuzz::kBatchSegments) {
          std::vector<v1::ClientBatch> marked = hot_loop_batches(true);
          for (v1::ClientBatch& b : marked) b.set_segment_end(true);
          write_seed("client_batch", "hot_loop_segment_ends" + suffix, client_input(mm, marked));
        }
      }
      write_seed("client_batch", "shm_no_arena" + m, client_input(mode, {shm_no_arena_batch()}));
    }
    write_seed("client_batch", "raw_garbage_m3", std::string("\x03\x04\x00\x00\x00\x12\x02\x0a\x00", 9));
    write_seed("client_batch", "raw_hello_again_m3", std::string(1, '\x03') + frame(client_hello()));
  }

  // --- worker_batch: frames of WorkerBatch.
  {
    for (auto& [name, p] : progs) write_seed("worker_batch", name, worker_input({p.worker_batch(1, 0)}));
    // Two sessions, a later batch using earlier handles, end_session.
    Prog a;
    uint64_t x = a.op(OpId::k_arange, {}, make_arange(0, 12, 1, DType::kFloat32));
    Prog b;
    b.next = 10;
    uint64_t y = b.op(OpId::k_reshape, {x}, make_reshape(Shape{3, 4}));
    const int64_t perm[] = {1, 0};
    uint64_t t = b.op(OpId::k_permute, {y}, make_permute(perm));
    b.op(OpId::k_matmul, {y, t});
    b.op(OpId::k_exp, {y});
    b.request(v1::Request::FETCH, t);
    b.request(v1::Request::STATS);
    v1::WorkerBatch wb = b.worker_batch(2, 1);
    v1::WorkerBatch end;
    end.set_session(2);
    end.set_first_seq(6);
    for (uint64_t h : {x, y, t, uint64_t{12}, uint64_t{13}}) end.add_frees(h);
    end.set_end_session(true);
    write_seed("worker_batch", "multi_batch", worker_input({a.worker_batch(1, 0), wb, end}));
    Prog big;  // the memory limit: a tensor just under it, then one more that does not fit
    const int64_t n = static_cast<int64_t>(fuzz::kWorkerMemoryBytes / 4) - 1024;
    uint64_t u = big.op(OpId::k_zeros, {}, make_shape_dtype(Shape{n}, DType::kInt32));
    uint64_t w = big.op(OpId::k_ones, {}, make_shape_dtype(Shape{4096}, DType::kInt32));
    big.op(OpId::k_add, {u, u});
    big.op(OpId::k_sum, {u}, make_reduce(kAllDims, false));
    big.request(v1::Request::FETCH, w);
    write_seed("worker_batch", "memory_limit", worker_input({big.worker_batch(1, 0)}));
    Prog forged;  // handles that were never made, and reuse of a live one
    forged.op(OpId::k_neg, {77});
    forged.next = 1;
    forged.op(OpId::k_ones, {}, make_shape_dtype(Shape{3}, DType::kFloat32));
    forged.next = 1;
    forged.op(OpId::k_zeros, {}, make_shape_dtype(Shape{3}, DType::kFloat32));
    forged.request(v1::Request::FETCH, 1);
    forged.request(v1::Request::FETCH, 0);
    write_seed("worker_batch", "forged_handles", worker_input({forged.worker_batch(5, 0)}));
    // Hot paths (issue 11): a definition with a fusable chain, an upload and frees inside, two
    // runs, a run of an unknown path and one with too few bindings, then a forget.
    Prog hot;
    const uint64_t xin = hot.op(OpId::k_randn, {}, make_random(Shape{64}, DType::kFloat32, 3, 0));
    v1::WorkerBatch hb = hot.worker_batch(6, 0);
    v1::HotPath* path = hb.add_hot_define();
    path->set_id(1);
    path->set_bindings(1);
    auto add = [&](OpId op, std::initializer_list<uint64_t> refs, const OpAttrs& a) {
      v1::Instr* i = path->add_instrs();
      encode_instr(op, a, i);
      i->set_out(is_in_place(op) ? 0 : 1);
      for (uint64_t r : refs) i->add_inputs(r);
    };
    add(OpId::k_mul, {1}, make_binary_scalar(ScalarSide::kRight, 1.5, false));  // binding 0
    add(OpId::k_add, {0}, make_binary_scalar(ScalarSide::kRight, 0.25, false));  // result 0
    add(OpId::k_relu, {2}, {});
    add(OpId::k_exp, {4}, {});
    add(OpId::k_from_host, {}, make_shape_dtype(Shape{2}, DType::kFloat32));
    path->add_uploads(4);
    for (uint32_t k : {0u, 1u, 2u}) {
      path->add_frees(k);
      path->add_free_at(k + 2);
    }
    const std::string two = bytes_of({7, 8});
    for (uint64_t first : {100, 200}) {
      v1::HotRun* run = hb.add_instrs()->mutable_hot();
      run->set_path(1);
      run->add_bindings(xin);
      run->set_first_out(first);
      run->add_data(two);
    }
    v1::HotRun* unknown = hb.add_instrs()->mutable_hot();
    unknown->set_path(9);
    unknown->set_first_out(300);
    v1::HotRun* short_run = hb.add_instrs()->mutable_hot();
    short_run->set_path(1);
    short_run->set_first_out(400);
    hb.set_hot_extra(2 * (5 + 3 - 1));
    v1::WorkerBatch forget;
    forget.set_session(6);
    forget.set_first_seq(100);
    forget.add_hot_forget(1);
    forget.set_end_session(true);
    write_seed("worker_batch", "hot_paths", worker_input({hb, forget}));

    // A chain with casts (fused on the CPU: a head cast to float32, the value cast out of it),
    // run with a float16, a float32 and an int32 head.
    Prog cp;
    const uint64_t f32 = cp.op(OpId::k_randn, {}, make_random(Shape{4, 33}, DType::kFloat32, 5, 0));
    const uint64_t f16 = cp.op(OpId::k_cast, {f32}, make_cast(DType::kFloat16));
    const uint64_t i32 = cp.op(OpId::k_cast, {f32}, make_cast(DType::kInt32));
    v1::WorkerBatch cb = cp.worker_batch(6, 0);
    v1::HotPath* cpath = cb.add_hot_define();
    cpath->set_id(2);
    cpath->set_bindings(1);
    auto cadd = [&](OpId op, uint64_t ref, const OpAttrs& a) {
      v1::Instr* i = cpath->add_instrs();
      encode_instr(op, a, i);
      i->set_out(1);
      i->add_inputs(ref);
    };
    cadd(OpId::k_cast, 1, make_cast(DType::kFloat32));  // binding 0
    cadd(OpId::k_mul, 0, make_binary_scalar(ScalarSide::kRight, 1.5, false));
    cadd(OpId::k_cast, 2, make_cast(DType::kBFloat16));
    for (uint32_t k : {0u, 1u}) {
      cpath->add_frees(k);
      cpath->add_free_at(k + 2);
    }
    uint64_t first = 500;
    for (uint64_t head : {f16, f32, i32}) {
      v1::HotRun* run = cb.add_instrs()->mutable_hot();
      run->set_path(2);
      run->add_bindings(head);
      run->set_first_out(first);
      first += 10;
    }
    cb.set_hot_extra(3 * (3 + 2 - 1));
    write_seed("worker_batch", "hot_casts", worker_input({cb}));
  }
  for (const auto& [name, input] : gt::fuzz::reply_payload_seeds())  // fetch replies (issue 15)
    write_seed("reply_payload", name, input);
  std::printf("wrote %d seeds under %s\n", g_written, g_root.c_str());
  return 0;
}
