#pragma once
// The tandem public API: include this one header.
#include "tandem/core/allocator.h"
#include "tandem/core/dtype.h"
#include "tandem/core/error.h"
#include "tandem/core/grad_mode.h"
#include "tandem/core/parallel.h"
#include "tandem/core/tensor.h"
#include "tandem/dispatch/dispatcher.h"
#include "tandem/ops/binary.h"
#include "tandem/ops/creation.h"
#include "tandem/ops/shape.h"
