// The process-wide session: created on first use from GT_ADDRESS, gt::connect, or the embedded
// default; torn down at exit.
#include <cstdlib>
#include <mutex>

#include "gt/error.h"
#include "gt/tensor.h"
#include "libgtclient/session_remote.h"

namespace gt::detail {

namespace {
std::mutex g_mu;
std::unique_ptr<Session> g_session;
std::string g_address;        // from gt::connect
int g_embedded_workers = 1;   // gt::detail::set_embedded_workers
bool g_shut_down = false;
bool g_atexit_registered = false;

void shutdown_at_exit() { Session::shutdown(); }
}  // namespace

bool session_alive() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_session != nullptr;
}

void set_embedded_workers(int n) {
  if (n < 1 || n > 64) throw Error(Code::kInvalidArgument, "gt: the embedded default takes 1..64 workers, not " + std::to_string(n));
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_session)
    throw Error(Code::kFailedPrecondition, "gt: the session already exists; set the worker count before the first op");
  g_embedded_workers = n;
}

Session& Session::get() {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_session) return *g_session;
  if (g_shut_down) throw Error(Code::kFailedPrecondition, "gt: the session was shut down");
  std::string address = g_address;
  if (address.empty())
    if (const char* env = std::getenv("GT_ADDRESS")) address = env;
  std::unique_ptr<EmbeddedDaemons> daemons;
  if (address.empty()) {
    auto d = EmbeddedDaemons::start(g_embedded_workers);
    if (!d.is_ok()) throw Error(d.status().code(), "gt: cannot start the embedded default: " + d.status().message());
    daemons = std::move(*d);
    address = daemons->address();
  }
  g_session = std::make_unique<RemoteSession>(address, std::move(daemons));
  if (!g_atexit_registered) {
    std::atexit(shutdown_at_exit);
    g_atexit_registered = true;
  }
  return *g_session;
}

void Session::connect(const std::string& address) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_session) throw Error(Code::kFailedPrecondition, "gt::connect: already connected (call it before the first op)");
  g_address = address;
}

void Session::shutdown() {
  std::unique_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    s = std::move(g_session);
    g_shut_down = true;
  }
  s.reset();  // outside the lock: tensors freed meanwhile see session_alive() == false
}

}  // namespace gt::detail

namespace gt {
// Public spelling (gt/tensor.h); lives here, with the real session, so fake-session unit tests
// of the API need not link the embedded default.
void set_embedded_workers(int n) { detail::set_embedded_workers(n); }
bool session_active() { return detail::session_alive(); }
uint64_t session_id() { return detail::Session::get().session_id(); }
}  // namespace gt
