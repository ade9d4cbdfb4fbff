// purlin.jax's part of purlin._runtime: the CPU backend's ranks called one by
// one (cpu/ranks.h), the collectives XLA calls registered by site and device,
// and the C table (purlin/jax/ffi/purlin_jax_api.h) the FFI handlers call.
#pragma once

#include <pybind11/pybind11.h>

namespace purlin::jax {

void register_bindings(pybind11::module_& m);

}  // namespace purlin::jax
