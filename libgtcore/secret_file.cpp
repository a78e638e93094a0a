#include "libgtcore/secret_file.h"

#include <sys/stat.h>

#include <fstream>

namespace gt {

Result<std::string> read_secret_file(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) return not_found("cannot read secret file {}", path);
  if (st.st_mode & (S_IRWXG | S_IRWXO))
    return permission_denied("secret file {} is accessible to others (mode {:o}); chmod 600 it",
                             path, st.st_mode & 0777);
  std::ifstream f(path);
  std::string s;
  std::getline(f, s);
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.pop_back();
  if (s.size() < 16) return invalid_argument("secret in {} is shorter than 16 characters", path);
  return s;
}

}  // namespace gt
