#include "tcp_pingpong.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "bench_util.h"

namespace gt::bench {

namespace {
bool io_exact(int fd, char* p, size_t n, bool write) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = write ? ::send(fd, p + done, n - done, MSG_NOSIGNAL) : ::recv(fd, p + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}
}  // namespace

std::vector<double> tcp_pingpong(int iters, size_t msg_bytes) {
  int lfd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = 0;
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(lfd, 1) != 0)
    throw std::runtime_error("tcp_pingpong: cannot listen");
  socklen_t len = sizeof(sa);
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&sa), &len);
  std::thread server([&] {
    int fd = ::accept(lfd, nullptr, nullptr);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::string buf(msg_bytes, '\0');
    while (io_exact(fd, buf.data(), msg_bytes, false) && io_exact(fd, buf.data(), msg_bytes, true)) {
    }
    ::close(fd);
  });
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0)
    throw std::runtime_error("tcp_pingpong: cannot connect");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::string buf(msg_bytes, 'x');
  std::vector<double> t;
  for (int i = 0; i < iters + 50; ++i) {
    double t0 = now_s();
    io_exact(fd, buf.data(), msg_bytes, true);
    io_exact(fd, buf.data(), msg_bytes, false);
    if (i >= 50) t.push_back(now_s() - t0);  // the first 50 warm up
  }
  ::close(fd);
  server.join();
  ::close(lfd);
  return t;
}

}  // namespace gt::bench
