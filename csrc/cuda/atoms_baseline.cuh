// Baseline Atoms (any generation): vector loads/stores through registers,
// reductions in registers with f32 accumulation, packets, and the
// signal/wait memory operations. Later generations add to these in their
// own atoms_smXX.cuh.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "device_plan.h"
#include "purlin/plan.h"

namespace purlin::cuda {

// A range of memory addressed in bytes: linear, or the 8 data bytes of each
// 16-byte packet of a window region (packet_byte is then the byte offset
// inside that data).
struct Span {
  char* p;
  int64_t packet_byte;  // -1: linear
};

__device__ __forceinline__ bool is_packets(const Span& s) { return s.packet_byte >= 0; }

__device__ __forceinline__ char* at(const Span& s, int64_t byte) {
  if (!is_packets(s)) return s.p + byte;
  const int64_t b = s.packet_byte + byte;
  return s.p + (b / kPacketDataBytes) * kPacketBytes + b % kPacketDataBytes;
}

// Whether chunks of `width` bytes from byte 0 of the span are aligned (and,
// in a window, never straddle a packet's data).
__device__ __forceinline__ bool aligned(const Span& s, int width) {
  if (is_packets(s)) return width <= kPacketDataBytes && s.packet_byte % width == 0;
  return reinterpret_cast<uintptr_t>(s.p) % width == 0;
}

// -- raw chunks ---------------------------------------------------------------

template <int W> struct Word;
template <> struct Word<1> { uint8_t v; };
template <> struct Word<2> { uint16_t v; };
template <> struct Word<4> { uint32_t v; };
template <> struct Word<8> { uint2 v; };
template <> struct Word<16> { uint4 v; };

template <int W>
__device__ __forceinline__ Word<W> load(const char* p) {
  return *reinterpret_cast<const Word<W>*>(p);
}
template <int W>
__device__ __forceinline__ void store(char* p, const Word<W>& w) {
  *reinterpret_cast<Word<W>*>(p) = w;
}

// 32-bit word i of a chunk (chunks under 4 bytes are one zero-extended word);
// elements are taken out with shifts so chunks stay in registers.
template <int W>
__device__ __forceinline__ uint32_t word(const Word<W>& w, int i) {
  if constexpr (W == 16) return i == 0 ? w.v.x : i == 1 ? w.v.y : i == 2 ? w.v.z : w.v.w;
  else if constexpr (W == 8) return i == 0 ? w.v.x : w.v.y;
  else if constexpr (W > 16) return i < 4 ? word<16>(Word<16>{w.lo}, i) : word<16>(Word<16>{w.hi}, i - 4);
  else return w.v;
}
template <int W>
__device__ __forceinline__ void set_word(Word<W>& w, int i, uint32_t x) {
  if constexpr (W == 16) (i == 0 ? w.v.x : i == 1 ? w.v.y : i == 2 ? w.v.z : w.v.w) = x;
  else if constexpr (W == 8) (i == 0 ? w.v.x : w.v.y) = x;
  else if constexpr (W > 16) (i < 4 ? (i == 0 ? w.lo.x : i == 1 ? w.lo.y : i == 2 ? w.lo.z : w.lo.w)
                                    : (i == 4 ? w.hi.x : i == 5 ? w.hi.y : i == 6 ? w.hi.z : w.hi.w)) = x;
  else w.v = static_cast<decltype(w.v)>(x);
}

// -- element types ------------------------------------------------------------

// Each type converts its raw bits (low bits of a uint32) to and from f32.
template <DType D> struct Elem;
template <> struct Elem<DType::F32> {
  static constexpr int bytes = 4;
  __device__ static float to_f32(uint32_t b) { return __uint_as_float(b); }
  __device__ static uint32_t from_f32(float x) { return __float_as_uint(x); }
};
template <> struct Elem<DType::BF16> {
  static constexpr int bytes = 2;
  __device__ static float to_f32(uint32_t b) { return __uint_as_float(b << 16); }
  __device__ static uint32_t from_f32(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};
template <> struct Elem<DType::F16> {
  static constexpr int bytes = 2;
  __device__ static float to_f32(uint32_t b) { return __half2float(__ushort_as_half(static_cast<unsigned short>(b))); }
  __device__ static uint32_t from_f32(float x) { return __half_as_ushort(__float2half_rn(x)); }
};
// fp8 rounds to nearest without saturation, as the numpy reference does.
template <__nv_fp8_interpretation_t Kind> struct Fp8 {
  static constexpr int bytes = 1;
  __device__ static float to_f32(uint32_t b) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), Kind)));
  }
  __device__ static uint32_t from_f32(float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, Kind); }
};
template <> struct Elem<DType::FP8E4M3> : Fp8<__NV_E4M3> {};
template <> struct Elem<DType::FP8E5M2> : Fp8<__NV_E5M2> {};

__device__ __forceinline__ float combine(int op, float a, float b) {
  switch (static_cast<RedOp>(op)) {
    case RedOp::Max: return fmaxf(a, b);
    case RedOp::Min: return fminf(a, b);
    case RedOp::Prod: return a * b;
    default: return a + b;
  }
}

// Element-wise combination of a chunk into the accumulators; sm_100 packs pairs.
struct ScalarCombine {
  template <int E>
  __device__ static void apply(int op, float (&acc)[E], const float (&x)[E]) {
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = combine(op, acc[e], x[e]);
  }
};

template <DType D, int W>
__device__ __forceinline__ void unpack(const Word<W>& w, float (&x)[W / Elem<D>::bytes]) {
  constexpr int B = Elem<D>::bytes;
  constexpr uint32_t mask = B == 4 ? ~0u : (1u << (8 * B)) - 1;
#pragma unroll
  for (int i = 0; i < W / B; ++i) x[i] = Elem<D>::to_f32((word<W>(w, i * B / 4) >> (8 * (i * B % 4))) & mask);
}

template <DType D, int W>
__device__ __forceinline__ Word<W> pack(const float (&x)[W / Elem<D>::bytes]) {
  constexpr int B = Elem<D>::bytes;
  constexpr int per_word = B >= 4 ? 1 : 4 / B;
  Word<W> w{};
#pragma unroll
  for (int i = 0; i < (W + 3) / 4; ++i) {
    uint32_t bits = 0;
#pragma unroll
    for (int j = 0; j < per_word && i * per_word + j < W / B; ++j)
      bits |= Elem<D>::from_f32(x[i * per_word + j]) << (8 * B * j);
    set_word<W>(w, i, bits);
  }
  return w;
}

// The threads of all blocks of a role, as one flat range.
struct Part {
  int index, count;  // this block among the role's blocks
  __device__ int64_t first() const { return int64_t(index) * blockDim.x + threadIdx.x; }
  __device__ int64_t stride() const { return int64_t(count) * blockDim.x; }
};

// -- copy and reduce through registers ----------------------------------------

// dst[from, from + chunks * W) = src[...], several loads in flight per thread.
template <int W>
__device__ void copy_chunks(Span dst, Span src, int64_t from, int64_t chunks, Part part) {
  constexpr int U = 4;
  const int64_t stride = part.stride();
  for (int64_t i = part.first(); i < chunks; i += stride * U) {
    Word<W> v[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < chunks) v[u] = load<W>(at(src, from + (i + u * stride) * W));
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < chunks) store<W>(at(dst, from + (i + u * stride) * W), v[u]);
  }
}

// dst = srcs[0] op srcs[1] op ... in source order, accumulated in f32.
template <DType D, int W, class Combine>
__device__ void reduce_chunks(Span dst, const Span* srcs, int n_srcs, int op, int64_t from, int64_t chunks,
                              Part part) {
  constexpr int E = W / Elem<D>::bytes;
  for (int64_t i = part.first(); i < chunks; i += part.stride()) {
    const int64_t byte = from + i * W;
    float acc[E], x[E];
    unpack<D, W>(load<W>(at(srcs[0], byte)), acc);
    for (int k = 1; k < n_srcs; ++k) {
      unpack<D, W>(load<W>(at(srcs[k], byte)), x);
      Combine::apply(op, acc, x);
    }
    store<W>(at(dst, byte), pack<D, W>(acc));
  }
}

// -- signals ------------------------------------------------------------------

__device__ __forceinline__ uint64_t ld_relaxed_sys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void st_relaxed_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ void st_release_sys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// After relaxed polling: makes the polled value an acquire.
__device__ __forceinline__ void fence_acquire_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

__device__ __forceinline__ uint64_t globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// -- packets ------------------------------------------------------------------

__device__ __forceinline__ void st_packet(char* p, uint64_t data, uint64_t flag) {
  asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(data), "l"(flag) : "memory");
}
__device__ __forceinline__ void ld_packet(const char* p, uint64_t& data, uint64_t& flag) {
  asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(data), "=l"(flag) : "l"(p) : "memory");
}

// Packets [first, first + ceil(bytes / 8)) of `region` get src's bytes, each
// with `flag`; data and flag travel in one 16-byte store.
__device__ void put_packets(char* region, int64_t first, Span src, int64_t bytes, uint64_t flag, Part part) {
  const int64_t packets = (bytes + kPacketDataBytes - 1) / kPacketDataBytes;
  const bool whole_words = aligned(src, kPacketDataBytes);
  for (int64_t k = part.first(); k < packets; k += part.stride()) {
    const int64_t b = k * kPacketDataBytes;
    uint64_t data = 0;
    if (whole_words && b + kPacketDataBytes <= bytes) {
      data = *reinterpret_cast<const uint64_t*>(at(src, b));
    } else {
      for (int j = 0; j < kPacketDataBytes && b + j < bytes; ++j)
        data |= uint64_t(static_cast<uint8_t>(*at(src, b + j))) << (8 * j);
    }
    st_packet(region + (first + k) * kPacketBytes, data, flag);
  }
}

}  // namespace purlin::cuda
