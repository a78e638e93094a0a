// Test helpers for the dispatcher's HTTP endpoint: a plain blocking HTTP/1.1 GET, the port the
// dispatcher wrote to its http_port_file, a scratch folder.
#pragma once

#include <catch2/catch.hpp>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace gt::testing {

struct HttpReply {
  int code = 0;
  std::string headers, body;
};

// A plain HTTP/1.1 request over a blocking socket (the endpoint closes after each answer).
inline HttpReply http_get(int port, const std::string& path, const std::string& token = "",
                          const std::string& method = "GET") {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  if (!token.empty()) req += "Authorization: Bearer " + token + "\r\n";
  req += "\r\n";
  REQUIRE(::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()));
  std::string all;
  char buf[65536];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) all.append(buf, static_cast<size_t>(n));
  ::close(fd);
  HttpReply r;
  const size_t end = all.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  r.headers = all.substr(0, end);
  r.body = all.substr(end + 4);
  r.code = std::atoi(all.substr(9, 3).c_str());
  return r;
}

inline int read_port_file(const std::string& path) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream f(path);
    int port = 0;
    if (f >> port && port > 0) return port;
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  FAIL("no http port file " << path);
  return 0;
}

inline std::string temp_dir() {
  char tmpl[] = "/tmp/gt-http-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  return tmpl;
}

}  // namespace gt::testing
