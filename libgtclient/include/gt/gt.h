// The GT client API: #include <gt/gt.h>. See tensor.h for the Tensor API, indexing.h for
// t.index({...}), dtype.h for dtype names, autograd.h / functional.h / nn.h / optim.h / data.h for
// training. Everything lives in namespace gt.
#pragma once

#include "gt/dtype.h"
#include "gt/error.h"
#include "gt/indexing.h"
#include "gt/compile.h"
#include "gt/signal.h"
#include "gt/status.h"
#include "gt/tensor.h"
#include "gt/autograd.h"
#include "gt/functional.h"
#include "gt/nn.h"
#include "gt/optim.h"
#include "gt/data.h"
