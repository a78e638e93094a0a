#include "libgtcore/socket_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gt {

Status send_all(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return unavailable("send failed: {}", n < 0 ? std::strerror(errno) : "connection closed");
  }
  return Status::ok();
}

Status read_some(int fd, FrameDecoder* decoder, int timeout_ms) {
  while (true) {
    char* p = decoder->prepare(64 * 1024);
    ssize_t n = ::recv(fd, p, decoder->prepared_size(), 0);
    if (n > 0) {
      decoder->commit(static_cast<size_t>(n));
      return Status::ok();
    }
    if (n == 0) return unavailable("connection closed by the peer");
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      pollfd pf{fd, POLLIN, 0};
      int r = ::poll(&pf, 1, timeout_ms);
      if (r == 0) return deadline_exceeded("no data within {} ms", timeout_ms);
      if (r < 0 && errno != EINTR) return unavailable("poll failed: {}", std::strerror(errno));
      continue;
    }
    return unavailable("recv failed: {}", std::strerror(errno));
  }
}

}  // namespace gt
