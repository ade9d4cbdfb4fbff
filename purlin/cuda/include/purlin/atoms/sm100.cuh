// sm_100 Atoms: 32-byte global accesses (ld/st .v8.b32, the stores streaming
// as baseline.cuh's) for vector copies and reductions, and packed f32x2
// add/mul for sum and prod accumulation (PTX has no packed f32 max/min, so
// those stay scalar).
#pragma once

#include "purlin/atoms/sm90.cuh"

namespace purlin::cuda {

template <> struct Word<32> { uint4 lo, hi; };

#if __CUDA_ARCH__ >= 1000

template <>
__device__ __forceinline__ Word<32> load<32>(const char* p) {
  Word<32> w;
  asm volatile("ld.global.v8.b32 {%0,%1,%2,%3,%4,%5,%6,%7}, [%8];"
               : "=r"(w.lo.x), "=r"(w.lo.y), "=r"(w.lo.z), "=r"(w.lo.w), "=r"(w.hi.x), "=r"(w.hi.y), "=r"(w.hi.z),
                 "=r"(w.hi.w)
               : "l"(p));
  return w;
}
template <>
__device__ __forceinline__ void store<32>(char* p, const Word<32>& w) {
  asm volatile("st.global.cs.v8.b32 [%0], {%1,%2,%3,%4,%5,%6,%7,%8};" ::"l"(p), "r"(w.lo.x), "r"(w.lo.y), "r"(w.lo.z),
               "r"(w.lo.w), "r"(w.hi.x), "r"(w.hi.y), "r"(w.hi.z), "r"(w.hi.w)
               : "memory");
}

#endif

namespace sm100 {

struct PackedCombine {
  template <int E>
  __device__ static void apply(int op, float (&acc)[E], const float (&x)[E]) {
#if __CUDA_ARCH__ >= 1000
    const auto packed = static_cast<RedOp>(op);
    const bool add = packed == RedOp::Sum || packed == RedOp::Avg;
    if ((add || packed == RedOp::Prod) && E % 2 == 0) {
#pragma unroll
      for (int e = 0; e < E; e += 2) {
        u64 a = (u64(__float_as_uint(acc[e + 1])) << 32) | __float_as_uint(acc[e]);
        const u64 b = (u64(__float_as_uint(x[e + 1])) << 32) | __float_as_uint(x[e]);
        if (add)
          asm("add.rn.f32x2 %0, %0, %1;" : "+l"(a) : "l"(b));
        else
          asm("mul.rn.f32x2 %0, %0, %1;" : "+l"(a) : "l"(b));
        acc[e] = __uint_as_float(u32(a));
        acc[e + 1] = __uint_as_float(u32(a >> 32));
      }
      return;
    }
#endif
    ScalarCombine::apply(op, acc, x);
  }
  // f64 and the integers have no packed form here.
  template <class T, int E>
  __device__ static void apply(int op, T (&acc)[E], const T (&x)[E]) {
    ScalarCombine::apply(op, acc, x);
  }
};

}  // namespace sm100
}  // namespace purlin::cuda
