#include "dispatcherd/server.h"

#include <spdlog/spdlog.h>
#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace gt::dispatcher {

Server::Server(asio::io_context& io, Dispatcher& d) : io_(io), dispatcher_(d) {}

Server::~Server() { close(); }

Status Server::listen(const ListenOptions& o) {
  boost::system::error_code ec;
  if (!o.address.empty()) {
    auto addr = asio::ip::make_address(o.address, ec);
    if (ec) return invalid_argument("listen_address: '{}' is not an IP address", o.address);
    if (!o.client_tokens && !addr.is_loopback() && !o.allow_insecure_tcp)
      return failed_precondition(
          "refusing to listen on {} without a users_file: anyone who can reach the port would be "
          "an admin (run code on the workers, read every tensor). Set users_file (add users with "
          "`gt-dispatcherd --users-file FILE --add-user NAME`), or listen_address: 127.0.0.1 "
          "(this host only), or allow_insecure_tcp: true on a closed network",
          o.address);
    asio::ip::tcp::endpoint ep(addr, static_cast<unsigned short>(o.port));
    tcp_ = std::make_unique<asio::ip::tcp::acceptor>(io_);
    tcp_->open(ep.protocol(), ec);
    if (!ec) tcp_->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) tcp_->bind(ep, ec);
    if (!ec) tcp_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return unavailable("cannot listen on {}:{}: {}", o.address, o.port, ec.message());
    tcp_port_ = tcp_->local_endpoint().port();
    tcp_loopback_ = addr.is_loopback();
    spdlog::info("listening on {}:{}", o.address, tcp_port_);
    if (!o.client_tokens)
      spdlog::warn("*** TCP {}:{} WITHOUT a users_file: anyone who can reach this port{} is an "
                   "admin: runs code on the workers and reads every tensor. Set users_file "
                   "(client tokens) unless this is a single-user machine ***",
                   o.address, tcp_port_, tcp_loopback_ ? " (any local user or process)" : "");
    accept_tcp();
  }
  if (!o.unix_socket.empty()) {
    ::unlink(o.unix_socket.c_str());  // a stale socket from a previous run
    unix_ = std::make_unique<asio::local::stream_protocol::acceptor>(io_);
    asio::local::stream_protocol::endpoint ep(o.unix_socket);
    unix_->open(ep.protocol(), ec);
    if (!ec) unix_->bind(ep, ec);
    if (!ec) unix_->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return unavailable("cannot listen on unix:{}: {}", o.unix_socket, ec.message());
    ::chmod(o.unix_socket.c_str(), static_cast<mode_t>(o.unix_socket_mode));
    if (!o.unix_socket_group.empty()) {
      // Local users in this group may connect; identity still comes from SO_PEERCRED.
      char buf[4096];
      group gr{};
      group* found = nullptr;
      if (::getgrnam_r(o.unix_socket_group.c_str(), &gr, buf, sizeof(buf), &found) != 0 || !found)
        return invalid_argument("unix_socket_group: no group named '{}'", o.unix_socket_group);
      if (::chown(o.unix_socket.c_str(), static_cast<uid_t>(-1), found->gr_gid) != 0)
        return permission_denied("cannot give {} to group {}", o.unix_socket,
                                 o.unix_socket_group);
    }
    unix_path_ = o.unix_socket;
    spdlog::info("listening on unix:{}", o.unix_socket);
    accept_unix();
  }
  if (!tcp_ && !unix_) return invalid_argument("nothing to listen on: set listen_address or unix_socket");
  return Status::ok();
}

bool Server::on_accept_error(const boost::system::error_code& ec, const char* which,
                             Backoff& b) {
  // Out of descriptors or memory: the connection stays in the listen queue, and retrying at
  // once would fail again at once (a hot loop that starves the sessions we do serve). Wait,
  // doubling up to kMaxAcceptBackoff; other errors concern one connection: go on.
  const int e = ec.value();
  const bool resources = ec.category() == boost::system::system_category() &&
                         (e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM);
  if (resources)
    b.delay = b.delay.count() == 0 ? kMinAcceptBackoff : std::min(b.delay * 2, kMaxAcceptBackoff);
  uint64_t held = 0;
  if (accept_log_.allow(&held))
    spdlog::warn("{} accept failed: {}{}{}", which, ec.message(),
                 held ? fmt::format(" ({} more since the last report)", held) : std::string(),
                 resources ? fmt::format("; retrying in {} ms", b.delay.count())
                           : std::string());
  if (!resources) return false;
  if (!b.timer) b.timer = std::make_unique<asio::steady_timer>(io_);
  return true;
}

void Server::accept_tcp() {
  tcp_->async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
    if (ec == asio::error::operation_aborted || !tcp_) return;
    if (!ec) {
      tcp_backoff_.delay = std::chrono::milliseconds(0);
      boost::system::error_code e2;
      s.set_option(asio::ip::tcp::no_delay(true), e2);
      int family = s.local_endpoint(e2).protocol().family();
      int fd = s.release(e2);
      if (!e2)
        dispatcher_.accept(StreamSocket(io_, asio::generic::stream_protocol(family, IPPROTO_TCP), fd),
                           "tcp");
    } else if (on_accept_error(ec, "tcp", tcp_backoff_)) {
      tcp_backoff_.timer->expires_after(tcp_backoff_.delay);
      tcp_backoff_.timer->async_wait([this](boost::system::error_code ec) {
        if (!ec && tcp_) accept_tcp();
      });
      return;
    }
    accept_tcp();
  });
}

void Server::accept_unix() {
  unix_->async_accept([this](boost::system::error_code ec, asio::local::stream_protocol::socket s) {
    if (ec == asio::error::operation_aborted || !unix_) return;
    if (!ec) {
      unix_backoff_.delay = std::chrono::milliseconds(0);
      boost::system::error_code e2;
      int fd = s.release(e2);
      if (!e2)
        dispatcher_.accept(StreamSocket(io_, asio::generic::stream_protocol(AF_UNIX, 0), fd),
                           "unix");
    } else if (on_accept_error(ec, "unix", unix_backoff_)) {
      unix_backoff_.timer->expires_after(unix_backoff_.delay);
      unix_backoff_.timer->async_wait([this](boost::system::error_code ec) {
        if (!ec && unix_) accept_unix();
      });
      return;
    }
    accept_unix();
  });
}

void Server::close() {
  boost::system::error_code ec;
  if (tcp_backoff_.timer) tcp_backoff_.timer->cancel();
  if (unix_backoff_.timer) unix_backoff_.timer->cancel();
  if (tcp_) {
    tcp_->close(ec);
    tcp_.reset();
  }
  if (unix_) {
    unix_->close(ec);
    unix_.reset();
    ::unlink(unix_path_.c_str());
  }
}

}  // namespace gt::dispatcher
