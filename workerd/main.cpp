// gt-workerd: executes one device's instruction streams (ARCHITECTURE §6). Connects out to the
// dispatcher, registers its device, and serves until SIGTERM.
#include <systemd/sd-daemon.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "libgtcore/asio.h"
#include "libgtcore/config_table.h"
#include "libgtcore/logging.h"
#include "libgtcore/malloc_tuning.h"
#include "libgtcore/secret_file.h"
#include "libgtcore/version.h"
#include "workerd/backend_factory.h"
#ifdef GT_HAVE_NCCL
#include "workerd/peer/nccl_peer_link.h"
#endif
#include "workerd/peer/staged_peer_link.h"
#include "workerd/peer/tcp_peer_link.h"
#include "workerd/worker_link.h"
#include "workerd/worker_options.h"

namespace {

const gt::DaemonCommand kCommand = {
    "gt-workerd",
    "usage: gt-workerd [--config FILE] [--option value ...]\n"
    "       gt-workerd [--config FILE] [--option value ...] --print-config\n"
    "       gt-workerd --version\n"
    "\n"
    "--print-config prints every option as documented YAML with the values in effect\n"
    "(etc/gt/worker.yaml is its output). Options (also keys of --config FILE):"};

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts: large request buffers are reused, not faulted in afresh each time.
  gt::tune_malloc_for_large_buffers();
  // Every option is a row of worker_options.def; the rows fill `o`.
  gt::worker::WorkerOptions o;
  if (auto done = gt::parse_daemon_command_line(kCommand, gt::worker::worker_option_table(), argc,
                                                argv, &o))
    return *done;
  if (gt::Status st = gt::init_logging("gt-workerd", o.log_level); !st.is_ok()) {
    std::fprintf(stderr, "gt-workerd: %s\n", st.message().c_str());
    return 2;
  }
  // (No PR_SET_PDEATHSIG for the embedded default's workers: it fires when the *thread* that
  // spawned the worker exits, so a client whose first op ran in a short-lived thread lost its
  // worker. Such a worker exits when its dispatcher goes, which exits with the client:
  // dispatcher option parent_pid.)
  // The environment variable that set allow_tf32 before it was an option: honoured for one
  // release, with a warning. TODO(next release): drop it.
  if (const char* tf32 = std::getenv("GT_CUDA_ALLOW_TF32"); tf32 != nullptr) {
    spdlog::warn("GT_CUDA_ALLOW_TF32 is deprecated and will be ignored in a later release: use "
                 "--allow-tf32 (allow_tf32: true in worker.yaml)");
    if (std::strcmp(tf32, "1") == 0) o.allow_tf32 = true;
  }

  auto backend = gt::worker::make_backend(o);
  if (!backend.is_ok()) {
    spdlog::critical("{}", backend.status().message());
    return 1;
  }
  spdlog::info("gt-workerd {} on {}, memory limit {} MiB", gt::kVersion,
               (*backend)->device_name(), (*backend)->memory_bytes() >> 20);

  gt::worker::WorkerLinkOptions lo;
  lo.dispatcher = o.dispatcher;
  lo.max_frame_bytes = o.max_frame_bytes;
  lo.reconnect_ms = o.reconnect_ms;
  lo.turn_us = o.turn_us;
  lo.device_graphs = o.device_graphs;
  lo.early_fetches = o.early_fetches;
  lo.device_queue_ops = o.device_queue_ops;
  lo.exit_on_disconnect = o.exit_on_disconnect;
  // Derived: the row names a file, the link needs the secret in it (read once, now).
  if (!o.worker_secret_file.empty()) {
    auto secret = gt::read_secret_file(o.worker_secret_file);
    if (!secret.is_ok()) {
      spdlog::critical("worker_secret_file: {}", secret.status().message());
      return 1;
    }
    lo.worker_secret = *secret;
  }

  // Shard exchange between workers (ARCHITECTURE §5). Every worker has the TCP link (host memory).
  // A CUDA worker puts NCCL on top of it where it can (the TCP link still carries the NCCL
  // link's headers and bootstrap), else stages its tensors through host buffers.
  std::unique_ptr<gt::worker::TcpPeerLink> peer;
  std::unique_ptr<gt::worker::PeerLink> device_link;  // NCCL or staged, on top of `peer`
  const std::string& transport = o.peer_transport;
  if (transport != "auto" && transport != "tcp" && transport != "nccl") {
    spdlog::critical("peer_transport: '{}' is not one of auto, tcp, nccl", transport);
    return 2;
  }
  {
    gt::worker::TcpPeerLinkOptions po;
    po.listen_address = o.peer_listen_address;
    po.port = static_cast<uint16_t>(o.peer_port);
    po.timeout_ms = o.peer_timeout_ms;
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
    if (!device_link && ((*backend)->device_kind() != "cpu" || o.peer_staging)) {
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
  if (link.fatal()) {
    spdlog::critical("exiting: the device was lost");
    return 3;
  }
  return 0;
}
