// The dispatcher's HTTP endpoint (issue 12): GET /metrics (Prometheus text exposition),
// GET /api/status (JSON), GET / (the live dashboard, which polls /api/status) and GET /api/trace
// (a live recording for gt-trace), served by Boost.Beast on the dispatcher's own io_context, so a
// request reads the dispatcher's state between frames without locks. Off unless http_port is
// set (dispatcher_options.def). Hardened as the main port is: bounded request size, a read
// deadline, a cap on open connections, GET only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dispatcherd/status.h"
#include "dispatcherd/users.h"
#include "libgtcore/asio.h"
#include "libgtcore/status.h"

namespace gt::dispatcher {

namespace asio = boost::asio;

// The dashboard page served at / (dashboard.html, compiled in).
extern const char* const kDashboardHtml;

class HttpServer {
 public:
  // What the endpoint reads; each call runs on the io_context's thread.
  struct Source {
    std::function<bool()> tokens_required;                       // a users_file is configured
    std::function<const UserPolicy*(const std::string&)> user_for_token;
    std::function<v1::StatusReport(const std::string& only_user)> status;
    // GET /api/trace (http_trace.cpp): records `seconds` of the instruction log and calls `done`
    // with the lines; false when it cannot start one now. Unset: the route answers 404.
    std::function<bool(double seconds, std::function<void(std::string)> done)> trace;
  };

  HttpServer(asio::io_context& io, Source source);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting (port 0: ephemeral).
  Status listen(const std::string& address, int port);
  int port() const { return port_; }
  void close();

  // The response to one request (exposed for tests): method, target and the Authorization
  // header's value -> status code, content type, body.
  struct Response {
    int code = 200;
    std::string content_type, body;
    // Set when the answer comes later (a live trace): called with what sends it.
    std::function<void(std::function<void(Response)>)> later = nullptr;
  };
  Response handle(const std::string& method, const std::string& target,
                  const std::string& authorization) const;

 private:
  void accept();
  void serve(asio::ip::tcp::socket socket);
  // http_trace.cpp: GET /api/trace?seconds=N, admins only.
  Response trace_response(const std::string& method, const std::string& target,
                          const std::string& authorization) const;

  Source source_;
  asio::ip::tcp::acceptor acceptor_;
  int port_ = 0;
  std::shared_ptr<int> open_ = std::make_shared<int>(0);  // connections being served
};

}  // namespace gt::dispatcher
