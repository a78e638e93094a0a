#include "workerd/peer/peer_wire.h"

#include <algorithm>

namespace gt::worker::peer {

namespace {

void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

constexpr size_t kMaxField = kMaxPoisonBytes;
constexpr size_t kMaxNameBytes = 512;  // op and origin in a poison marker

void put_string(std::string* out, std::string_view s) {
  char len[4];
  put_u32(len, static_cast<uint32_t>(s.size()));
  out->append(len, 4);
  out->append(s);
}

// Reads one u32-length-prefixed string at `*at`, advancing it.
bool get_string(std::string_view in, size_t* at, std::string* s) {
  if (in.size() - *at < 4) return false;
  uint32_t n = get_u32(in.data() + *at);
  *at += 4;
  if (n > kMaxField || in.size() - *at < n) return false;
  s->assign(in.data() + *at, n);
  *at += n;
  return true;
}

}  // namespace

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string encode_hello(uint32_t sender, std::string_view secret) {
  std::string out(kHelloFixedBytes, '\0');
  put_u32(out.data(), kHelloMagic);
  put_u32(out.data() + 4, kWireVersion);
  put_u32(out.data() + 8, sender);
  put_u32(out.data() + 12, static_cast<uint32_t>(secret.size()));
  out.append(secret);
  return out;
}

Result<HelloFixed> decode_hello_fixed(const char* p) {
  if (get_u32(p) != kHelloMagic) return invalid_argument("not a GT peer connection (bad magic)");
  uint32_t version = get_u32(p + 4);
  if (version != kWireVersion)
    return invalid_argument("peer wire version {} (this worker speaks {})", version, kWireVersion);
  HelloFixed h;
  h.sender = get_u32(p + 8);
  h.secret_len = get_u32(p + 12);
  if (h.sender > kMaxWorkerId) return invalid_argument("bad sender worker id {}", h.sender);
  if (h.secret_len > kMaxSecretBytes)
    return invalid_argument("secret of {} bytes (at most {})", h.secret_len, kMaxSecretBytes);
  return h;
}

void encode_header(const FrameHeader& h, char* out) {
  put_u32(out, kFrameMagic);
  put_u32(out + 4, h.sender);
  put_u32(out + 8, static_cast<uint32_t>(h.kind));
  put_u32(out + 12, h.step);
  put_u64(out + 16, h.session);
  put_u64(out + 24, h.tag);
  put_u64(out + 32, h.length);
}

Result<FrameHeader> decode_header(const char* p) {
  if (get_u32(p) != kFrameMagic) return invalid_argument("bad frame magic");
  FrameHeader h;
  h.sender = get_u32(p + 4);
  uint32_t kind = get_u32(p + 8);
  h.step = get_u32(p + 12);
  h.session = get_u64(p + 16);
  h.tag = get_u64(p + 24);
  h.length = get_u64(p + 32);
  if (kind != static_cast<uint32_t>(MsgKind::kData) && kind != static_cast<uint32_t>(MsgKind::kPoison))
    return invalid_argument("unknown message kind {}", kind);
  h.kind = static_cast<MsgKind>(kind);
  if (h.sender > kMaxWorkerId) return invalid_argument("bad sender worker id {}", h.sender);
  if (h.kind == MsgKind::kPoison && h.length > kMaxPoisonBytes)
    return invalid_argument("poison marker of {} bytes (at most {})", h.length, kMaxPoisonBytes);
  if (h.length > kMaxMessageBytes) return invalid_argument("message of {} bytes", h.length);
  return h;
}

std::string encode_poison(const ErrorRecord& rec) {
  std::string out;
  put_string(&out, std::string_view(rec.op).substr(0, kMaxNameBytes));
  put_string(&out, std::string_view(rec.origin).substr(0, kMaxNameBytes));
  const size_t room = kMaxPoisonBytes - out.size() - 8;  // >= 8192 - 2 * 516 - 8
  put_string(&out, std::string_view(rec.message).substr(0, room));
  char code[4];
  put_u32(code, static_cast<uint32_t>(rec.code));
  out.append(code, 4);
  return out;
}

Result<ErrorRecord> decode_poison(std::string_view in) {
  ErrorRecord rec;
  size_t at = 0;
  uint32_t code = 0;
  if (!get_string(in, &at, &rec.op) || !get_string(in, &at, &rec.origin) ||
      !get_string(in, &at, &rec.message) || in.size() - at != 4)
    return invalid_argument("malformed poison marker");
  code = get_u32(in.data() + at);
  rec.code = error_code_from_wire(code);
  return rec;
}

}  // namespace gt::worker::peer
