// sm_90 Atoms: bulk copy (mech bulk: cp.async.bulk global->shared completing
// on an mbarrier, one elected thread issuing, then stores from shared memory),
// and multimem.ld_reduce / multimem.st on a multicast object (mech multimem:
// compiled here, refused by the host, since multicast is off where we run).
#pragma once

#include "purlin/atoms/sm80.cuh"

namespace purlin::cuda::sm90 {

#if __CUDA_ARCH__ >= 900

__device__ __forceinline__ void mbarrier_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sm80::smem_addr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarrier_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sm80::smem_addr(bar)), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "retry:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra retry;\n"
      "}\n" ::"r"(sm80::smem_addr(bar)),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void bulk_load(void* smem, const void* global, u32 bytes, u64* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
          sm80::smem_addr(smem)),
      "l"(global), "r"(bytes), "r"(sm80::smem_addr(bar))
      : "memory");
}
// Orders this thread's earlier shared-memory accesses before later async-proxy ones.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

#endif

// As sm80::pipelined, but each stage is filled by one bulk copy per source.
template <DType D, class Combine>
__device__ void pipelined_bulk(Span dst, const Span* srcs, int n_srcs, bool reduce, int op, i64 vecs,
                               char* smem, int tile_bytes, Part part) {
#if __CUDA_ARCH__ >= 900
  constexpr int S = kPipelineStages;
  __shared__ u64 bars[S];
  const sm80::Tiles tiles{vecs, tile_bytes / 16, part};
  const int my = tiles.count();
  auto stage = [&](int j) { return smem + (j % S) * n_srcs * tile_bytes; };
  auto issue = [&](int j) {
    const u32 bytes = u32(tiles.len(j)) * 16;
    const i64 v0 = tiles.first_vec(j);
    fence_proxy_async_shared();
    mbarrier_expect_tx(&bars[j % S], bytes * n_srcs);
    for (int k = 0; k < n_srcs; ++k) bulk_load(stage(j) + k * tile_bytes, at(srcs[k], v0 * 16), bytes, &bars[j % S]);
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) mbarrier_init(&bars[s], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int j = 0; j < S - 1 && j < my; ++j) issue(j);
  }
  __syncthreads();
  for (int j = 0; j < my; ++j) {
    // Stage (j + S - 1) % S was drained in iteration j - 1.
    if (threadIdx.x == 0 && j + S - 1 < my) issue(j + S - 1);
    mbarrier_wait(&bars[j % S], (j / S) & 1);
    sm80::drain_tile<D, Combine>(stage(j), tile_bytes, n_srcs, reduce, op, dst, tiles.first_vec(j), tiles.len(j));
    __syncthreads();
  }
#else
  __trap();  // the host never selects bulk below sm_90
#endif
}

// dst[v] = reduce over all ranks of the multicast address mc[v], 16 bytes at a
// time; the switch reduces, in f32 for 16-bit types.
template <DType D>
__device__ void multimem_reduce(Span dst, const char* mc, int op, i64 vecs, Part part) {
#if __CUDA_ARCH__ >= 900
  for (i64 v = part.first(); v < vecs; v += part.stride()) {
    uint4 r = make_uint4(0, 0, 0, 0);
    const char* src = mc + v * 16;
    if constexpr (D == DType::F32) {
      asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0,%1,%2,%3}, [%4];"
                   : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(src) : "memory");
    } else if constexpr (D == DType::BF16 || D == DType::F16) {
#define PURLIN_LD_REDUCE(OP, T)                                                          \
  asm volatile("multimem.ld_reduce.relaxed.sys.global." OP ".v4." T " {%0,%1,%2,%3}, [%4];" \
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(src) : "memory")
      constexpr bool bf = D == DType::BF16;
      switch (static_cast<RedOp>(op)) {
        case RedOp::Max: if (bf) PURLIN_LD_REDUCE("max", "bf16x2"); else PURLIN_LD_REDUCE("max", "f16x2"); break;
        case RedOp::Min: if (bf) PURLIN_LD_REDUCE("min", "bf16x2"); else PURLIN_LD_REDUCE("min", "f16x2"); break;
        default: if (bf) PURLIN_LD_REDUCE("add.acc::f32", "bf16x2"); else PURLIN_LD_REDUCE("add.acc::f32", "f16x2");
      }
#undef PURLIN_LD_REDUCE
    } else {
      __trap();  // no multimem for fp8 (the plan validator refuses it)
    }
    store<16>(at(dst, v * 16), Word<16>{r});
  }
#else
  __trap();
#endif
}

// mc[v] on every rank = src[v]: one store reaches all ranks through the switch.
__device__ void multimem_broadcast(char* mc, Span src, i64 vecs, Part part) {
#if __CUDA_ARCH__ >= 900
  for (i64 v = part.first(); v < vecs; v += part.stride()) {
    const uint4 w = load<16>(at(src, v * 16)).v;
    asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1,%2,%3,%4};" ::"l"(mc + v * 16), "r"(w.x),
                 "r"(w.y), "r"(w.z), "r"(w.w)
                 : "memory");
  }
#else
  __trap();
#endif
}

}  // namespace purlin::cuda::sm90
