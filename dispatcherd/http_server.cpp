#include "dispatcherd/http_server.h"

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <spdlog/spdlog.h>

#include <chrono>

namespace gt::dispatcher {
namespace beast = boost::beast;
namespace http = beast::http;

namespace {
constexpr int kMaxOpenConnections = 32;                  // scrapers and dashboards, not crowds
constexpr uint32_t kMaxRequestBytes = 8192;               // headers; GET has no body
constexpr auto kRequestDeadline = std::chrono::seconds(10);

// One connection: read one request within the deadline, answer, close.
struct Exchange : std::enable_shared_from_this<Exchange> {
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  http::request_parser<http::empty_body> parser;
  http::response<http::string_body> response;
  const HttpServer* server;
  std::shared_ptr<int> open;

  Exchange(asio::ip::tcp::socket s, const HttpServer* srv, std::shared_ptr<int> counter)
      : stream(std::move(s)), server(srv), open(std::move(counter)) {
    ++*open;
    parser.header_limit(kMaxRequestBytes);
    parser.body_limit(0);
  }
  ~Exchange() { --*open; }

  void start() {
    stream.expires_after(kRequestDeadline);
    http::async_read(stream, buffer, parser,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->read(ec); });
  }

  void read(beast::error_code ec) {
    if (ec) return;  // closed, timed out, or not HTTP: nothing to answer
    const auto& req = parser.get();
    const auto auth = req.find(http::field::authorization);
    HttpServer::Response r = server->handle(
        std::string(req.method_string()), std::string(req.target()),
        auth == req.end() ? std::string() : std::string(auth->value()));
    if (r.later) {  // answered when ready (a live trace), from the io_context
      stream.expires_never();
      r.later([self = shared_from_this()](HttpServer::Response later) {
        self->stream.expires_after(kRequestDeadline);  // for the write
        self->respond(std::move(later));
      });
      return;
    }
    respond(std::move(r));
  }

  void respond(HttpServer::Response r) {
    const auto& req = parser.get();
    response.version(req.version());
    response.result(static_cast<http::status>(r.code));
    response.set(http::field::server, "gt-dispatcherd");
    response.set(http::field::content_type, r.content_type);
    response.set(http::field::cache_control, "no-store");
    if (r.code == 401) response.set(http::field::www_authenticate, "Bearer realm=\"gt\"");
    response.keep_alive(false);
    response.body() = std::move(r.body);
    response.prepare_payload();
    http::async_write(stream, response, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    });
  }
};

HttpServer::Response text(int code, std::string body) {
  return {code, "text/plain; charset=utf-8", std::move(body)};
}

}  // namespace

HttpServer::HttpServer(asio::io_context& io, Source source)
    : source_(std::move(source)), acceptor_(io) {}

HttpServer::~HttpServer() { close(); }

Status HttpServer::listen(const std::string& address, int port) {
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) return invalid_argument("http_address: '{}' is not an IP address", address);
  const asio::ip::tcp::endpoint ep(ip, static_cast<uint16_t>(port));
  acceptor_.open(ep.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(ep, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return unavailable("http: cannot listen on {}:{}: {}", address, port, ec.message());
  port_ = acceptor_.local_endpoint().port();
  accept();
  return Status::ok();
}

void HttpServer::close() {
  boost::system::error_code ignored;
  acceptor_.close(ignored);
}

void HttpServer::accept() {
  acceptor_.async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) serve(std::move(socket));
    accept();
  });
}

void HttpServer::serve(asio::ip::tcp::socket socket) {
  if (*open_ >= kMaxOpenConnections) {  // over the cap: closed unanswered
    boost::system::error_code ignored;
    socket.close(ignored);
    return;
  }
  std::make_shared<Exchange>(std::move(socket), this, open_)->start();
}

HttpServer::Response HttpServer::handle(const std::string& method, const std::string& target,
                                        const std::string& authorization) const {
  const std::string path = target.substr(0, target.find('?'));
  if (path == "/api/trace" && source_.trace) return trace_response(method, target, authorization);
  const bool page = path == "/" || path == "/index.html";
  if (!page && path != "/metrics" && path != "/api/status") return text(404, "not found\n");
  if (method != "GET") return text(405, "only GET\n");
  // The page holds no data (it asks /api/status, with the token the user gives it), so a
  // browser may load it without an Authorization header.
  if (page) return {200, "text/html; charset=utf-8", kDashboardHtml};
  std::string only_user;
  if (source_.tokens_required()) {
    const std::string prefix = "Bearer ";
    if (authorization.rfind(prefix, 0) != 0)
      return text(401, "this dispatcher has a users_file: send Authorization: Bearer <token>\n");
    const UserPolicy* user = source_.user_for_token(authorization.substr(prefix.size()));
    if (user == nullptr) return text(401, "unknown token\n");
    if (!user->admin) only_user = user->name;
  }
  const v1::StatusReport s = source_.status(only_user);
  if (path == "/metrics")
    return {200, "text/plain; version=0.0.4; charset=utf-8", format_prometheus(s)};
  return {200, "application/json", format_status_json(s)};
}

}  // namespace gt::dispatcher
