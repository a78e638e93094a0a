// The TCP peer link's wire format (tcp_peer_link.h). All integers little-endian.
//
// A connection carries messages one way, from the worker that connected to the one that
// accepted (each worker connects out to a peer on its first send to it):
//
//   connector -> acceptor   hello:  u32 magic "GTPL", u32 version, u32 sender worker id,
//                                   u32 secret length (<= kMaxSecretBytes), secret bytes
//   acceptor  -> connector  u32 verdict (kHelloAccepted, or kHelloRefused and the connection
//                           closes); nothing else ever flows this way
//   connector -> acceptor   frames: a 40-byte header, then `length` payload bytes:
//                             u32 magic "GTPM", u32 sender (== the hello's), u32 kind, u32 step,
//                             u64 session, u64 tag, u64 length
//
// kind kData: `length` tensor bytes. kPoison: the sender's input was poisoned (or the sender
// failed): the payload is an ErrorRecord (encode_poison, at most kMaxPoisonBytes) that the
// receiver puts on its result in place of the data, so no peer is left waiting and the error
// travels with the value (ARCHITECTURE §2). A message is addressed by (sender, session, tag, step):
// the tag comes from the communication instruction; the step numbers the messages one
// instruction exchanges between the same pair.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "libgtcore/status.h"
#include "workerd/backend.h"

namespace gt::worker::peer {

inline constexpr uint32_t kHelloMagic = 0x4c505447;  // "GTPL"
inline constexpr uint32_t kFrameMagic = 0x4d505447;  // "GTPM"
inline constexpr uint32_t kWireVersion = 1;
inline constexpr size_t kHelloFixedBytes = 16;
inline constexpr size_t kMaxSecretBytes = 1024;
inline constexpr uint32_t kHelloAccepted = 0;
inline constexpr uint32_t kHelloRefused = 1;
inline constexpr size_t kHeaderBytes = 40;
inline constexpr size_t kMaxPoisonBytes = 8192;
// No single message may claim more than this (far beyond any real tensor; keeps sums of
// lengths away from overflow). Real admission limits live in the mailbox.
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 50;
inline constexpr uint32_t kMaxWorkerId = 0xffff;

enum class MsgKind : uint32_t { kData = 1, kPoison = 2 };

struct HelloFixed {
  uint32_t sender = 0;
  uint32_t secret_len = 0;
};

struct FrameHeader {
  MsgKind kind = MsgKind::kData;
  uint32_t sender = 0;
  uint32_t step = 0;
  uint64_t session = 0;
  uint64_t tag = 0;
  uint64_t length = 0;
};

std::string encode_hello(uint32_t sender, std::string_view secret);
// Validates the fixed part of a hello (kHelloFixedBytes at `p`); the secret follows.
Result<HelloFixed> decode_hello_fixed(const char* p);

void encode_header(const FrameHeader& h, char* out);  // writes kHeaderBytes
// Validates magic, kind, sender id and the length bounds of a header (kHeaderBytes at `p`).
Result<FrameHeader> decode_header(const char* p);

// The poison marker's payload: the error record, with the message shortened to fit.
std::string encode_poison(const ErrorRecord& rec);
Result<ErrorRecord> decode_poison(std::string_view bytes);

void put_u32(char* p, uint32_t v);
uint32_t get_u32(const char* p);

}  // namespace gt::worker::peer
