// The peer wire format (peer_wire.h) and the mailbox's admission rules (mailbox.h).
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "workerd/peer/mailbox.h"
#include "workerd/peer/peer_wire.h"
#include "require_ok.h"

using namespace gt;
using namespace gt::worker::peer;
using gt::worker::ErrorRecord;

TEST_CASE("peer frame headers round trip and refuse malformed fields", "[peer][wire]") {
  FrameHeader h{MsgKind::kData, 7, 1, 42, 99, 1234567};
  char buf[kHeaderBytes];
  encode_header(h, buf);
  auto d = decode_header(buf);
  GT_REQUIRE_OK(d);
  CHECK(d->kind == MsgKind::kData);
  CHECK(d->sender == 7);
  CHECK(d->step == 1);
  CHECK(d->session == 42);
  CHECK(d->tag == 99);
  CHECK(d->length == 1234567);

  char bad[kHeaderBytes];
  std::memcpy(bad, buf, sizeof bad);
  bad[0] ^= 1;
  CHECK_FALSE(decode_header(bad).is_ok());  // magic
  std::memcpy(bad, buf, sizeof bad);
  put_u32(bad + 8, 3);
  CHECK_FALSE(decode_header(bad).is_ok());  // kind
  std::memcpy(bad, buf, sizeof bad);
  put_u32(bad + 4, kMaxWorkerId + 1);
  CHECK_FALSE(decode_header(bad).is_ok());  // sender
  FrameHeader huge{MsgKind::kData, 7, 0, 1, 1, uint64_t{1} << 62};
  encode_header(huge, bad);
  CHECK_FALSE(decode_header(bad).is_ok());  // length beyond any tensor
  FrameHeader big_poison{MsgKind::kPoison, 7, 0, 1, 1, kMaxPoisonBytes + 1};
  encode_header(big_poison, bad);
  CHECK_FALSE(decode_header(bad).is_ok());  // a marker is small
}

TEST_CASE("peer hellos validate magic, version, sender and secret length", "[peer][wire]") {
  std::string h = encode_hello(5, "s3cret");
  auto d = decode_hello_fixed(h.data());
  GT_REQUIRE_OK(d);
  CHECK(d->sender == 5);
  CHECK(d->secret_len == 6);
  CHECK(h.substr(kHelloFixedBytes) == "s3cret");
  std::string bad = h;
  put_u32(bad.data() + 4, kWireVersion + 1);
  CHECK_THAT(decode_hello_fixed(bad.data()).status().message(), Catch::Contains("version"));
  bad = h;
  put_u32(bad.data() + 12, kMaxSecretBytes + 1);
  CHECK_FALSE(decode_hello_fixed(bad.data()).is_ok());
  bad = "GET / HTTP/1.1\r\nHost: x\r\n";
  CHECK_FALSE(decode_hello_fixed(bad.data()).is_ok());
}

TEST_CASE("poison markers carry the error record, bounded", "[peer][wire]") {
  ErrorRecord rec{"matmul", "shapes [2, 3] and [4, 5] do not match", "worker 3",
                  gt::Code::kResourceExhausted};
  std::string m = encode_poison(rec);
  auto d = decode_poison(m);
  GT_REQUIRE_OK(d);
  CHECK(d->op == rec.op);
  CHECK(d->message == rec.message);
  CHECK(d->origin == rec.origin);
  CHECK(d->code == rec.code);
  ErrorRecord huge{std::string(10000, 'o'), std::string(100000, 'm'), std::string(10000, 'w')};
  std::string hm = encode_poison(huge);
  CHECK(hm.size() <= kMaxPoisonBytes);
  GT_REQUIRE_OK(decode_poison(hm));
  CHECK_FALSE(decode_poison(m.substr(0, m.size() - 1)).is_ok());
  CHECK_FALSE(decode_poison(m + "x").is_ok());
  CHECK_FALSE(decode_poison("\xff\xff\xff\xff").is_ok());
}

TEST_CASE("mailbox: expected sizes are checked before admitting, the budget bounds the rest",
          "[peer][mailbox]") {
  Mailbox box(1000);
  const uint64_t gen = box.generation();
  std::string why;
  MsgKey k{1, 0, 5, 9};
  box.expect(k, 4000);
  CHECK(box.admit(k, MsgKind::kData, 3999, gen, &why) == Mailbox::Admit::kRefuse);
  CHECK_THAT(why, Catch::Contains("4000"));
  // Exactly the expected size is admitted even beyond the budget.
  CHECK(box.admit(k, MsgKind::kData, 4000, gen, &why) == Mailbox::Admit::kStore);
  Message m;
  m.size = 4000;
  m.data.reset(new char[4000]);
  box.deliver(k, std::move(m), gen);
  auto got = box.take(k, 4000, std::chrono::steady_clock::now());
  GT_REQUIRE_OK(got);
  CHECK(got->size == 4000);
  CHECK(box.buffered_bytes() == 0);

  // An unexpected message waits for room; it goes in once the executor expects it.
  MsgKey k2{1, 0, 5, 10};
  std::atomic<Mailbox::Admit> a{Mailbox::Admit::kStopped};
  std::thread reader([&] { a = box.admit(k2, MsgKind::kData, 5000, gen, &why); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(a == Mailbox::Admit::kStopped);  // still waiting
  box.expect(k2, 5000);
  reader.join();
  CHECK(a == Mailbox::Admit::kStore);
  box.unreserve(5000, gen);

  // Abandoned instructions: their messages are dropped on arrival.
  box.abandon(5, 11);
  CHECK(box.admit(MsgKey{1, 0, 5, 11}, MsgKind::kData, 10, gen, &why) == Mailbox::Admit::kDiscard);
  // A reset stops the receivers of the old generation.
  box.reset();
  CHECK(box.admit(MsgKey{1, 0, 5, 12}, MsgKind::kData, 10, gen, &why) == Mailbox::Admit::kStopped);
}

TEST_CASE("mailbox: a failed peer ends a wait at once, a deadline ends it later", "[peer][mailbox]") {
  Mailbox box(1 << 20);
  const uint64_t gen = box.generation();
  auto t0 = std::chrono::steady_clock::now();
  auto r = box.take(MsgKey{3, 0, 1, 7}, 8, t0 + std::chrono::milliseconds(100));
  CHECK(r.status().code() == Code::kDeadlineExceeded);
  CHECK_THAT(r.status().message(), Catch::Contains("worker 3") && Catch::Contains("tag 7"));
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(100));
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    box.peer_failed(3, unavailable("gone"), gen);
  });
  t0 = std::chrono::steady_clock::now();
  r = box.take(MsgKey{3, 0, 1, 8}, 8, t0 + std::chrono::seconds(10));
  killer.join();
  CHECK(r.status().code() == Code::kUnavailable);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  // A message that arrived before the failure is still delivered.
  box.peer_connected(3, gen);
  std::string why;
  REQUIRE(box.admit(MsgKey{3, 0, 1, 9}, MsgKind::kData, 8, gen, &why) == Mailbox::Admit::kStore);
  Message m;
  m.size = 8;
  m.data.reset(new char[8]);
  box.deliver(MsgKey{3, 0, 1, 9}, std::move(m), gen);
  box.peer_failed(3, unavailable("gone"), gen);
  GT_CHECK_OK(box.take(MsgKey{3, 0, 1, 9}, 8, std::chrono::steady_clock::now()));
  // A wrong size is a clear error for the instruction.
  REQUIRE(box.admit(MsgKey{3, 0, 1, 10}, MsgKind::kData, 8, gen, &why) == Mailbox::Admit::kStore);
  Message m2;
  m2.size = 8;
  m2.data.reset(new char[8]);
  box.deliver(MsgKey{3, 0, 1, 10}, std::move(m2), gen);
  CHECK(box.take(MsgKey{3, 0, 1, 10}, 16, std::chrono::steady_clock::now()).status().code() ==
        Code::kDataLoss);
}
