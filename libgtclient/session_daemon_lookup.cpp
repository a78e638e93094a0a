// find_daemon_dir(): where the embedded default finds gt-dispatcherd / gt-workerd.
//
// Order (first folder holding both wins):
//   1. $GT_BIN_DIR. An explicit choice: when set but missing the daemons it is an error, not a
//      reason to fall back to some other copy.
//   2. Relative to the file this code is in (dladdr), so an installed SDK finds its own daemons
//      wherever the prefix was moved to:
//        - the shared libgtclient.so in <prefix>/<libdir>      -> <prefix>/<bindir>
//        - the static library inside a program: the program's folder, and ../bin from it
//        - the static library inside the Python extension <prefix>/<python dir>/gt/_gt*.so
//                                                              -> <prefix>/<bindir>
//   3. The build tree's bin/, but only when the file this code is in lies inside that build tree
//      (in-tree tests, examples, benches and the Python module built there), so in-tree runs use
//      the daemons built with them rather than an older install on $PATH. An installed or copied
//      library never reaches into a build tree, which may be stale or someone else's.
//   4. Each folder of $PATH.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "libgtclient/session_embedded.h"

namespace gt::detail {

namespace fs = std::filesystem;

namespace {

bool has_daemons(const fs::path& dir) {
  return ::access((dir / "gt-dispatcherd").c_str(), X_OK) == 0 &&
         ::access((dir / "gt-workerd").c_str(), X_OK) == 0;
}

// The file (shared library or executable) this function was loaded from, symlinks resolved;
// empty when it cannot be told.
fs::path this_module_file() {
  Dl_info info{};
  link_map* map = nullptr;
  if (::dladdr1(reinterpret_cast<void*>(&this_module_file), &info,
                reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) == 0)
    return {};
  // The main program's link map has an empty name (dli_fname is then argv[0], maybe relative
  // to a folder we have since left): ask the kernel instead.
  fs::path file = map && map->l_name && *map->l_name ? fs::path(map->l_name) : "/proc/self/exe";
  std::error_code ec;
  fs::path resolved = fs::canonical(file, ec);
  return ec ? fs::path() : resolved;
}

bool is_inside(const fs::path& file, const fs::path& dir) {
  std::error_code ec;
  fs::path d = fs::weakly_canonical(dir, ec);
  if (ec || d.empty()) return false;
  auto [end, _] = std::mismatch(d.begin(), d.end(), file.begin(), file.end());
  return end == d.end();
}

std::vector<fs::path> module_relative_dirs(const fs::path& module) {
  fs::path dir = module.parent_path();
  std::vector<fs::path> dirs = {dir, (dir / "../bin").lexically_normal()};
#ifdef GT_LIB_TO_BIN
  dirs.push_back((dir / GT_LIB_TO_BIN).lexically_normal());
#endif
#ifdef GT_PYTHON_PACKAGE_TO_BIN
  dirs.push_back((dir / GT_PYTHON_PACKAGE_TO_BIN).lexically_normal());
#endif
  return dirs;
}

std::vector<fs::path> path_dirs() {
  std::vector<fs::path> dirs;
  const char* path = std::getenv("PATH");
  std::string rest = path ? path : "";
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string entry = rest.substr(0, colon);
    if (!entry.empty()) dirs.emplace_back(entry);  // an empty entry would mean "cwd": skip it
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
  return dirs;
}

}  // namespace

Result<std::string> find_daemon_dir() {
  if (const char* env = std::getenv("GT_BIN_DIR")) {
    if (has_daemons(env)) return std::string(env);
    return not_found("GT_BIN_DIR={} does not hold gt-dispatcherd and gt-workerd", env);
  }
  fs::path module = this_module_file();
  std::vector<fs::path> candidates;
  if (!module.empty()) candidates = module_relative_dirs(module);
#ifdef GT_BUILD_TREE
  if (!module.empty() && is_inside(module, GT_BUILD_TREE)) candidates.emplace_back(GT_BUILD_BIN_DIR);
#endif
  for (auto& d : path_dirs()) candidates.push_back(std::move(d));
  std::string looked;  // for the error: each folder once, in the order tried
  std::vector<fs::path> tried;
  for (const auto& c : candidates) {
    if (has_daemons(c)) return c.string();
    if (std::find(tried.begin(), tried.end(), c) != tried.end()) continue;
    tried.push_back(c);
    looked += (looked.empty() ? "" : ", ") + c.string();
  }
  return not_found(
      "cannot find gt-dispatcherd and gt-workerd for the embedded default. Looked in {} "
      "(relative to {}, the file holding libgtclient, then $PATH). Set GT_BIN_DIR to the "
      "folder holding them, or GT_ADDRESS to use a running dispatcher",
      looked, module.empty() ? std::string("<unknown>") : module.string());
}

}  // namespace gt::detail
