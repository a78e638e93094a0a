// A string resized without zero-filling what it gains: for a buffer a read is about to overwrite
// whole (a large payload received straight into the string an instruction will own), the
// zero-fill would be one more pass over memory for nothing.
#pragma once

#include <cstddef>
#include <string>

namespace gt {

// `s` holds `n` bytes; those past its old size are unspecified until written.
void resize_uninitialized(std::string& s, size_t n);

}  // namespace gt
