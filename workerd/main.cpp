// gt-workerd: executes one device's instruction streams (DESIGN §6). Connects out to the
// dispatcher, registers its device, and serves until SIGTERM.
#include <sys/prctl.h>
#include <systemd/sd-daemon.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "libgtcore/asio.h"
#include "libgtcore/config.h"
#include "libgtcore/logging.h"
#include "libgtcore/secret_file.h"
#include "libgtcore/version.h"
#include "workerd/backend_factory.h"
#ifdef GT_HAVE_NCCL
#include "workerd/peer/nccl_peer_link.h"
#endif
#include "workerd/peer/staged_peer_link.h"
#include "workerd/peer/tcp_peer_link.h"
#include "workerd/worker_link.h"

namespace {

void declare_options(gt::Config& c) {
  c.declare_string("dispatcher", "127.0.0.1:29500", "dispatcher address: host:port or unix:/path");
  c.declare_string("device", "auto", "cpu, a CUDA device index, or auto (GPU 0 if present)");
  c.declare_string("max_memory_bytes", "auto",
                   "memory limit for tensors on this worker, in bytes, or auto: the GPU's "
                   "memory, or for a CPU worker the host's (RAM or cgroup limit) less "
                   "max(1 GiB, 10%)");
  c.declare_int("max_frame_bytes", 64ll << 20, 1024, 1ll << 30, "largest frame accepted");
  c.declare_int("blas_threads", 0, 0, 1024, "OpenBLAS threads (0 = OpenBLAS default)");
  c.declare_int("turn_us", 2000, 1, 600ll * 1000 * 1000,
                "a session's turn on the executor (microseconds) while other sessions wait");
  c.declare_int("reconnect_ms", 1000, 10, 600000,
                "delay before reconnecting to the dispatcher (doubles up to 30 s)");
  c.declare_bool("exit_on_disconnect", false,
                 "exit when the dispatcher goes away (the embedded default uses this)");
  c.declare_string("worker_secret_file", "", "file holding the worker registration secret");
  c.declare_string("peer_listen_address", "127.0.0.1",
                   "address the TCP peer link listens on and other workers connect to");
  c.declare_int("peer_port", 0, 0, 65535, "TCP peer link port (0 = ephemeral)");
  c.declare_int("peer_timeout_ms", 60000, 100, 3600000,
                "deadline of one worker-to-worker communication instruction");
  c.declare_bool("peer_staging", false,
                 "stage shard exchange through host buffers even on a CPU worker (GPU workers "
                 "do whenever they do not use NCCL; this exercises that path without a GPU)");
  c.declare_string("peer_transport", "auto",
                   "how a CUDA worker exchanges shards: nccl, tcp (host-staged), or auto (NCCL "
                   "when libnccl.so.2 loads, else tcp); CPU workers always use tcp");
  c.declare_string("log_level", "info", "trace, debug, info, warn, error, off");
}

}  // namespace

int main(int argc, char** argv) {
  gt::Config cfg;
  declare_options(cfg);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf("usage: gt-workerd [--config FILE] [--option value ...]\n\n%s",
                  cfg.help().c_str());
      return 0;
    }
    if (a == "--version") {
      std::printf("gt-workerd %s\n", gt::kVersion);
      return 0;
    }
  }
  if (gt::Status st = cfg.parse_args(argc, argv); !st.is_ok()) {
    std::fprintf(stderr, "gt-workerd: %s\n", st.message().c_str());
    return 2;
  }
  if (gt::Status st = gt::init_logging("gt-workerd", cfg.get_string("log_level")); !st.is_ok()) {
    std::fprintf(stderr, "gt-workerd: %s\n", st.message().c_str());
    return 2;
  }
  if (cfg.get_bool("exit_on_disconnect")) prctl(PR_SET_PDEATHSIG, SIGTERM);

  auto backend = gt::worker::make_backend(cfg.get_string("device"), cfg);
  if (!backend.is_ok()) {
    spdlog::critical("{}", backend.status().message());
    return 1;
  }
  spdlog::info("gt-workerd {} on {}, memory limit {} MiB", gt::kVersion,
               (*backend)->device_name(), (*backend)->memory_bytes() >> 20);

  gt::worker::WorkerLinkOptions lo;
  lo.dispatcher = cfg.get_string("dispatcher");
  lo.max_frame_bytes = static_cast<uint64_t>(cfg.get_int("max_frame_bytes"));
  lo.reconnect_ms = static_cast<int>(cfg.get_int("reconnect_ms"));
  lo.turn_us = cfg.get_int("turn_us");
  lo.exit_on_disconnect = cfg.get_bool("exit_on_disconnect");
  if (std::string f = cfg.get_string("worker_secret_file"); !f.empty()) {
    auto secret = gt::read_secret_file(f);
    if (!secret.is_ok()) {
      spdlog::critical("worker_secret_file: {}", secret.status().message());
      return 1;
    }
    lo.worker_secret = *secret;
  }

  // Shard exchange between workers (DESIGN §5). Every worker has the TCP link (host memory).
  // A CUDA worker puts NCCL on top of it where it can (the TCP link still carries the NCCL
  // link's headers and bootstrap), else stages its tensors through host buffers.
  std::unique_ptr<gt::worker::TcpPeerLink> peer;
  std::unique_ptr<gt::worker::PeerLink> device_link;  // NCCL or staged, on top of `peer`
  const std::string transport = cfg.get_string("peer_transport");
  if (transport != "auto" && transport != "tcp" && transport != "nccl") {
    spdlog::critical("peer_transport: '{}' is not one of auto, tcp, nccl", transport);
    return 2;
  }
  {
    gt::worker::TcpPeerLinkOptions po;
    po.listen_address = cfg.get_string("peer_listen_address");
    po.port = static_cast<uint16_t>(cfg.get_int("peer_port"));
    po.timeout_ms = static_cast<int>(cfg.get_int("peer_timeout_ms"));
    po.secret = lo.worker_secret;  // peers are workers: the same secret admits them
    auto created = gt::worker::TcpPeerLink::create(po);
    if (!created.is_ok()) {
      spdlog::critical("{}", created.status().message());
      return 1;
    }
    peer = std::move(*created);
    spdlog::info("peer link listening on {}", peer->address());
    const bool cuda = (*backend)->device_kind() == "cuda";
    if (!cuda && transport == "nccl")
      spdlog::warn("peer_transport: nccl needs a CUDA worker; this {} worker uses tcp",
                   (*backend)->device_kind());
#ifdef GT_HAVE_NCCL
    if (cuda && transport != "tcp") {
      gt::worker::NcclPeerLinkOptions no;
      no.timeout_ms = po.timeout_ms;
      // auto: members that share a GPU fall back to the staged link; nccl: that is an error.
      no.staged_fallback = transport == "auto";
      auto nccl = gt::worker::NcclPeerLink::create(*peer, **backend, no);
      if (nccl.is_ok()) {
        device_link = std::move(*nccl);
      } else if (transport == "nccl") {
        spdlog::critical("peer_transport nccl: {}", nccl.status().message());
        return 1;
      } else {
        spdlog::info("peer link: no NCCL ({}); using the staged TCP link", nccl.status().message());
      }
    }
#else
    if (cuda && transport == "nccl") {
      spdlog::critical("peer_transport nccl: this gt-workerd was built without NCCL");
      return 1;
    }
#endif
    if (!device_link && ((*backend)->device_kind() != "cpu" || cfg.get_bool("peer_staging"))) {
      device_link = std::make_unique<gt::worker::StagedPeerLink>(*peer, **backend);
      spdlog::info("peer link: staging {} tensors through host buffers",
                   (*backend)->device_kind());
    }
  }

  gt::asio::io_context io;
  gt::worker::PeerLink* peer_link = device_link ? device_link.get() : peer.get();
  gt::worker::WorkerLink link(io, **backend, lo, peer_link);
  bool notified = false;
  link.on_registered = [&](uint32_t) {
    if (!notified) sd_notify(0, "READY=1");
    notified = true;
  };
  link.on_exit = [&] { io.stop(); };
  gt::asio::signal_set signals(io, SIGTERM, SIGINT);
  signals.async_wait([&](boost::system::error_code ec, int sig) {
    if (ec) return;
    spdlog::info("signal {}: shutting down", sig);
    sd_notify(0, "STOPPING=1");
    link.stop();
    io.stop();
  });
  std::signal(SIGPIPE, SIG_IGN);
  link.start();
  io.run();
  link.stop();
  return 0;
}
