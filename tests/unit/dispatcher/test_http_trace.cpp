// GET /api/trace as the HTTP endpoint answers it (HttpServer::handle, without a socket): admins
// only when a users file is configured, the duration checked, the answer deferred to the
// recording, 503 when no recording can start.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "dispatcherd/http_server.h"

using namespace gt::dispatcher;

namespace {

struct Fixture {
  boost::asio::io_context io;
  bool tokens = true;
  UserPolicy admin, user;
  double asked = -1;
  bool accept = true;
  HttpServer server{io,
                    {[this] { return tokens; },
                     [this](const std::string& t) -> const UserPolicy* {
                       return t == "adm" ? &admin : t == "usr" ? &user : nullptr;
                     },
                     [](const std::string&) { return gt::v1::StatusReport{}; },
                     [this](double s, std::function<void(std::string)> done) {
                       asked = s;
                       if (accept) done("lines\n");
                       return accept;
                     }}};
  Fixture() {
    admin.name = "root";
    admin.admin = true;
    user.name = "alice";
  }
  // The answer, deferred or not.
  HttpServer::Response get(const std::string& target, const std::string& auth) {
    HttpServer::Response r = server.handle("GET", target, auth);
    if (!r.later) return r;
    HttpServer::Response later;
    later.code = 0;
    r.later([&](HttpServer::Response x) { later = std::move(x); });
    return later;
  }
};

}  // namespace

TEST_CASE("/api/trace: admins only, duration checked, answered when recorded", "[http][trace]") {
  Fixture f;
  CHECK(f.get("/api/trace?seconds=2", "").code == 401);
  CHECK(f.get("/api/trace?seconds=2", "Bearer nope").code == 401);
  const auto refused = f.get("/api/trace?seconds=2", "Bearer usr");
  CHECK(refused.code == 403);
  CHECK(refused.body.find("admins only") != std::string::npos);
  CHECK(f.asked < 0);  // nothing was recorded for them
  CHECK(f.server.handle("POST", "/api/trace", "Bearer adm").code == 405);
  for (const char* bad : {"0", "-1", "61", "x", "2s"}) {
    INFO(bad);
    CHECK(f.get(std::string("/api/trace?seconds=") + bad, "Bearer adm").code == 400);
  }
  CHECK(f.asked < 0);

  const auto ok = f.get("/api/trace?x=1&seconds=2.5", "Bearer adm");
  CHECK(ok.code == 200);
  CHECK(ok.body == "lines\n");
  CHECK(ok.content_type.find("text/plain") == 0);
  CHECK(f.asked == 2.5);
  CHECK(f.get("/api/trace", "Bearer adm").code == 200);
  CHECK(f.asked == 5);  // the default
  f.accept = false;
  CHECK(f.get("/api/trace?seconds=1", "Bearer adm").code == 503);
  // Without a users file the endpoint is as open as /metrics (loopback by default).
  f.accept = true;
  f.tokens = false;
  CHECK(f.get("/api/trace?seconds=1", "").code == 200);
}
