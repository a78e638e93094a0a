#include "tools/gt-top/http_get.h"

#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstdlib>
#include <memory>

#include "libgtcore/version.h"

namespace gt::top {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {
constexpr uint64_t kMaxBodyBytes = 64ull << 20;  // thousands of sessions fit many times over
}

Result<Url> parse_url(const std::string& text) {
  Url u;
  u.text = text;
  std::string rest = text;
  if (rest.rfind("https://", 0) == 0)
    return invalid_argument("'{}': https is not supported (the dispatcher serves plain HTTP; "
                            "reach it over loopback or an SSH tunnel)", text);
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos)
    return invalid_argument("'{}': not an http:// URL", text);
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) u.prefix = rest.substr(slash);
  while (!u.prefix.empty() && u.prefix.back() == '/') u.prefix.pop_back();
  if (authority.find('@') != std::string::npos)
    return invalid_argument("'{}': credentials in the URL are not supported (use --token)", text);
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return invalid_argument("'{}': unclosed '[' in the host", text);
    u.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return invalid_argument("'{}': junk after the host", text);
      port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) return invalid_argument("'{}': no host", text);
  if (port.empty()) port = "80";
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || p < 1 || p > 65535)
    return invalid_argument("'{}': port '{}' is not 1..65535", text, port);
  u.port = std::to_string(p);
  return u;
}

namespace {

// One request: resolve, connect, send, read; a timer over all of it. Kept alive by the
// handlers' shared_ptrs until the last has run.
struct Get : std::enable_shared_from_this<Get> {
  Url url;
  std::chrono::milliseconds timeout;
  HttpDone done;
  tcp::resolver resolver;
  beast::tcp_stream stream;
  asio::steady_timer deadline;
  beast::flat_buffer buffer;
  http::request<http::empty_body> req;
  http::response_parser<http::string_body> parser;
  const char* stage = "resolve";
  bool finished = false;

  Get(asio::io_context& io, Url u, std::chrono::milliseconds t, HttpDone d)
      : url(std::move(u)), timeout(t), done(std::move(d)), resolver(io), stream(io), deadline(io) {}

  void finish(Result<HttpReply> r) {
    if (finished) return;
    finished = true;
    deadline.cancel();
    resolver.cancel();
    beast::error_code ignored;
    stream.socket().close(ignored);
    HttpDone d = std::move(done);
    d(std::move(r));
  }
  Status timed_out() const {
    return deadline_exceeded("{}: no answer within {:.1f} s ({} timed out)", url.text,
                             static_cast<double>(timeout.count()) / 1000, stage);
  }
  void fail(beast::error_code ec) {
    if (finished) return;
    if (ec == beast::error::timeout) return finish(timed_out());
    finish(unavailable("cannot reach {}: {}: {}", url.text, stage, ec.message()));
  }

  void start() {
    auto self = shared_from_this();
    // The name lookup does not watch the stream's deadline: this timer bounds everything.
    deadline.expires_after(timeout);
    deadline.async_wait([self](beast::error_code ec) {
      if (!ec) self->finish(self->timed_out());
    });
    resolver.async_resolve(url.host, url.port,
                           [self](beast::error_code ec, tcp::resolver::results_type r) {
                             if (ec) return self->fail(ec);
                             self->connect(r);
                           });
  }
  void connect(const tcp::resolver::results_type& r) {
    stage = "connect";
    stream.expires_after(timeout);
    stream.async_connect(r, [self = shared_from_this()](beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->fail(ec);
      self->stage = "send";
      http::async_write(self->stream, self->req, [self](beast::error_code ec, size_t) {
        if (ec) return self->fail(ec);
        self->stage = "read";
        http::async_read(self->stream, self->buffer, self->parser,
                         [self](beast::error_code ec, size_t) {
                           if (ec) return self->fail(ec);
                           HttpReply reply;
                           reply.code = static_cast<int>(self->parser.get().result_int());
                           reply.body = std::move(self->parser.get().body());
                           self->finish(std::move(reply));
                         });
      });
    });
  }
};

}  // namespace

void async_http_get(asio::io_context& io, const Url& url, const std::string& path,
                    const std::string& token, std::chrono::milliseconds timeout, HttpDone done) {
  auto g = std::make_shared<Get>(io, url, timeout, std::move(done));
  g->req = {http::verb::get, url.prefix + path, 11};
  const bool v6 = url.host.find(':') != std::string::npos;
  g->req.set(http::field::host, (v6 ? "[" + url.host + "]" : url.host) + ":" + url.port);
  g->req.set(http::field::user_agent, std::string("gt-top/") + kVersion);
  g->req.set(http::field::accept, "application/json");
  if (!token.empty()) g->req.set(http::field::authorization, "Bearer " + token);
  g->parser.body_limit(kMaxBodyBytes);
  g->start();
}

Result<HttpReply> http_get(const Url& url, const std::string& path, const std::string& token,
                           std::chrono::milliseconds timeout) {
  asio::io_context io;
  Result<HttpReply> result = internal_error("no answer");
  async_http_get(io, url, path, token, timeout, [&](Result<HttpReply> r) { result = std::move(r); });
  io.run();
  return result;
}

}  // namespace gt::top
