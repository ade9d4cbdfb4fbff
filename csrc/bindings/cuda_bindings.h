// Adds the CUDA backend to the `_runtime` extension module (called from
// module.cpp when PURLIN_WITH_CUDA is defined).
#pragma once

#include <pybind11/pybind11.h>

namespace purlin::cuda {

void register_bindings(pybind11::module_& m);

}  // namespace purlin::cuda
