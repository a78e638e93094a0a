// Who owns the other end of a loopback TCP connection. The kernel's socket table
// (/proc/net/tcp, /proc/net/tcp6) records the uid of every local socket, so for a peer on this
// box it vouches for identity as SO_PEERCRED does on a Unix socket (the identd approach).
#pragma once

#include <sys/types.h>

#include <optional>

namespace gt::dispatcher {

// The uid owning the peer socket of TCP connection `fd` when the peer is on a loopback address
// of this host; nullopt for a remote peer, a non-TCP socket, or when the table has no entry.
std::optional<uid_t> loopback_tcp_peer_uid(int fd);

}  // namespace gt::dispatcher
