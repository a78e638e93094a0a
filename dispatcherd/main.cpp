// gt-dispatcherd: one per box. Accepts clients and workers on one port (role in the first
// frame) and an optional Unix socket; rewrites client streams into worker streams (DESIGN §1).
#include <systemd/sd-daemon.h>

#include <signal.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "dispatcherd/dispatcher.h"
#include "dispatcherd/server.h"
#include "libgtcore/config.h"
#include "libgtcore/logging.h"
#include "libgtcore/version.h"

namespace {

void declare_options(gt::Config& c) {
  c.declare_string("listen_address", "127.0.0.1",
                   "TCP address for clients and workers (empty: no TCP listener)");
  c.declare_int("port", 29500, 0, 65535, "TCP port (0: ephemeral; see port_file)");
  c.declare_string("port_file", "", "write the bound TCP port to this file once listening");
  c.declare_string("unix_socket", "", "also listen on this Unix socket path");
  c.declare_string("unix_socket_mode", "0660", "permissions of the Unix socket (octal)");
  c.declare_int("max_frame_bytes", 64ll << 20, 1024, 1ll << 30,
                "largest frame accepted (checked before allocating)");
  c.declare_int("session_window", 65536, 16, 1ll << 30,
                "instructions a session may have outstanding before its socket is not read");
  c.declare_int("worker_window", 262144, 16, 1ll << 30,
                "instructions a worker may have outstanding before senders are paused");
  c.declare_int("worker_wait_ms", 10000, 0, 3600000,
                "how long a new session waits for a first worker before being refused");
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
  if (gt::Status st = cfg.parse_args(argc, argv); !st.is_ok()) {
    std::fprintf(stderr, "gt-dispatcherd: %s\n", st.message().c_str());
    return 2;
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
  o.worker_wait_ms = static_cast<int>(cfg.get_int("worker_wait_ms"));
  o.handshake_timeout_ms = static_cast<int>(cfg.get_int("handshake_timeout_ms"));
  o.exit_when_idle = cfg.get_bool("exit_when_idle");

  gt::asio::io_context io(1);
  gt::dispatcher::Dispatcher dispatcher(io, o, &ilog);
  gt::dispatcher::Server server(io, dispatcher);
  gt::dispatcher::ListenOptions lo;
  lo.address = cfg.get_string("listen_address");
  lo.port = static_cast<int>(cfg.get_int("port"));
  lo.unix_socket = cfg.get_string("unix_socket");
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
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", sig);
    sd_notify(0, "STOPPING=1");
    stop();
  });
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
