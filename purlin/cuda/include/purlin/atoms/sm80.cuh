// sm_80 Atoms (mech cp_async): a cp.async global->shared pipeline of
// kPipelineStages tiles per block, then stores from shared memory; a reduce
// stages one tile per source and combines them from shared memory.
#pragma once

#include "purlin/atoms/baseline.cuh"

namespace purlin::cuda::sm80 {

#if __CUDA_ARCH__ >= 800

__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(void* smem, const void* global) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(smem)), "l"(global) : "memory");
}
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

#endif

// How a role's block walks the 16-byte vectors of a pipelined copy/reduce:
// tiles of `tile_vecs` vectors, tile part.index, part.index + part.count, ...
struct Tiles {
  i64 vecs;
  int tile_vecs;
  Part part;
  __device__ int count() const {
    const i64 tiles = (vecs + tile_vecs - 1) / tile_vecs;
    return tiles > part.index ? int((tiles - part.index + part.count - 1) / part.count) : 0;
  }
  __device__ i64 first_vec(int j) const { return (part.index + i64(j) * part.count) * tile_vecs; }
  __device__ int len(int j) const { return int(min(i64(tile_vecs), vecs - first_vec(j))); }
};

// Stores tile j from shared memory: a copy stores source 0, a reduce
// combines every source's tile in order.
template <DType D, class Combine>
__device__ void drain_tile(const char* stage, int tile_bytes, int n_srcs, bool reduce, int op, Span dst,
                           i64 first_vec, int len) {
  for (int v = threadIdx.x; v < len; v += blockDim.x) {
    char* out = at(dst, (first_vec + v) * 16);
    if (!reduce) {
      store<16>(out, load<16>(stage + v * 16));
      continue;
    }
    constexpr int E = 16 / Elem<D>::bytes;
    AccT<D> acc[E], x[E];
    unpack<D, 16>(load<16>(stage + v * 16), acc);
    for (int k = 1; k < n_srcs; ++k) {
      unpack<D, 16>(load<16>(stage + k * tile_bytes + v * 16), x);
      Combine::apply(op, acc, x);
    }
    finish_average(op, acc, n_srcs);
    store<16>(out, pack<D, 16>(acc));
  }
}

// Vectors [0, vecs) of 16-byte aligned linear spans.
template <DType D, class Combine>
__device__ void pipelined(Span dst, const Span* srcs, int n_srcs, bool reduce, int op, i64 vecs, char* smem,
                          int tile_bytes, Part part) {
#if __CUDA_ARCH__ >= 800
  constexpr int S = kPipelineStages;
  const Tiles tiles{vecs, tile_bytes / 16, part};
  const int my = tiles.count();
  auto stage = [&](int j) { return smem + (j % S) * n_srcs * tile_bytes; };
  auto issue = [&](int j) {
    const i64 v0 = tiles.first_vec(j);
    const int len = tiles.len(j);
    for (int k = 0; k < n_srcs; ++k)
      for (int v = threadIdx.x; v < len; v += blockDim.x)
        cp_async16(stage(j) + k * tile_bytes + v * 16, at(srcs[k], (v0 + v) * 16));
  };
  for (int j = 0; j < S - 1; ++j) {
    if (j < my) issue(j);
    commit();
  }
  for (int j = 0; j < my; ++j) {
    // Stage (j + S - 1) % S was drained in iteration j - 1.
    if (j + S - 1 < my) issue(j + S - 1);
    commit();
    wait_group<S - 1>();
    __syncthreads();
    drain_tile<D, Combine>(stage(j), tile_bytes, n_srcs, reduce, op, dst, tiles.first_vec(j), tiles.len(j));
    __syncthreads();
  }
#else
  __trap();  // the host never selects cp_async below sm_80
#endif
}

}  // namespace purlin::cuda::sm80
