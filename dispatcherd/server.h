// Listening sockets: TCP (127.0.0.1 by default) and an optional Unix socket, both handing
// accepted connections to the Dispatcher.
#pragma once

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

  asio::io_context& io_;
  Dispatcher& dispatcher_;
  std::unique_ptr<asio::ip::tcp::acceptor> tcp_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_;
  std::string unix_path_;
  int tcp_port_ = 0;
  bool tcp_loopback_ = true;
};

}  // namespace gt::dispatcher
