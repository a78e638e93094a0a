// The SDK check's client (tests/sdk/check_install.sh): one computation through the embedded
// default, which must find the daemons installed beside the library. Prints the value and
// exits 0 only when it is right.
#include <gt/gt.h>

#include <cstdio>
#include <exception>

int main() {
  try {
    float sum = (gt::ones({2, 2}) * 3).sum().item<float>();
    std::printf("sdk client: (ones({2,2}) * 3).sum() = %g\n", sum);
    return sum == 12.0f ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sdk client: error: %s\n", e.what());
    return 2;
  }
}
