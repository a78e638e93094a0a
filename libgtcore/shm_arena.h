// Shared-memory payloads for clients on the worker's host (issue 15, ARCHITECTURE §4).
//
// A large fetch over sockets crosses two hops (worker -> dispatcher -> client), four kernel
// copies. A client on the Unix socket instead makes an arena: a memfd it maps, pre-faults and
// passes (SCM_RIGHTS) to the dispatcher, which passes it on to the worker that answers a fetch.
// The worker writes the value into a region of it once, the reply carries only a header, and
// the client uses the region in place (or copies it to where the caller wants it).
//
// The arena crosses trust boundaries, so a receiver checks it before mapping it
// (check_shm_arena_fd): a memfd sealed against shrinking, exactly the size declared. A sender
// that could shrink the file under a mapping would kill its peer with SIGBUS.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "libgtcore/status.h"
#include "libgtcore/unique_fd.h"

namespace gt {

// A shared mapping of a whole arena; unmapped when its last owner lets go.
class ShmMapping {
 public:
  // Maps `bytes` of `fd` read-write (MAP_SHARED); `populate` faults every page in now.
  static Result<std::shared_ptr<ShmMapping>> map(int fd, uint64_t bytes, bool populate);
  ~ShmMapping();
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;

  char* data() const { return data_; }
  uint64_t size() const { return size_; }

  // Unmaps in its stead when the mapping goes: given the address and size, it must munmap
  // them (a worker first unregisters them from its device, on another thread). Set by the
  // thread holding a reference, before the last reference can go.
  void set_unmapper(std::function<void(char*, uint64_t)> fn) { unmapper_ = std::move(fn); }
  // Whether the device has it registered: 0 not tried, 1 yes, -1 it could not (a worker's own
  // record, kept with the mapping; only its executor thread reads and writes it).
  int device_registration = 0;

 private:
  ShmMapping(char* data, uint64_t size) : data_(data), size_(size) {}
  char* data_;
  uint64_t size_;
  std::function<void(char*, uint64_t)> unmapper_;
};

struct ShmArenaFile {
  UniqueFd fd;
  std::shared_ptr<ShmMapping> mapping;
};

// A new arena of `bytes`: a memfd sealed against shrinking, growing and further sealing, mapped
// here and faulted in (its pages are this process's memory, and the peer writing into it takes
// no page faults).
Result<ShmArenaFile> create_shm_arena(uint64_t bytes);

// What a receiver checks before mapping a descriptor another process passed: a regular file
// whose seals forbid shrinking (a memfd), exactly `bytes` long.
Status check_shm_arena_fd(int fd, uint64_t bytes);

// ---- uploads through an arena -------------------------------------------------------------------
// An upload's region holds its payload, then (8-byte aligned) a release word the client clears
// before sending and whoever copies the payload out (the worker after the instruction ran, or
// the dispatcher) sets: the client may then reuse the region.
inline uint64_t shm_release_word_offset(uint64_t payload_bytes) { return (payload_bytes + 7) / 8 * 8; }
inline uint64_t shm_upload_region_bytes(uint64_t payload_bytes) {
  return shm_release_word_offset(payload_bytes) + 8;
}
// Whether an upload region of `payload_bytes` at `offset` (its release word included) lies in an
// arena of `arena_bytes` (overflow-safe).
inline bool shm_upload_region_fits(uint64_t offset, uint64_t payload_bytes, uint64_t arena_bytes) {
  return payload_bytes <= arena_bytes && offset <= arena_bytes &&
         shm_upload_region_bytes(payload_bytes) <= arena_bytes - offset;
}
// The release word of the upload region at `region` (`payload_bytes` long): set / read / clear.
void shm_mark_released(char* region, uint64_t payload_bytes);
bool shm_released(const char* region, uint64_t payload_bytes);
void shm_clear_released(char* region, uint64_t payload_bytes);

// ---- passing descriptors over a Unix socket ----------------------------------------------------

// At most this many descriptors travel with one message (and are accepted with one read).
inline constexpr size_t kMaxPassedFds = 4;

// Writes all of `data` with `fd` attached to its first byte (blocking; waits on POLLOUT).
Status send_all_with_fd(int sock, std::string_view data, int fd);

// One non-blocking sendmsg of `data` with `fds` attached (at most kMaxPassedFds): the bytes
// sent, or -1 with errno set (EAGAIN: nothing was sent, the descriptors neither).
ssize_t send_with_fds(int sock, std::string_view data, const std::vector<int>& fds);

// One non-blocking recvmsg into `buf`: the bytes read (0: end of stream) or -1 with errno set.
// Descriptors that came with them are appended to `fds` (close-on-exec); if the peer sent more
// than kMaxPassedFds with one message, *truncated is set (the kernel closed the rest).
ssize_t recv_with_fds(int sock, char* buf, size_t n, std::vector<UniqueFd>* fds, bool* truncated);

}  // namespace gt
