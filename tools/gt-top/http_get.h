// gt-top's HTTP client (tools/gt-top): one GET over a plain TCP connection (Boost.Beast), with
// one deadline over resolving, connecting, sending and reading. The dispatcher's endpoint speaks
// plain HTTP on loopback by default; https is refused with a message.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "libgtcore/asio.h"
#include "libgtcore/status.h"

namespace gt::top {

struct Url {
  std::string host;    // without brackets for IPv6
  std::string port;    // "80" when the URL names none
  std::string prefix;  // the path before /api/status: "" or "/gt" (no trailing '/')
  std::string text;    // as given, for messages
};

// http://HOST[:PORT][/PREFIX]; HOST may be [IPv6]. "127.0.0.1:8080" (no scheme) is read as http.
Result<Url> parse_url(const std::string& text);

struct HttpReply {
  int code = 0;
  std::string body;
};

// GET url.prefix + path with `Authorization: Bearer <token>` when token is set. A reply with any
// status code is a result; not reaching the server, or no full reply within `timeout`, is an
// unavailable / deadline_exceeded Status naming the stage that failed. `done` runs once, on
// `io`'s thread (the live view's event loop).
using HttpDone = std::function<void(Result<HttpReply>)>;
void async_http_get(boost::asio::io_context& io, const Url& url, const std::string& path,
                    const std::string& token, std::chrono::milliseconds timeout, HttpDone done);

// The same, blocking (its own io_context).
Result<HttpReply> http_get(const Url& url, const std::string& path, const std::string& token,
                           std::chrono::milliseconds timeout);

}  // namespace gt::top
