// Built as C++23 (libgtcore/CMakeLists.txt): std::string::resize_and_overwrite is C++23, and
// libstdc++'s std::string is the same type in every language mode, so callers in C++20 share it.
#include "libgtcore/uninit_string.h"

namespace gt {

void resize_uninitialized(std::string& s, size_t n) {
#if defined(__cpp_lib_string_resize_and_overwrite)
  s.resize_and_overwrite(n, [](char*, size_t size) { return size; });
#else
  s.resize(n);  // (a library without it: the zero-fill is the price)
#endif
}

}  // namespace gt
