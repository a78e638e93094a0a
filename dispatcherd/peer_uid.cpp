#include "dispatcherd/peer_uid.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace gt::dispatcher {

namespace {

// An endpoint as the kernel prints it: address words (%08X each, in memory order) and port.
struct Endpoint {
  uint32_t words[4] = {0, 0, 0, 0};
  int nwords = 1;
  unsigned port = 0;
  bool operator==(const Endpoint& o) const {
    return nwords == o.nwords && port == o.port &&
           std::memcmp(words, o.words, sizeof(uint32_t) * static_cast<size_t>(nwords)) == 0;
  }
};

bool from_sockaddr(const sockaddr_storage& ss, Endpoint* e, bool* loopback) {
  if (ss.ss_family == AF_INET) {
    const auto& a = reinterpret_cast<const sockaddr_in&>(ss);
    std::memcpy(e->words, &a.sin_addr, 4);
    e->nwords = 1;
    e->port = ntohs(a.sin_port);
    *loopback = (ntohl(a.sin_addr.s_addr) >> 24) == 127;
    return true;
  }
  if (ss.ss_family == AF_INET6) {
    const auto& a = reinterpret_cast<const sockaddr_in6&>(ss);
    std::memcpy(e->words, &a.sin6_addr, 16);
    e->nwords = 4;
    e->port = ntohs(a.sin6_port);
    const bool v4mapped = IN6_IS_ADDR_V4MAPPED(&a.sin6_addr) && a.sin6_addr.s6_addr[12] == 127;
    *loopback = IN6_IS_ADDR_LOOPBACK(&a.sin6_addr) || v4mapped;
    return true;
  }
  return false;
}

// "0100007F:1F90" (or 32 hex digits for IPv6) -> Endpoint.
bool parse(const std::string& s, int nwords, Endpoint* e) {
  auto colon = s.find(':');
  if (colon != static_cast<size_t>(8 * nwords)) return false;
  e->nwords = nwords;
  for (int i = 0; i < nwords; ++i)
    e->words[i] = static_cast<uint32_t>(std::stoul(s.substr(static_cast<size_t>(8 * i), 8), nullptr, 16));
  e->port = static_cast<unsigned>(std::stoul(s.substr(colon + 1), nullptr, 16));
  return true;
}

}  // namespace

std::optional<uid_t> loopback_tcp_peer_uid(int fd) {
  sockaddr_storage peer{}, self{};
  socklen_t pl = sizeof(peer), sl = sizeof(self);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &pl) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&self), &sl) != 0)
    return std::nullopt;
  Endpoint p, s;
  bool peer_loopback = false, self_loopback = false;
  if (!from_sockaddr(peer, &p, &peer_loopback) || !from_sockaddr(self, &s, &self_loopback) ||
      !peer_loopback)
    return std::nullopt;
  // The peer's socket is the table row whose local end is the peer and remote end is us.
  const char* table = peer.ss_family == AF_INET ? "/proc/net/tcp" : "/proc/net/tcp6";
  std::ifstream f(table);
  std::string line;
  std::getline(f, line);  // header
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string sl_no, local, remote, state, queues, timer, retr, uid;
    if (!(in >> sl_no >> local >> remote >> state >> queues >> timer >> retr >> uid)) continue;
    Endpoint l, r;
    try {
      if (!parse(local, p.nwords, &l) || !parse(remote, p.nwords, &r)) continue;
      if (l == p && r == s) return static_cast<uid_t>(std::stoul(uid));
    } catch (const std::exception&) {
      continue;
    }
  }
  return std::nullopt;
}

}  // namespace gt::dispatcher
