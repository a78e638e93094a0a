#include "tools/gt-trace/live_fetch.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "libgtcore/asio.h"

namespace gt::trace {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Result<std::string> fetch_live(const std::string& url, double seconds, const std::string& token) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0)
    return invalid_argument("--live {}: expected http://host:port (the dispatcher's http_port)", url);
  std::string hostport = url.substr(scheme.size());
  hostport = hostport.substr(0, hostport.find('/'));
  const size_t colon = hostport.rfind(':');
  if (colon == std::string::npos || colon + 1 == hostport.size())
    return invalid_argument("--live {}: no port (the dispatcher's http_port)", url);
  std::string host = hostport.substr(0, colon);
  const std::string port = hostport.substr(colon + 1);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);

  asio::io_context io;
  beast::tcp_stream stream(io);
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(io);
  auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return unavailable("cannot resolve {}: {}", hostport, ec.message());
  stream.connect(endpoints, ec);
  if (ec) return unavailable("cannot connect to {}: {}", hostport, ec.message());
  // The answer comes after the recording: wait for it, but not forever.
  timeval tv{static_cast<time_t>(seconds) + 30, 0};
  ::setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(stream.socket().native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

  http::request<http::empty_body> req(http::verb::get, fmt::format("/api/trace?seconds={}", seconds),
                                      11);
  req.set(http::field::host, hostport);
  req.set(http::field::user_agent, "gt-trace");
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  http::write(stream, req, ec);
  if (ec) return unavailable("cannot send the request to {}: {}", hostport, ec.message());

  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(256u << 20);  // the recording's cap is smaller
  http::read(stream, buffer, parser, ec);
  if (ec) return unavailable("no answer from {}: {}", hostport, ec.message());
  auto& res = parser.get();
  if (res.result_int() != 200) {
    const Code code = res.result_int() == 401 || res.result_int() == 403 ? Code::kPermissionDenied
                      : res.result_int() == 400                          ? Code::kInvalidArgument
                                                                        : Code::kUnavailable;
    std::string body = res.body();
    while (!body.empty() && body.back() == '\n') body.pop_back();
    return Status(code, fmt::format("{} answered {}: {}", hostport, res.result_int(), body));
  }
  return std::move(res.body());
}

}  // namespace gt::trace
