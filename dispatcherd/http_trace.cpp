// GET /api/trace?seconds=N (gt-trace --live): N seconds of the instruction log's lines, as text,
// answered once recorded (TraceRecorder). Admins only when a users file is configured: the log
// names every user's instructions.
#include <cstdlib>
#include <string>

#include "dispatcherd/http_server.h"
#include "dispatcherd/trace_recorder.h"

namespace gt::dispatcher {
namespace {

HttpServer::Response plain(int code, std::string body) {
  return {code, "text/plain; charset=utf-8", std::move(body), nullptr};
}

// The value of `key` in the target's query ("" when absent).
std::string query_value(const std::string& target, const std::string& key) {
  const size_t q = target.find('?');
  if (q == std::string::npos) return "";
  size_t at = q + 1;
  while (at < target.size()) {
    size_t end = target.find('&', at);
    if (end == std::string::npos) end = target.size();
    const std::string pair = target.substr(at, end - at);
    if (pair.rfind(key + "=", 0) == 0) return pair.substr(key.size() + 1);
    at = end + 1;
  }
  return "";
}

}  // namespace

HttpServer::Response HttpServer::trace_response(const std::string& method, const std::string& target,
                                                const std::string& authorization) const {
  if (method != "GET") return plain(405, "only GET\n");
  if (source_.tokens_required()) {
    const std::string prefix = "Bearer ";
    if (authorization.rfind(prefix, 0) != 0)
      return plain(401, "this dispatcher has a users_file: send Authorization: Bearer <token>\n");
    const UserPolicy* user = source_.user_for_token(authorization.substr(prefix.size()));
    if (user == nullptr) return plain(401, "unknown token\n");
    if (!user->admin)
      return plain(403, "a live trace shows every user's instructions: admins only\n");
  }
  double seconds = 5;
  if (const std::string v = query_value(target, "seconds"); !v.empty()) {
    char* end = nullptr;
    seconds = std::strtod(v.c_str(), &end);
    if (*end != '\0' || !(seconds > 0) || seconds > TraceRecorder::kMaxSeconds)
      return plain(400, "seconds: a number above 0 and at most 60\n");
  }
  Response r;
  r.later = [trace = source_.trace, seconds](std::function<void(Response)> send) {
    const bool started = trace(seconds, [send](std::string lines) {
      send(plain(200, std::move(lines)));
    });
    if (!started) send(plain(503, "too many live traces are recording; try again later\n"));
  };
  return r;
}

}  // namespace gt::dispatcher
