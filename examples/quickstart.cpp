// GT quickstart: eager, PyTorch-style tensor code. With no GT_ADDRESS set this spawns a private
// dispatcher and worker (the embedded default); with GT_ADDRESS=host:port it uses that service.
#include <gt/gt.h>

#include <iostream>

int main() {
  gt::Tensor a = gt::randn({1000, 1000});
  gt::Tensor b = gt::randn({1000, 1000});
  gt::Tensor c = a.matmul(b);  // queued: no round trip per op
  std::cout << c.index({gt::Slice(0, 4), gt::Slice(0, 4)}) << std::endl;  // fetch + print
  return 0;
}
