// Protocol and build version constants exchanged in the handshake.
#pragma once

#include <cstdint>

namespace gt {

inline constexpr uint32_t kProtoMajor = 1;  // a different major is refused
inline constexpr uint32_t kProtoMinor = 0;
inline constexpr const char* kVersion = "0.1.0";

}  // namespace gt
