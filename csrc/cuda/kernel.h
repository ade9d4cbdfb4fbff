// Host view of the plan executor kernel (kernel.cu).
#pragma once

#include "purlin/plan.h"

namespace purlin::cuda {

// The executor for one element type, compiled for `blocks_per_sm` resident
// blocks of kMaxThreads threads (1: twice the registers, for grids that fit
// one block per SM). Its arguments are (DevPlan plan, char* input, char* output).
const void* plan_kernel(DType dtype, int blocks_per_sm);

}  // namespace purlin::cuda
