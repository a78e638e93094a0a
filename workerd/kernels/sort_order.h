// The order argsort sorts by, shared by the CPU and CUDA kernels so both give the same
// permutation: torch.sort's, where NaN is above every number (last ascending, first descending)
// and equal values (-0.0 and 0.0 included) keep their input order (a stable sort).
#pragma once

#include "workerd/kernels/numeric.h"

namespace gt::worker {

// Does value a come strictly before value b? Values are compute_t (half and bfloat16 as float,
// bool as int32). A strict weak order, NaNs all equal to each other.
template <bool kDescending, class C>
GT_HOST_DEVICE bool sorts_before(C a, C b) {
  if constexpr (kDescending) return !is_nan(b) && (is_nan(a) || a > b);
  else return !is_nan(a) && (is_nan(b) || a < b);
}

}  // namespace gt::worker
