#include "workerd/shm_arenas.h"

#include <sys/stat.h>

namespace gt::worker {

Status ShmArenaTable::attach(uint64_t session, uint64_t generation, uint64_t bytes, UniqueFd fd) {
  if (!fd.valid()) return invalid_argument("the arena's file descriptor did not arrive");
  GT_RETURN_IF_ERROR(check_shm_arena_fd(fd.get(), bytes));
  // Its pages must exist already (the client faulted them in): a sparse file cannot make this
  // worker allocate its memory. Mapped without populating (this is the I/O thread): the
  // executor's first writes map the existing pages in, a fault per several pages.
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_blocks) * 512 < bytes)
    return invalid_argument("the arena's memory is not all allocated");
  GT_ASSIGN_OR_RETURN(auto mapping, ShmMapping::map(fd.get(), bytes, /*populate=*/false));
  std::lock_guard<std::mutex> lk(mu_);
  auto& held = arenas_[session];
  held[generation] = std::move(mapping);
  while (held.size() > kPerSession) held.erase(held.begin());  // the oldest goes
  return Status::ok();
}

std::shared_ptr<ShmMapping> ShmArenaTable::find(uint64_t session, uint64_t generation) const {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = arenas_.find(session);
  if (it == arenas_.end()) return nullptr;
  auto m = it->second.find(generation);
  return m == it->second.end() ? nullptr : m->second;
}

Result<ShmArenaTable::Upload> ShmArenaTable::upload(uint64_t session, uint64_t generation,
                                                    uint64_t offset, uint64_t bytes) const {
  std::shared_ptr<ShmMapping> m = find(session, generation);
  if (!m)
    return failed_precondition("the upload's shared-memory arena (generation {}) is not mapped "
                               "on this worker", generation);
  if (!shm_upload_region_fits(offset, bytes, m->size()))
    return invalid_argument("the upload's region ({} bytes at {}) is not inside its arena of {}",
                            bytes, offset, m->size());
  return Upload{m, m->data() + offset, bytes};
}

void ShmArenaTable::drop(uint64_t session) {
  std::lock_guard<std::mutex> lk(mu_);
  arenas_.erase(session);
}

void ShmArenaTable::clear() {
  std::lock_guard<std::mutex> lk(mu_);
  arenas_.clear();
}

size_t ShmArenaTable::size() const {
  std::lock_guard<std::mutex> lk(mu_);
  size_t n = 0;
  for (const auto& [s, list] : arenas_) n += list.size();
  return n;
}

}  // namespace gt::worker
