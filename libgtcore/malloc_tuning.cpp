#include "libgtcore/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gt {

bool tune_malloc_for_large_buffers() {
#if defined(__GLIBC__)
  // An operator's escape hatch (e.g. a box short of memory): the daemons then behave as before.
  if (const char* env = std::getenv("GT_MALLOC_TUNING"); env && std::strcmp(env, "0") == 0)
    return false;
  // Setting either one also turns off glibc's dynamic threshold, which would otherwise move the
  // threshold back and forth with the traffic.
  bool ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMallocMmapThresholdBytes)) == 1;
  ok = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kMallocTrimThresholdBytes)) == 1 && ok;
  return ok;
#else
  return false;
#endif
}

}  // namespace gt
