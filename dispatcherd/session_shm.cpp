// A session's shared-memory transport for fetches (libgtcore/shm_arena.h, ARCHITECTURE §4): the
// arena a client on the Unix socket registers, checked before any worker maps it, and handed on
// to the worker that answers a fetch, once per arena generation. Everything here can say no:
// the fetch then comes over the socket, which the client always accepts.
#include <spdlog/spdlog.h>

#include "dispatcherd/client_session.h"
#include "dispatcherd/dispatcher_options.h"
#include "libgtcore/shm_arena.h"

#include <fcntl.h>

#include <cerrno>
#include <cstring>

namespace gt::dispatcher {

Status ClientSession::register_shm_arena(const v1::ShmArena& a, UniqueFd fd) {
  if (conn_->transport != "unix" || opts_.shm_arena_max_bytes == 0)
    return failed_precondition("shared-memory arenas are taken only on the Unix socket, and this "
                               "dispatcher offers none (shm_arena_max_bytes)");
  if (!fd.valid())
    return invalid_argument("a shared-memory arena arrived without its file descriptor");
  if (a.bytes() == 0 || a.bytes() > opts_.shm_arena_max_bytes)
    return invalid_argument("a shared-memory arena of {} bytes (this dispatcher takes 1 to {})",
                            a.bytes(), opts_.shm_arena_max_bytes);
  if (a.generation() <= shm_generation_)
    return invalid_argument("shared-memory arena generation {} after {} (they must increase)",
                            a.generation(), shm_generation_);
  GT_RETURN_IF_ERROR(check_shm_arena_fd(fd.get(), a.bytes()));
  shm_fd_ = std::move(fd);
  shm_generation_ = a.generation();
  shm_bytes_ = a.bytes();
  if (log_->enabled())
    log_->write("SHM_ARENA", source_of(*conn_), "-", a.bytes(),
                fmt::format("generation={}", a.generation()));
  return Status::ok();
}

bool ClientSession::shm_fetch_possible(WorkerState& w, const v1::ShmTarget& want, uint64_t nbytes) {
  // A region of an older arena (the client grew it meanwhile), or one that does not hold the
  // value: over the socket. The bounds are checked without overflow.
  if (!shm_fd_.valid() || want.generation() != shm_generation_ || want.bytes() < nbytes ||
      want.offset() > shm_bytes_ || want.bytes() > shm_bytes_ - want.offset())
    return false;
  if (w.conn->transport != "unix") return false;  // descriptors do not cross TCP
  auto given = shm_given_.find(w.id);
  if (given != shm_given_.end() && given->second == shm_generation_) return true;
  UniqueFd dup(::fcntl(shm_fd_.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) {
    spdlog::warn("session {}: cannot pass its shared-memory arena on: {}", id_, std::strerror(errno));
    return false;
  }
  v1::DispatchMessage m;
  auto* a = m.mutable_shm_arena();
  a->set_generation(shm_generation_);
  a->set_bytes(shm_bytes_);
  a->set_session(id_);
  // Sent now, ahead of the batch that will carry the request (which waits in the fair queue).
  if (!w.conn->io->send_with_fd(m, std::move(dup)).is_ok()) return false;
  shm_given_[w.id] = shm_generation_;
  return true;
}

}  // namespace gt::dispatcher
