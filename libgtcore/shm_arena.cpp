#include "libgtcore/shm_arena.h"

#include "libgtcore/socket_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>

namespace gt {

namespace {
// Seals a receiver relies on: the file cannot shrink under its mapping. (Growing is harmless
// to a mapping; the arenas GT makes forbid it too, and any further sealing.)
constexpr int kRequiredSeals = F_SEAL_SHRINK;
constexpr int kArenaSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
}  // namespace

Result<std::shared_ptr<ShmMapping>> ShmMapping::map(int fd, uint64_t bytes, bool populate) {
  if (bytes == 0) return invalid_argument("shared-memory arena of 0 bytes");
  int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void* p = ::mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED)
    return resource_exhausted("cannot map a shared-memory arena of {} bytes: {}", bytes,
                              std::strerror(errno));
  return std::shared_ptr<ShmMapping>(new ShmMapping(static_cast<char*>(p), bytes));
}

ShmMapping::~ShmMapping() {
  if (unmapper_) unmapper_(data_, size_);
  else ::munmap(data_, static_cast<size_t>(size_));
}

Result<ShmArenaFile> create_shm_arena(uint64_t bytes) {
  UniqueFd fd(::memfd_create("gt-shm-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return unavailable("memfd_create: {}", std::strerror(errno));
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0)
    return resource_exhausted("cannot size a shared-memory arena to {} bytes: {}", bytes,
                              std::strerror(errno));
  if (::fcntl(fd.get(), F_ADD_SEALS, kArenaSeals) != 0)
    return unavailable("cannot seal a shared-memory arena: {}", std::strerror(errno));
  GT_ASSIGN_OR_RETURN(auto mapping, ShmMapping::map(fd.get(), bytes, /*populate=*/true));
  return ShmArenaFile{std::move(fd), std::move(mapping)};
}

Status check_shm_arena_fd(int fd, uint64_t bytes) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) return invalid_argument("shared-memory arena: fstat: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return invalid_argument("shared-memory arena: not a memory file");
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kRequiredSeals) != kRequiredSeals)
    return invalid_argument("shared-memory arena: not a memfd sealed against shrinking");
  if (static_cast<uint64_t>(st.st_size) != bytes)
    return invalid_argument("shared-memory arena: {} bytes where {} were declared", st.st_size, bytes);
  return Status::ok();
}

namespace {
std::atomic_ref<uint64_t> release_word(const char* region, uint64_t payload_bytes) {
  // 8-byte aligned: regions start on pages, the word at a multiple of 8 after them.
  return std::atomic_ref<uint64_t>(
      *reinterpret_cast<uint64_t*>(const_cast<char*>(region) + shm_release_word_offset(payload_bytes)));
}
}  // namespace

void shm_mark_released(char* region, uint64_t payload_bytes) {
  release_word(region, payload_bytes).store(1, std::memory_order_release);
}

bool shm_released(const char* region, uint64_t payload_bytes) {
  return release_word(region, payload_bytes).load(std::memory_order_acquire) != 0;
}

void shm_clear_released(char* region, uint64_t payload_bytes) {
  release_word(region, payload_bytes).store(0, std::memory_order_relaxed);
}

ssize_t send_with_fds(int sock, std::string_view data, const std::vector<int>& fds) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  if (!fds.empty()) {
    if (fds.size() > kMaxPassedFds) {
      errno = EINVAL;
      return -1;
    }
    const size_t len = sizeof(int) * fds.size();
    std::memset(control, 0, sizeof(control));
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(len);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(len);
    std::memcpy(CMSG_DATA(c), fds.data(), len);
  }
  return ::sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

Status send_all_with_fd(int sock, std::string_view data, int fd) {
  // The descriptor goes with the first bytes the socket takes; send_all writes the rest.
  while (true) {
    const ssize_t n = send_with_fds(sock, data, {fd});
    if (n > 0) return send_all(sock, data.substr(static_cast<size_t>(n)));
    GT_RETURN_IF_ERROR(after_failed_send(sock, n));
  }
}

ssize_t recv_with_fds(int sock, char* buf, size_t n, std::vector<UniqueFd>* fds, bool* truncated) {
  iovec iov{buf, n};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got = ::recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  if (got < 0) return got;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds->emplace_back(fd);
    }
  }
  if (msg.msg_flags & MSG_CTRUNC) *truncated = true;
  return got;
}

}  // namespace gt
