// Bool tensors hold bytes that are 0 or 1: every bool kernel (and C++ itself) assumes it. Bytes
// from the wire or a peer may be anything, so Backend::copy_from_host (backend.cpp), the one way
// host bytes reach a tensor on any device, maps nonzero to 1.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gt::worker {

inline void normalize_bool_bytes(unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = p[i] != 0;
}

// `data` normalized into `scratch` (for uploads that cannot write their destination in place).
inline std::string_view normalized_bool_bytes(std::string_view data, std::string& scratch) {
  scratch.assign(data);
  normalize_bool_bytes(reinterpret_cast<unsigned char*>(scratch.data()), scratch.size());
  return scratch;
}

}  // namespace gt::worker
