"""Compiled collectives: each lowered `atom.kernel` becomes one CUDA C++
translation unit (`codegen`), compiled by NVRTC for its GPU generation and
cached on disk (`nvrtc`), with per-rank tables of the sizes and offsets it
reads at run time (`tables`). `program.build_program` puts the three
together for the C++ runtime (`purlin.runtime`, backend "cuda").

The generated code calls the device library in `include/purlin/`: the
per-generation Atoms (`atoms/`), the datapath (`datapath.cuh`), memory
orders and polling (`order.cuh`), the staged and packet protocols' Atom ops
(`staged.cuh`, `packets.cuh`) and the kernel frame that includes them
(`kernel.cuh`); `abi.h` is what the kernel and the runtime agree on,
mirrored here by `abi`.
"""
