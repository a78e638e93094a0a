// A session's shared-memory transport (libgtcore/shm_arena.h, ARCHITECTURE §4): the arenas a
// client on the Unix socket registers, checked before any worker maps them, and handed on to the
// worker that answers a fetch or reads an upload, once per arena generation. Fetches that cannot
// use an arena come over the socket, which the client always accepts; uploads that cannot be
// read in place by their worker are copied into the instruction here. Either way an upload's
// region goes back to the client (its release word) once nobody needs it.
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
  shm_arenas_.push_back(ShmArenaHeld{a.generation(), a.bytes(), std::move(fd), nullptr});
  if (shm_arenas_.size() > kShmArenasHeld) shm_arenas_.pop_front();
  shm_generation_ = a.generation();
  if (log_->enabled())
    log_->write("SHM_ARENA", source_of(*conn_), "-", a.bytes(),
                fmt::format("generation={}", a.generation()));
  return Status::ok();
}

ClientSession::ShmArenaHeld* ClientSession::shm_arena(uint64_t generation) {
  for (auto& a : shm_arenas_)
    if (a.generation == generation) return &a;
  return nullptr;
}

bool ClientSession::give_shm_arena(WorkerState& w, uint64_t generation) {
  ShmArenaHeld* a = shm_arena(generation);
  if (!a || w.conn->transport != "unix") return false;  // descriptors do not cross TCP
  std::set<uint64_t>& given = shm_given_[w.id];
  if (given.count(generation)) return true;
  UniqueFd dup(::fcntl(a->fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) {
    spdlog::warn("session {}: cannot pass its shared-memory arena on: {}", id_, std::strerror(errno));
    return false;
  }
  v1::DispatchMessage m;
  auto* sa = m.mutable_shm_arena();
  sa->set_generation(a->generation);
  sa->set_bytes(a->bytes);
  sa->set_session(id_);
  // Sent now, ahead of the batch that will carry the request (which waits in the fair queue).
  if (!w.conn->io->send_with_fd(m, std::move(dup)).is_ok()) return false;
  given.insert(generation);
  while (given.size() > kShmArenasHeld) given.erase(given.begin());  // as the worker forgets
  return true;
}

bool ClientSession::shm_fetch_possible(WorkerState& w, const v1::ShmTarget& want, uint64_t nbytes) {
  // A region of an older arena (the client grew it meanwhile), or one that does not hold the
  // value: over the socket. The bounds are checked without overflow.
  ShmArenaHeld* a = shm_arena(want.generation());
  if (!a || want.generation() != shm_generation_ || want.bytes() < nbytes ||
      want.offset() > a->bytes || want.bytes() > a->bytes - want.offset())
    return false;
  return give_shm_arena(w, want.generation());
}

ClientSession::ShmUpload::ShmUpload(ClientSession& s, v1::Instr& in) : s_(s), in_(in) {
  if (!in.has_shm()) return;
  const v1::ShmTarget& t = in.shm();
  ShmArenaHeld* a = s.shm_arena(t.generation());
  if (!a) {
    status_ = invalid_argument("an upload names shared-memory arena {}, which this session has not "
                               "registered (or no longer holds)", t.generation());
    return;
  }
  if (!shm_upload_region_fits(t.offset(), t.bytes(), a->bytes)) {
    status_ = invalid_argument("an upload's region ({} bytes at {}) is not inside its arena of {}",
                               t.bytes(), t.offset(), a->bytes);
    return;
  }
  if (!a->mapping) {
    auto m = ShmMapping::map(a->fd.get(), a->bytes, /*populate=*/false);
    if (!m.is_ok()) {
      status_ = m.status();
      return;
    }
    a->mapping = std::move(*m);
  }
  mapping_ = a->mapping;
  region_ = mapping_->data() + t.offset();
  bytes_ = t.bytes();
}

ClientSession::ShmUpload::~ShmUpload() {
  if (region_ && !forwarded_) shm_mark_released(region_, bytes_);
}

std::string_view ClientSession::ShmUpload::materialize() {
  in_.set_data(region_, static_cast<size_t>(bytes_));
  in_.clear_shm();
  return in_.data();
}

bool ClientSession::ShmUpload::forward_to(WorkerState& w) {
  forwarded_ = s_.give_shm_arena(w, in_.shm().generation());
  if (forwarded_) s_.shm_bytes_ += bytes_;
  else materialize();
  return forwarded_;
}

}  // namespace gt::dispatcher
