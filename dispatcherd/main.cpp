// gt-dispatcherd: one per box. Accepts clients and workers on one port (role in the first
// frame) and an optional Unix socket; rewrites client streams into worker streams (ARCHITECTURE §1).
#include <systemd/sd-daemon.h>

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "dispatcherd/dispatcher.h"
#include "dispatcherd/http_server.h"
#include "dispatcherd/server.h"
#include "dispatcherd/trace_recorder.h"
#include "dispatcherd/users.h"
#include "libgtcore/config_table.h"
#include "libgtcore/logging.h"
#include "libgtcore/malloc_tuning.h"
#include "libgtcore/secret_file.h"
#include "libgtcore/signal_config.h"

namespace {

const gt::DaemonCommand kCommand = {
    "gt-dispatcherd",
    "usage: gt-dispatcherd [--config FILE] [--option value ...]\n"
    "       gt-dispatcherd [--config FILE] [--option value ...] --print-config\n"
    "       gt-dispatcherd --users-file FILE --add-user NAME\n"
    "       gt-dispatcherd --version\n"
    "\n"
    "--print-config prints every option as documented YAML with the values in effect\n"
    "(etc/gt/dispatcher.yaml is its output). Options (also keys of --config FILE):"};

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: large request buffers are reused, not faulted in afresh each time.
  gt::tune_malloc_for_large_buffers();
  // `--add-user NAME` is an action, not an option: it prints a new token once and exits.
  std::string add_user_name;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--add-user" && i + 1 < argc) {
      const std::string name = argv[i + 1];
      if (name == "--help" || name == "-h") continue;  // the help, not a user called --help
      if (name.rfind("-", 0) == 0) {
        std::fprintf(stderr, "gt-dispatcherd: --add-user needs a user name, got '%s'\n",
                     name.c_str());
        return 2;
      }
      add_user_name = name;
      ++i;
      continue;
    }
    if (a.rfind("--add-user=", 0) == 0) {
      add_user_name = a.substr(11);
      continue;
    }
    args.push_back(argv[i]);
  }
  // Every option is a row of dispatcher_options.def; the rows fill `o`.
  gt::dispatcher::DispatcherOptions o;
  if (auto done = gt::parse_daemon_command_line(kCommand, gt::dispatcher::dispatcher_option_table(),
                                                static_cast<int>(args.size()), args.data(), &o))
    return *done;
  if (!add_user_name.empty()) {
    const std::string& path = o.users_file;
    if (path.empty()) {
      std::fprintf(stderr, "gt-dispatcherd: --add-user needs --users-file (or users_file in --config)\n");
      return 2;
    }
    auto token = gt::dispatcher::add_user(path, add_user_name);
    if (!token.is_ok()) {
      std::fprintf(stderr, "gt-dispatcherd: %s\n", token.status().message().c_str());
      return 1;
    }
    std::printf("%s\n", token->c_str());
    std::fprintf(stderr,
                 "user %s added to %s. The token above is shown once: give it to the user "
                 "(GT_TOKEN or a 0600 file named by GT_TOKEN_FILE). A running dispatcher "
                 "rereads the users file on SIGHUP (`systemctl reload gt-dispatcher`); its "
                 "sessions stay connected.\n",
                 add_user_name.c_str(), path.c_str());
    return 0;
  }
  if (gt::Status st = gt::init_logging("gt-dispatcherd", o.log_level); !st.is_ok()) {
    std::fprintf(stderr, "gt-dispatcherd: %s\n", st.message().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  gt::dispatcher::InstructionLog ilog;
  std::string log_path = o.instruction_log;
  if (log_path.empty())
    if (const char* env = std::getenv("GT_INSTRUCTION_LOG")) log_path = env;
  if (!log_path.empty()) {
    if (gt::Status st = ilog.open(log_path); !st.is_ok()) {
      spdlog::critical("{}", st.message());
      return 1;
    }
    spdlog::info("instruction log: {}", log_path);
  }

  // Derived options: rows that name files become their contents, read and checked now.
  if (!o.worker_secret_file.empty()) {
    auto secret = gt::read_secret_file(o.worker_secret_file);
    if (!secret.is_ok()) {
      spdlog::critical("worker_secret_file: {}", secret.status().message());
      return 1;
    }
    o.worker_secret = *secret;
  }
  if (!o.signal_config.empty()) {
    auto sc = gt::load_signal_configs(o.signal_config);
    if (!sc.is_ok()) {
      spdlog::critical("signal_config: {}", sc.status().message());
      return 1;
    }
    o.signal_configs = std::move(*sc);
  }
  auto users = gt::dispatcher::UserTable::load(o.users_file);
  if (!users.is_ok()) {
    spdlog::critical("users_file: {}", users.status().message());
    return 1;
  }

  gt::asio::io_context io(1);
  // Registered before anything announces the daemon (port_file, READY=1): a SIGHUP from then on
  // is queued for the handler below instead of killing the process.
  gt::asio::signal_set hup(io, SIGHUP);
  const bool tokens_configured = users->configured();
  const bool worker_secret_configured = !o.worker_secret.empty();
  gt::dispatcher::Dispatcher dispatcher(io, o, &ilog, std::move(*users));
  gt::dispatcher::Server server(io, dispatcher);
  gt::dispatcher::ListenOptions lo;
  lo.address = o.listen_address;
  lo.port = o.port;
  lo.unix_socket = o.unix_socket;
  lo.unix_socket_group = o.unix_socket_group;
  lo.client_tokens = tokens_configured;
  lo.allow_insecure_tcp = o.allow_insecure_tcp;
  {
    // A string row (octal text, which integer rows do not read), parsed into the mode here.
    const std::string& m = o.unix_socket_mode;
    char* end = nullptr;
    long mode = std::strtol(m.c_str(), &end, 8);
    if (m.empty() || *end != '\0' || mode < 0 || mode > 0777) {
      spdlog::critical("unix_socket_mode: '{}' is not an octal mode like 0660", m);
      return 2;
    }
    lo.unix_socket_mode = static_cast<int>(mode);
  }
  if (gt::Status st = server.listen(lo); !st.is_ok()) {
    spdlog::critical("{}", st.message());
    return 1;
  }
  if (!worker_secret_configured) {
    // Without a secret only the kernel's word (SO_PEERCRED, or the socket table's owner of a
    // loopback TCP peer) admits a worker (ARCHITECTURE §8).
    if (server.tcp_port() > 0)
      spdlog::warn("no worker_secret_file: workers may register only from this host as this "
                   "dispatcher's user (uid {}) or root{}; workers on other hosts are refused "
                   "until worker_secret_file is set on both daemons",
                   ::geteuid(), lo.unix_socket.empty() ? "" : ", over unix:" + lo.unix_socket + " or loopback TCP");
    else
      spdlog::info("no worker_secret_file: workers may register over unix:{} as uid {} or root",
                   lo.unix_socket, ::geteuid());
  }
  if (const std::string& pf = o.port_file; !pf.empty()) {
    std::string tmp = pf + ".tmp";
    std::ofstream(tmp) << server.tcp_port() << "\n";
    std::rename(tmp.c_str(), pf.c_str());  // atomic: readers never see a partial file
  }

  // Live recordings of the instruction log (GET /api/trace, gt-trace --live).
  gt::dispatcher::TraceRecorder recorder(
      io, ilog, [&](gt::dispatcher::InstructionLog::Tap& tap) { dispatcher.describe_for_trace(tap); });
  // The HTTP endpoint (/metrics, /api/status, /api/trace) when http_port is set (-1: off).
  gt::dispatcher::HttpServer http(
      io, {[&] { return dispatcher.tokens_configured(); },
           [&](const std::string& token) { return dispatcher.user_for_token(token); },
           [&](const std::string& only_user) { return dispatcher.status(only_user); },
           [&](double seconds, std::function<void(std::string)> done) {
             return recorder.record(seconds, std::move(done));
           }});
  if (o.http_port >= 0) {
    if (gt::Status st = http.listen(o.http_address, o.http_port); !st.is_ok()) {
      spdlog::critical("{}", st.message());
      return 1;
    }
    spdlog::info("http: / (dashboard), /metrics, /api/status and /api/trace on {}:{}{}",
                 o.http_address, http.port(),
                 tokens_configured ? " (Authorization: Bearer <token>)" : "");
    if (const std::string& pf = o.http_port_file; !pf.empty()) {
      std::string tmp = pf + ".tmp";
      std::ofstream(tmp) << http.port() << "\n";
      std::rename(tmp.c_str(), pf.c_str());
    }
  }

  auto stop = [&] {
    recorder.finish_all();  // a recording in progress is answered with what it has
    http.close();
    server.close();
    dispatcher.shutdown();
    ilog.flush();
    io.stop();
  };
  dispatcher.on_idle = [&] {
    spdlog::info("last client left: exiting (exit_when_idle)");
    stop();
  };
  gt::asio::signal_set signals(io, SIGTERM, SIGINT);
  const int drain_ms = o.drain_timeout_ms;
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: draining (up to {} ms), then exiting", sig, drain_ms);
    sd_notify(0, "STOPPING=1");
    server.close();  // stop accepting; work already queued is finished first
    dispatcher.drain(drain_ms, stop);
  });
  // SIGHUP reopens the instruction log (logrotate), again mode 0600 (ARCHITECTURE §9), and
  // reloads the users file, so adding or removing a user needs no restart (which would drop
  // every session). A file that does not load leaves the previous users in force.
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      if (gt::Status st = ilog.reopen(); !st.is_ok()) spdlog::error("{}", st.message());
      else if (ilog.file_open()) spdlog::info("instruction log reopened");
      if (!o.users_file.empty()) {
        auto reloaded = gt::dispatcher::UserTable::load(o.users_file);
        if (!reloaded.is_ok()) {
          spdlog::error("users_file not reloaded, the previous users stay: {}",
                        reloaded.status().message());
        } else {
          spdlog::info("users_file {} reloaded: {} users", o.users_file, reloaded->size());
          dispatcher.replace_users(std::move(*reloaded));
        }
      }
      wait_hup();
    });
  };
  wait_hup();
  dispatcher.start_heartbeats();
  gt::asio::steady_timer log_flush(io);
  std::function<void()> flush_tick = [&] {
    log_flush.expires_after(std::chrono::seconds(1));
    log_flush.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      ilog.flush();
      flush_tick();
    });
  };
  if (ilog.file_open()) flush_tick();
  // The embedded default: exit with the client even if it dies before connecting.
  gt::asio::steady_timer parent_watch(io);
  const pid_t parent = static_cast<pid_t>(o.parent_pid);
  std::function<void()> watch_tick = [&] {
    parent_watch.expires_after(std::chrono::milliseconds(500));
    parent_watch.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      if (::kill(parent, 0) != 0 && errno == ESRCH) {
        spdlog::info("parent process {} is gone: exiting", parent);
        stop();
        return;
      }
      watch_tick();
    });
  };
  if (parent > 0) watch_tick();
  sd_notify(0, "READY=1");
  io.run();
  ilog.flush();
  return 0;
}
