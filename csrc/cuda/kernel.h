// Host view of the plan executor kernel (kernel.cu).
#pragma once

#include "purlin/plan.h"

namespace purlin::cuda {

// The executor for one element type; its arguments are
// (const DevPlan* plan, char* input, char* output).
const void* plan_kernel(DType dtype);

}  // namespace purlin::cuda
