// Listening sockets: TCP (127.0.0.1 by default) and an optional Unix socket, both handing
// accepted connections to the Dispatcher. When accept() fails for want of resources (EMFILE at
// the fd limit, ENFILE, ENOBUFS, ENOMEM) the listener backs off on a timer instead of retrying
// in a loop, logs once per interval with a count, and existing sessions go on being served.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "dispatcherd/dispatcher.h"
#include "libgtcore/asio.h"

namespace gt::dispatcher {

struct ListenOptions {
  std::string address = "127.0.0.1";  // empty: no TCP listener
  int port = 29500;                    // 0: ephemeral
  std::string unix_socket;             // empty: none
  int unix_socket_mode = 0660;
  std::string unix_socket_group;       // empty: the daemon's group
  // Without client tokens (no users_file) every TCP client is an admin: listen() then refuses a
  // non-loopback address unless allow_insecure_tcp, and warns on loopback.
  bool client_tokens = true;
  bool allow_insecure_tcp = false;
};

class Server {
 public:
  Server(asio::io_context& io, Dispatcher& d);
  ~Server();
  Status listen(const ListenOptions& o);
  int tcp_port() const { return tcp_port_; }
  bool tcp_loopback_only() const { return tcp_loopback_; }
  void close();

 private:
  void accept_tcp();
  void accept_unix();
  // After a failed accept: true when the listener should wait (`*delay`) before the next one.
  struct Backoff {
    std::unique_ptr<asio::steady_timer> timer;
    std::chrono::milliseconds delay{0};
  };
  bool on_accept_error(const boost::system::error_code& ec, const char* which, Backoff& b);

  static constexpr std::chrono::milliseconds kMinAcceptBackoff{25};
  static constexpr std::chrono::milliseconds kMaxAcceptBackoff{1000};

  asio::io_context& io_;
  Dispatcher& dispatcher_;
  std::unique_ptr<asio::ip::tcp::acceptor> tcp_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_;
  std::string unix_path_;
  int tcp_port_ = 0;
  bool tcp_loopback_ = true;
  Backoff tcp_backoff_, unix_backoff_;
  LogLimiter accept_log_{std::chrono::seconds(10), 1};
};

}  // namespace gt::dispatcher
