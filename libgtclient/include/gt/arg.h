// GT_ARG: an option in libtorch's builder style (TORCH_ARG): `Options().name(v)` sets it and
// returns the options, `o.name()` reads it. Used by the optimizer and data loader options.
#pragma once

#define GT_ARG(T, NAME, INIT)                         \
 public:                                              \
  auto& NAME(const T& v) {                            \
    NAME##_ = v;                                      \
    return *this;                                     \
  }                                                   \
  const T& NAME() const { return NAME##_; }          \
                                                      \
 private:                                             \
  T NAME##_ = INIT
