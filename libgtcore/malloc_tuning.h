// glibc malloc settings for the daemons' large, short-lived buffers (issue 15). A fetch reply or
// an upload moves megabytes through buffers that live for one request; with glibc's defaults a
// block over the mmap threshold (128 KiB, raised dynamically up to 32 MiB only after a first
// free) is a fresh mmap each time, and every one of its pages faults on first touch: measured,
// those faults cost more than copying the bytes. Keeping such blocks in the heap and not trimming
// it right away lets the next request reuse pages that are already mapped.
#pragma once

#include <cstddef>

namespace gt {

// Blocks up to this size come from the heap (and are reused), larger ones from mmap. 32 MiB is
// the most glibc accepts on 64-bit (half its heap size); fetch chunks are 8 MiB.
inline constexpr size_t kMallocMmapThresholdBytes = size_t{32} << 20;
// Free memory kept at the top of the heap before it is given back to the system.
inline constexpr size_t kMallocTrimThresholdBytes = size_t{256} << 20;

// Applies the settings above (glibc only; elsewhere, or with GT_MALLOC_TUNING=0 in the
// environment, does nothing). Call once at the start of main(), before threads start. Returns
// whether the settings were applied.
bool tune_malloc_for_large_buffers();

}  // namespace gt
