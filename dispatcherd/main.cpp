// gt-dispatcherd: one per box. Accepts clients and workers on one port (role in the first
// frame) and an optional Unix socket; rewrites client streams into worker streams (DESIGN §1).
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
#include "dispatcherd/server.h"
#include "dispatcherd/users.h"
#include "libgtcore/config.h"
#include "libgtcore/logging.h"
#include "libgtcore/secret_file.h"
#include "libgtcore/signal_config.h"
#include "libgtcore/version.h"

namespace {

void declare_options(gt::Config& c) {
  c.declare_string("listen_address", "127.0.0.1",
                   "TCP address for clients and workers (empty: no TCP listener)");
  c.declare_int("port", 29500, 0, 65535, "TCP port (0: ephemeral; see port_file)");
  c.declare_string("port_file", "", "write the bound TCP port to this file once listening");
  c.declare_string("unix_socket", "", "also listen on this Unix socket path");
  c.declare_string("unix_socket_mode", "0660", "permissions of the Unix socket (octal)");
  c.declare_string("unix_socket_group", "", "group that owns the Unix socket (empty: ours)");
  c.declare_int("max_frame_bytes", 64ll << 20, 1024, 1ll << 30,
                "largest frame accepted (checked before allocating)");
  c.declare_int("session_window", 65536, 16, 1ll << 30,
                "instructions a session may have outstanding before its socket is not read");
  c.declare_int("worker_window", 16384, 16, 1ll << 30,
                "instructions in flight on one worker; the rest waits in the fair scheduler");
  c.declare_int("session_inflight_us", 20000, 100, 60ll * 1000 * 1000,
                "estimated work (microseconds) one session may have in flight on one worker");
  c.declare_int("user_window", 262144, 16, 1ll << 30,
                "default per-user limit on instructions queued or in flight (users file overrides)");
  c.declare_int("heartbeat_interval_ms", 1000, 10, 600000, "how often workers are pinged");
  c.declare_int("heartbeat_timeout_ms", 5000, 50, 3600000,
                "a worker silent this long is declared dead and its sessions get an error");
  c.declare_int("progress_timeout_ms", 600000, 0, 86400000,
                "a worker with work outstanding that sends no ack or reply this long is declared "
                "dead (0: never; heartbeats still apply)");
  c.declare_int("drain_timeout_ms", 10000, 0, 3600000,
                "on SIGTERM, how long queued work may take to finish before exiting");
  c.declare_int("max_client_backlog_bytes", 1ll << 31, 1 << 20, 1ll << 40,
                "unread reply bytes after which a client that does not read is dropped");
  c.declare_int("max_total_client_backlog_bytes", 0, 0, 1ll << 44,
                "unread reply bytes of all clients together; over it the clients holding the most "
                "are dropped (0: a quarter of physical memory)");
  c.declare_int("max_handshake_frame_bytes", 64 << 10, 1024, 1ll << 30,
                "largest frame accepted before a successful Hello");
  c.declare_int("max_pending_connections", 1024, 1, 1 << 20,
                "connections that have not sent Hello yet; more are refused with a reason");
  c.declare_int("max_pending_per_address", 128, 1, 1 << 20,
                "the same limit per peer address (TCP: IP address; Unix socket: uid)");
  c.declare_string("signal_config", "",
                   "server-wide signal configs (YAML: name: {shard: {axis, workers, replicated}, "
                   "backward, compile}); sessions may register their own on top");
  c.declare_bool("auto_shard", false,
                 "creations outside any signal scope shard on axis 0 across all workers when "
                 "divisible, else replicate");
  c.declare_string("users_file", "",
                   "users, token hashes, quotas and weights (empty: single-user development mode)");
  c.declare_string("worker_secret_file", "",
                   "file with the secret workers must present (mode 0600); empty: workers may "
                   "register only over unix_socket, as this daemon's user or root");
  c.declare_int("worker_wait_ms", 10000, 0, 3600000,
                "how long a new session waits for a first worker before being refused");
  c.declare_int("min_workers", 1, 1, 65536,
                "new sessions wait up to worker_wait_ms for this many workers to register");
  c.declare_int("handshake_timeout_ms", 10000, 100, 600000,
                "a connection must send Hello within this time");
  c.declare_string("instruction_log", "",
                   "instruction log file (GT_INSTRUCTION_LOG in the environment also sets it)");
  c.declare_bool("exit_when_idle", false,
                 "exit after the last client disconnects (used by the embedded default)");
  c.declare_int("parent_pid", 0, 0, 1ll << 31,
                "exit when this process is gone (the embedded default passes its client)");
  c.declare_string("log_level", "info", "trace, debug, info, warn, error, off");
}

}  // namespace

int main(int argc, char** argv) {
  gt::Config cfg;
  declare_options(cfg);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: gt-dispatcherd [--config FILE] [--option value ...]\n\n%s",
                  cfg.help().c_str());
      return 0;
    }
    if (a == "--version") {
      std::printf("gt-dispatcherd %s\n", gt::kVersion);
      return 0;
    }
  }
  // `--add-user NAME` is an action, not an option: it prints a new token once and exits.
  std::string add_user_name;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--add-user" && i + 1 < argc) {
      add_user_name = argv[++i];
      continue;
    }
    if (a.rfind("--add-user=", 0) == 0) {
      add_user_name = a.substr(11);
      continue;
    }
    args.push_back(argv[i]);
  }
  if (gt::Status st = cfg.parse_args(static_cast<int>(args.size()), args.data()); !st.is_ok()) {
    std::fprintf(stderr, "gt-dispatcherd: %s\n", st.message().c_str());
    return 2;
  }
  if (!add_user_name.empty()) {
    const std::string& path = cfg.get_string("users_file");
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
                 "(GT_TOKEN or a 0600 file named by GT_TOKEN_FILE). A running dispatcher reads "
                 "the users file at start: restart it.\n",
                 add_user_name.c_str(), path.c_str());
    return 0;
  }
  if (gt::Status st = gt::init_logging("gt-dispatcherd", cfg.get_string("log_level"));
      !st.is_ok()) {
    std::fprintf(stderr, "gt-dispatcherd: %s\n", st.message().c_str());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);

  gt::dispatcher::InstructionLog ilog;
  std::string log_path = cfg.get_string("instruction_log");
  if (log_path.empty())
    if (const char* env = std::getenv("GT_INSTRUCTION_LOG")) log_path = env;
  if (!log_path.empty()) {
    if (gt::Status st = ilog.open(log_path); !st.is_ok()) {
      spdlog::critical("{}", st.message());
      return 1;
    }
    spdlog::info("instruction log: {}", log_path);
  }

  gt::dispatcher::DispatcherOptions o;
  o.max_frame_bytes = static_cast<uint64_t>(cfg.get_int("max_frame_bytes"));
  o.session_window = static_cast<uint64_t>(cfg.get_int("session_window"));
  o.worker_window = static_cast<uint64_t>(cfg.get_int("worker_window"));
  o.session_inflight_us = static_cast<uint64_t>(cfg.get_int("session_inflight_us"));
  o.worker_wait_ms = static_cast<int>(cfg.get_int("worker_wait_ms"));
  o.min_workers = static_cast<int>(cfg.get_int("min_workers"));
  o.handshake_timeout_ms = static_cast<int>(cfg.get_int("handshake_timeout_ms"));
  o.exit_when_idle = cfg.get_bool("exit_when_idle");
  o.user_window = static_cast<uint64_t>(cfg.get_int("user_window"));
  o.heartbeat_interval_ms = static_cast<int>(cfg.get_int("heartbeat_interval_ms"));
  o.heartbeat_timeout_ms = static_cast<int>(cfg.get_int("heartbeat_timeout_ms"));
  o.progress_timeout_ms = static_cast<int>(cfg.get_int("progress_timeout_ms"));
  o.max_client_backlog_bytes = static_cast<uint64_t>(cfg.get_int("max_client_backlog_bytes"));
  o.max_total_client_backlog_bytes =
      static_cast<uint64_t>(cfg.get_int("max_total_client_backlog_bytes"));
  o.max_handshake_frame_bytes = static_cast<uint64_t>(cfg.get_int("max_handshake_frame_bytes"));
  o.max_pending_connections = static_cast<uint32_t>(cfg.get_int("max_pending_connections"));
  o.max_pending_per_address = static_cast<uint32_t>(cfg.get_int("max_pending_per_address"));
  if (std::string f = cfg.get_string("worker_secret_file"); !f.empty()) {
    auto secret = gt::read_secret_file(f);
    if (!secret.is_ok()) {
      spdlog::critical("worker_secret_file: {}", secret.status().message());
      return 1;
    }
    o.worker_secret = *secret;
  }
  o.auto_shard = cfg.get_bool("auto_shard");
  if (std::string f = cfg.get_string("signal_config"); !f.empty()) {
    auto sc = gt::load_signal_configs(f);
    if (!sc.is_ok()) {
      spdlog::critical("signal_config: {}", sc.status().message());
      return 1;
    }
    o.signal_configs = std::move(*sc);
  }
  auto users = gt::dispatcher::UserTable::load(cfg.get_string("users_file"));
  if (!users.is_ok()) {
    spdlog::critical("users_file: {}", users.status().message());
    return 1;
  }

  gt::asio::io_context io(1);
  const bool tokens_configured = users->configured();
  const bool worker_secret_configured = !o.worker_secret.empty();
  gt::dispatcher::Dispatcher dispatcher(io, o, &ilog, std::move(*users));
  gt::dispatcher::Server server(io, dispatcher);
  gt::dispatcher::ListenOptions lo;
  lo.address = cfg.get_string("listen_address");
  lo.port = static_cast<int>(cfg.get_int("port"));
  lo.unix_socket = cfg.get_string("unix_socket");
  lo.unix_socket_group = cfg.get_string("unix_socket_group");
  {
    const std::string& m = cfg.get_string("unix_socket_mode");
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
  if (server.tcp_port() > 0 && !server.tcp_loopback_only() && !tokens_configured)
    spdlog::warn("*** listening on {}:{} beyond loopback WITHOUT client tokens: anyone who can "
                 "reach this port can run code on the workers and read tensors — set "
                 "users_file ***",
                 lo.address, server.tcp_port());
  if (!worker_secret_configured) {
    // Without a secret only the kernel's word (SO_PEERCRED, or the socket table's owner of a
    // loopback TCP peer) admits a worker (DESIGN §8).
    if (server.tcp_port() > 0)
      spdlog::warn("no worker_secret_file: workers may register only from this host as this "
                   "dispatcher's user (uid {}) or root{}; workers on other hosts are refused "
                   "until worker_secret_file is set on both daemons",
                   ::geteuid(), lo.unix_socket.empty() ? "" : ", over unix:" + lo.unix_socket + " or loopback TCP");
    else
      spdlog::info("no worker_secret_file: workers may register over unix:{} as uid {} or root",
                   lo.unix_socket, ::geteuid());
  }
  if (std::string pf = cfg.get_string("port_file"); !pf.empty()) {
    std::string tmp = pf + ".tmp";
    std::ofstream(tmp) << server.tcp_port() << "\n";
    std::rename(tmp.c_str(), pf.c_str());  // atomic: readers never see a partial file
  }

  auto stop = [&] {
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
  const int drain_ms = static_cast<int>(cfg.get_int("drain_timeout_ms"));
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: draining (up to {} ms), then exiting", sig, drain_ms);
    sd_notify(0, "STOPPING=1");
    server.close();  // stop accepting; work already queued is finished first
    dispatcher.drain(drain_ms, stop);
  });
  // SIGHUP reopens the instruction log (logrotate), again mode 0600 (DESIGN §9).
  gt::asio::signal_set hup(io, SIGHUP);
  std::function<void()> wait_hup = [&] {
    hup.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      if (gt::Status st = ilog.reopen(); !st.is_ok()) spdlog::error("{}", st.message());
      else if (ilog.enabled()) spdlog::info("instruction log reopened");
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
  if (ilog.enabled()) flush_tick();
  // The embedded default: exit with the client even if it dies before connecting.
  gt::asio::steady_timer parent_watch(io);
  const pid_t parent = static_cast<pid_t>(cfg.get_int("parent_pid"));
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
