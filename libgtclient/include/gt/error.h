// gt::Error: the one exception type at libgtclient's public surface.
#pragma once

#include <stdexcept>
#include <string>

namespace gt {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace gt
