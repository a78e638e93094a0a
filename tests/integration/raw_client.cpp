#include "raw_client.h"

#include "instr_builder.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <chrono>
#include <stdexcept>

#include "libgtcore/frame_codec.h"
#include "libgtcore/shm_arena.h"
#include "gt/core/ops.h"
#include "libgtcore/version.h"

namespace gt::testing {

int connect_unix(const std::string& path) {
  sockaddr_un sa{};
  if (path.size() >= sizeof(sa.sun_path)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sa.sun_family = AF_UNIX;
  std::copy(path.begin(), path.end(), sa.sun_path);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

RawClient::RawClient(const std::string& address) {
  if (address.rfind("unix:", 0) == 0) {
    const std::string path = address.substr(5);
    if (path.size() >= sizeof(sockaddr_un{}.sun_path)) throw std::runtime_error("socket path too long");
    fd_ = connect_unix(path);
    if (fd_ < 0) throw std::runtime_error("connect failed");
    return;
  }
  auto colon = address.rfind(':');
  std::string host = address.substr(0, colon);
  int port = std::stoi(address.substr(colon + 1));
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, host.c_str(), &sa.sin_addr);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd_);
    throw std::runtime_error("connect failed");
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

RawClient::~RawClient() {
  if (fd_ >= 0) ::close(fd_);
}

v1::ServerMessage RawClient::hello_as_worker(const std::string& secret) {
  v1::ClientMessage m;  // Hello is field 1 in both envelopes
  fill_worker_hello(m.mutable_hello(), secret, "impostor");
  send(m);
  auto r = read(15000);
  if (!r) throw std::runtime_error("no answer to Hello");
  return *r;
}

v1::ServerMessage RawClient::hello(uint32_t major, uint64_t op_hash, const std::string& token) {
  v1::ClientMessage m;
  auto* h = m.mutable_hello();
  if (!token.empty()) h->mutable_credentials()->set_token(token);
  h->set_proto_major(major ? major : kProtoMajor);
  h->set_proto_minor(kProtoMinor);
  h->set_op_table_hash(op_hash ? op_hash : op_table_hash());
  h->set_role(v1::ROLE_CLIENT);
  h->set_client_name("raw-test-client");
  send(m);
  auto r = read(15000);
  if (!r) throw std::runtime_error("no answer to Hello");
  return *r;
}

void RawClient::send(const v1::ClientMessage& m) { send_message(m); }

void RawClient::send_message(const google::protobuf::MessageLite& m) {
  std::string out;
  if (!append_frame(&out, m).is_ok()) throw std::runtime_error("cannot frame");
  send_raw(out);
}

void RawClient::send_with_fds(const google::protobuf::MessageLite& m, const std::vector<int>& fds) {
  std::string out;
  if (!append_frame(&out, m).is_ok()) throw std::runtime_error("cannot frame");
  const ssize_t n = ::gt::send_with_fds(fd_, out, fds);
  if (n < 0) throw std::runtime_error(std::string("sendmsg: ") + std::strerror(errno));
  if (static_cast<size_t>(n) < out.size()) send_raw(out.substr(static_cast<size_t>(n)));
}

void RawClient::send_raw(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return;  // the peer closed: tests check that separately
    off += static_cast<size_t>(n);
  }
}

bool RawClient::read_exact(char* p, size_t n, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t got = 0;
  while (got < n) {
    int left = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    deadline - std::chrono::steady_clock::now())
                                    .count());
    if (left <= 0) return false;
    pollfd pf{fd_, POLLIN, 0};
    if (::poll(&pf, 1, left) <= 0) return false;
    ssize_t r = ::recv(fd_, p + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

std::optional<std::string> RawClient::read_frame(int timeout_ms) {
  unsigned char hdr[4];
  if (!read_exact(reinterpret_cast<char*>(hdr), 4, timeout_ms)) return std::nullopt;
  uint32_t len = hdr[0] | (hdr[1] << 8) | (hdr[2] << 16) | (static_cast<uint32_t>(hdr[3]) << 24);
  std::string body(len, '\0');
  if (!read_exact(body.data(), len, timeout_ms)) return std::nullopt;
  return body;
}

std::optional<v1::ServerMessage> RawClient::read(int timeout_ms) {
  auto body = read_frame(timeout_ms);
  if (!body) return std::nullopt;
  v1::ServerMessage m;
  if (!m.ParseFromString(*body)) return std::nullopt;
  return m;
}

bool RawClient::closed_by_peer(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pf{fd_, POLLIN, 0};
    if (::poll(&pf, 1, 50) > 0) {
      ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) return true;
    }
  }
  return false;
}

v1::Reply RawClient::request(v1::Request::Kind kind, uint64_t id) {
  return request_with(v1::ClientMessage(), kind, id);
}

v1::Reply RawClient::request_with(v1::ClientMessage m, v1::Request::Kind kind, uint64_t id) {
  auto* r = m.mutable_batch()->add_requests();
  uint64_t rid = next_request_++;
  r->set_request_id(rid);
  r->set_kind(kind);
  r->set_id(id);
  send(m);
  v1::Reply out;
  while (true) {
    auto msg = read(15000);
    if (!msg) throw std::runtime_error("no reply");
    if (msg->kind_case() == v1::ServerMessage::kRefusal)
      throw std::runtime_error("refused: " + msg->refusal().reason());
    if (msg->kind_case() != v1::ServerMessage::kReply || msg->reply().request_id() != rid)
      continue;
    const auto& rep = msg->reply();
    for (const auto& e : rep.errors()) *out.add_errors() = e;
    for (const auto& s : rep.stats()) *out.add_stats() = s;
    if (rep.has_dispatcher()) *out.mutable_dispatcher() = rep.dispatcher();
    if (rep.has_status()) *out.mutable_status() = rep.status();
    if (rep.has_tensor()) {
      auto* t = out.mutable_tensor();
      t->mutable_shape()->CopyFrom(rep.tensor().shape());
      t->set_dtype(rep.tensor().dtype());
      t->set_total_bytes(rep.tensor().total_bytes());
      t->mutable_data()->append(rep.tensor().data());
    }
    if (rep.last()) break;
  }
  out.set_request_id(rid);
  out.set_last(true);
  return out;
}

std::vector<v1::WorkerStats> RawClient::worker_stats() {
  v1::Reply r = request(v1::Request::STATS);
  return {r.stats().begin(), r.stats().end()};
}

std::vector<v1::WorkerStats> sorted_worker_stats(const std::string& address) {
  RawClient c(address);
  if (c.hello().kind_case() != v1::ServerMessage::kWelcome)
    throw std::runtime_error("sorted_worker_stats: the dispatcher did not welcome the client");
  std::vector<v1::WorkerStats> s = c.worker_stats();
  std::sort(s.begin(), s.end(), [](const auto& a, const auto& b) { return a.worker_id() < b.worker_id(); });
  return s;
}

}  // namespace gt::testing
