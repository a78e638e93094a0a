// The libFuzzer entry point of one target (GT_FUZZ_TARGET names its harness function).
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gt::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  GT_FUZZ_TARGET(data, size);
  return 0;
}
