// `gt-dispatcherd --add-user NAME`: a text edit of the users file, not a YAML round trip, because
// yaml-cpp's emitter drops comments and the file is the operator's (etc/gt/users.yaml documents
// its keys in comments). The result is loaded back before it replaces the file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "dispatcherd/users.h"

namespace gt::dispatcher {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool blank_or_comment(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  return i == std::string::npos || line[i] == '#';
}

size_t indent_of(const std::string& line) { return line.find_first_not_of(' '); }

// The value after `users:` on its own line, without a trailing comment or spaces.
std::string inline_value(const std::string& line) {
  std::string v = line.substr(6);
  if (size_t hash = v.find(" #"); hash != std::string::npos) v.resize(hash);
  if (!v.empty() && v[0] == '#') v.clear();
  size_t a = v.find_first_not_of(" \t"), b = v.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : v.substr(a, b - a + 1);
}

Status write_file(int fd, const std::string& text, const std::string& tmp) {
  for (size_t off = 0; off < text.size();) {
    ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unavailable("cannot write {}: {}", tmp, std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return unavailable("cannot write {}: {}", tmp, std::strerror(errno));
  return Status::ok();
}

}  // namespace

bool valid_user_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '-' || name[0] == '.') return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-')
      return false;
  return true;
}

Result<std::string> insert_user_entry(const std::string& yaml, const std::string& name,
                                      const std::string& token_sha256) {
  std::vector<std::string> lines = split_lines(yaml);
  size_t users = lines.size();
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("users:", 0) == 0) users = i;
  size_t indent = 2;
  size_t insert_at = lines.size();
  if (users == lines.size()) {
    lines.push_back("users:");
    insert_at = lines.size();
  } else {
    std::string v = inline_value(lines[users]);
    if (v == "{}" || v == "~" || v == "null") {
      lines[users] = "users:";  // an empty mapping written inline becomes a block
    } else if (!v.empty()) {
      return invalid_argument("`users:` is not a block mapping ('{}'); write each user on its "
                              "own lines to use --add-user",
                              v);
    }
    // The block runs until the next top-level key; the entry goes after its last indented line,
    // so a comment above the next key stays with that key.
    insert_at = users + 1;
    bool indent_known = false;
    for (size_t i = users + 1; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (l.find_first_not_of(" \t\r") == std::string::npos) continue;
      if (l[0] != ' ' && l[0] != '\t') {
        if (l[0] == '#') continue;  // a comment in column 0 neither ends the block nor joins it
        break;
      }
      insert_at = i + 1;
      if (!indent_known && !blank_or_comment(l)) {
        indent = indent_of(l);
        indent_known = true;
      }
    }
  }
  const std::string pad(indent, ' ');
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(insert_at),
               {pad + name + ":", pad + pad + "token_sha256: \"" + token_sha256 + "\""});
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

Result<std::string> add_user(const std::string& path, const std::string& name) {
  if (!valid_user_name(name))
    return invalid_argument("user name '{}': use 1-64 letters, digits, '.', '_' or '-', not "
                            "starting with '-' or '.'",
                            name);
  std::string text;
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return unavailable("cannot stat {}: {}", path, std::strerror(errno));
  if (exists) {
    if (!S_ISREG(st.st_mode)) return invalid_argument("{} is not a regular file", path);
    std::ifstream f(path);
    if (!f) return unavailable("cannot read {}", path);
    std::stringstream ss;
    ss << f.rdbuf();
    text = ss.str();
    GT_ASSIGN_OR_RETURN(UserTable current, UserTable::load(path));
    if (current.has_user(name))
      return failed_precondition("user '{}' is already in {}; remove its entry to issue a new "
                                 "token",
                                 name, path);
  } else {
    text = "# GT users file: token hashes (SHA-256), quotas and weights; see etc/gt/users.yaml.\n";
  }
  GT_ASSIGN_OR_RETURN(std::string token, new_token());
  GT_ASSIGN_OR_RETURN(std::string updated, insert_user_entry(text, name, sha256_hex(token)));

  std::string tmp = path + ".XXXXXX";
  int fd = ::mkstemp(tmp.data());  // mode 0600, in the same folder so rename is atomic
  if (fd < 0) return unavailable("cannot create a file next to {}: {}", path, std::strerror(errno));
  auto fail = [&](Status s) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return s;
  };
  if (Status s = write_file(fd, updated, tmp); !s.is_ok()) return fail(s);
  if (exists && (st.st_uid != ::geteuid() || st.st_gid != ::getegid()) &&
      ::fchown(fd, st.st_uid, st.st_gid) != 0)
    return fail(permission_denied("cannot keep {}'s owner ({}:{}): {}", path, st.st_uid,
                                  st.st_gid, std::strerror(errno)));
  // What we wrote must load, with the new user's token.
  Result<UserTable> check = UserTable::load(tmp);
  if (!check.is_ok()) return fail(internal_error("the edited users file does not load: {}",
                                                 check.status().message()));
  const UserPolicy* u = check->find_by_token(token);
  if (!u || u->name != name)
    return fail(internal_error("the edited users file does not hold user '{}'", name));
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return unavailable("cannot replace {}: {}", path, std::strerror(e));
  }
  return token;
}

}  // namespace gt::dispatcher
