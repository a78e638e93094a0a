// The GT client API: #include <gt/gt.h>. See tensor.h for the Tensor API, indexing.h for
// t.index({...}) and dtype.h for dtype names. Everything lives in namespace gt.
#pragma once

#include "gt/dtype.h"
#include "gt/error.h"
#include "gt/indexing.h"
#include "gt/tensor.h"
