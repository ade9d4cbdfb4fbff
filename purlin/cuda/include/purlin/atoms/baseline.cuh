// Baseline Atoms (any generation): vector loads/stores through registers
// (sources aligned unlike the destination shifted into place across a warp)
// and reductions in registers (f32 accumulation; f64 in f64, integers exact
// in their own width, wrapping as two's complement), over linear spans or
// the data bytes of a packet window. Later generations add to these in their
// own atoms/smXX.cuh; signals and packets are the protocols' (order.cuh,
// staged.cuh, packets.cuh).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "purlin/abi.h"

namespace purlin::cuda {

using u8 = unsigned char;
using u16 = unsigned short;

// Tiles in flight per block in the cp.async and bulk pipelines.
constexpr int kPipelineStages = 3;

// A range of memory addressed in bytes: linear, or the 8 data bytes of each
// 16-byte packet of a window region (packet_byte is then the byte offset
// inside that data).
struct Span {
  char* p;
  i64 packet_byte;  // -1: linear
};

__device__ __forceinline__ bool is_packets(const Span& s) { return s.packet_byte >= 0; }

__device__ __forceinline__ char* at(const Span& s, i64 byte) {
  if (!is_packets(s)) return s.p + byte;
  const i64 b = s.packet_byte + byte;
  return s.p + (b / kPacketDataBytes) * kPacketBytes + b % kPacketDataBytes;
}

// Whether chunks of `width` bytes from byte 0 of the span are aligned (and,
// in a window, never straddle a packet's data).
__device__ __forceinline__ bool aligned(const Span& s, int width) {
  if (is_packets(s)) return width <= kPacketDataBytes && s.packet_byte % width == 0;
  return reinterpret_cast<u64>(s.p) % width == 0;
}

// -- raw chunks ---------------------------------------------------------------

template <int W> struct Word;
template <> struct Word<1> { u8 v; };
template <> struct Word<2> { u16 v; };
template <> struct Word<4> { u32 v; };
template <> struct Word<8> { uint2 v; };
template <> struct Word<16> { uint4 v; };

template <int W>
__device__ __forceinline__ Word<W> load(const char* p) {
  return *reinterpret_cast<const Word<W>*>(p);
}
// Stores stream (st.global.cs, evict first): what a collective writes is
// read next by its caller, not by this call, and written lines kept in L2
// cost a write-heavy copy its rate (one H100, ranks sharing it: all_gather
// of 16 MiB 0.80 / 0.84 / 0.91x as long at worlds 2 / 4 / 8).
template <int W>
__device__ __forceinline__ void store(char* p, const Word<W>& w) {
  if constexpr (W == 16) __stcs(reinterpret_cast<uint4*>(p), w.v);
  else if constexpr (W == 8) __stcs(reinterpret_cast<uint2*>(p), w.v);
  else if constexpr (W == 4) __stcs(reinterpret_cast<unsigned*>(p), w.v);
  else *reinterpret_cast<Word<W>*>(p) = w;
}

// 32-bit word i of a chunk (chunks under 4 bytes are one zero-extended word);
// elements are taken out with shifts so chunks stay in registers.
template <int W>
__device__ __forceinline__ u32 word(const Word<W>& w, int i) {
  if constexpr (W == 16) return i == 0 ? w.v.x : i == 1 ? w.v.y : i == 2 ? w.v.z : w.v.w;
  else if constexpr (W == 8) return i == 0 ? w.v.x : w.v.y;
  else if constexpr (W > 16) return i < 4 ? word<16>(Word<16>{w.lo}, i) : word<16>(Word<16>{w.hi}, i - 4);
  else return w.v;
}
template <int W>
__device__ __forceinline__ void set_word(Word<W>& w, int i, u32 x) {
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
  __device__ static float to_f32(u32 b) { return __uint_as_float(b); }
  __device__ static u32 from_f32(float x) { return __float_as_uint(x); }
};
template <> struct Elem<DType::BF16> {
  static constexpr int bytes = 2;
  __device__ static float to_f32(u32 b) { return __uint_as_float(b << 16); }
  __device__ static u32 from_f32(float x) { return __bfloat16_as_ushort(__float2bfloat16_rn(x)); }
};
template <> struct Elem<DType::F16> {
  static constexpr int bytes = 2;
  __device__ static float to_f32(u32 b) { return __half2float(__ushort_as_half(static_cast<unsigned short>(b))); }
  __device__ static u32 from_f32(float x) { return __half_as_ushort(__float2half_rn(x)); }
};
// fp8 rounds to nearest without saturation, as the numpy reference does.
template <__nv_fp8_interpretation_t Kind> struct Fp8 {
  static constexpr int bytes = 1;
  __device__ static float to_f32(u32 b) {
    return __half2float(__half(__nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), Kind)));
  }
  __device__ static u32 from_f32(float x) { return __nv_cvt_float_to_fp8(x, __NV_NOSAT, Kind); }
};
template <> struct Elem<DType::FP8E4M3> : Fp8<__NV_E4M3> {};
template <> struct Elem<DType::FP8E5M2> : Fp8<__NV_E5M2> {};

// f64 and the integers reduce exactly, each in an accumulator of its own
// (8- and 32-bit integers in 32 bits: truncating the result wraps as a
// narrow accumulator would).
template <int B> struct ExactBytes { static constexpr int bytes = B; };
template <> struct Elem<DType::I8> : ExactBytes<1> {};
template <> struct Elem<DType::UI8> : ExactBytes<1> {};
template <> struct Elem<DType::I32> : ExactBytes<4> {};
template <> struct Elem<DType::UI32> : ExactBytes<4> {};
template <> struct Elem<DType::I64> : ExactBytes<8> {};
template <> struct Elem<DType::UI64> : ExactBytes<8> {};
template <> struct Elem<DType::F64> : ExactBytes<8> {};

// The accumulator of D and its conversion from and to raw bits (the low
// bits of a u64): f32 for the float types, through their Elem.
template <DType D> struct Acc {
  using T = float;
  __device__ static T from_bits(u64 b) { return Elem<D>::to_f32(u32(b)); }
  __device__ static u64 to_bits(T x) { return Elem<D>::from_f32(x); }
};
template <class A, class S> struct IntAcc {
  using T = A;
  __device__ static T from_bits(u64 b) { return T(S(b)); }  // S: the element's own type, sign-extends
  __device__ static u64 to_bits(T x) { return u64(x); }
};
template <> struct Acc<DType::I8> : IntAcc<int, signed char> {};
template <> struct Acc<DType::UI8> : IntAcc<u32, u8> {};
template <> struct Acc<DType::I32> : IntAcc<int, int> {};
template <> struct Acc<DType::UI32> : IntAcc<u32, u32> {};
template <> struct Acc<DType::I64> : IntAcc<long long, long long> {};
template <> struct Acc<DType::UI64> : IntAcc<u64, u64> {};
template <> struct Acc<DType::F64> {
  using T = double;
  __device__ static T from_bits(u64 b) { return __longlong_as_double(static_cast<long long>(b)); }
  __device__ static u64 to_bits(T x) { return static_cast<u64>(__double_as_longlong(x)); }
};
template <DType D> using AccT = typename Acc<D>::T;

// The floating-point accumulators (f32, f64): fmax and fmin have an overload for each.
template <class T>
__device__ __forceinline__ T combine_real(int op, T a, T b) {
  switch (static_cast<RedOp>(op)) {
    case RedOp::Max: return fmax(a, b);
    case RedOp::Min: return fmin(a, b);
    case RedOp::Prod: return a * b;
    default: return a + b;
  }
}
__device__ __forceinline__ float combine(int op, float a, float b) { return combine_real(op, a, b); }
__device__ __forceinline__ double combine(int op, double a, double b) { return combine_real(op, a, b); }
// Integers: sums and products in the unsigned type U, so that overflow wraps
// (signed overflow is undefined); comparisons in the accumulator's own sign.
template <class A, class U>
__device__ __forceinline__ A combine_int(int op, A a, A b) {
  switch (static_cast<RedOp>(op)) {
    case RedOp::Max: return a > b ? a : b;
    case RedOp::Min: return a < b ? a : b;
    case RedOp::Prod: return A(U(a) * U(b));
    case RedOp::And: return a & b;
    case RedOp::Or: return a | b;
    case RedOp::Xor: return a ^ b;
    default: return A(U(a) + U(b));
  }
}
__device__ __forceinline__ int combine(int op, int a, int b) { return combine_int<int, u32>(op, a, b); }
__device__ __forceinline__ u32 combine(int op, u32 a, u32 b) { return combine_int<u32, u32>(op, a, b); }
__device__ __forceinline__ long long combine(int op, long long a, long long b) {
  return combine_int<long long, u64>(op, a, b);
}
__device__ __forceinline__ u64 combine(int op, u64 a, u64 b) { return combine_int<u64, u64>(op, a, b); }

// An average (RedOp::Avg, combined as a sum) divided once by its n contributions.
template <class T, int E>
__device__ __forceinline__ void finish_average(int op, T (&acc)[E], int n) {
  if (static_cast<RedOp>(op) != RedOp::Avg) return;
#pragma unroll
  for (int e = 0; e < E; ++e) acc[e] = acc[e] / T(n);
}

// Element-wise combination of a chunk into the accumulators; sm_100 packs pairs.
struct ScalarCombine {
  template <class T, int E>
  __device__ static void apply(int op, T (&acc)[E], const T (&x)[E]) {
#pragma unroll
    for (int e = 0; e < E; ++e) acc[e] = combine(op, acc[e], x[e]);
  }
};

template <DType D, int W>
__device__ __forceinline__ void unpack(const Word<W>& w, AccT<D> (&x)[W / Elem<D>::bytes]) {
  constexpr int B = Elem<D>::bytes;
  if constexpr (B == 8) {
#pragma unroll
    for (int i = 0; i < W / 8; ++i)
      x[i] = Acc<D>::from_bits(u64(word<W>(w, 2 * i)) | u64(word<W>(w, 2 * i + 1)) << 32);
  } else {
    constexpr u32 mask = B >= 4 ? ~0u : (1u << (8 * B)) - 1;
#pragma unroll
    for (int i = 0; i < W / B; ++i) x[i] = Acc<D>::from_bits((word<W>(w, i * B / 4) >> (8 * (i * B % 4))) & mask);
  }
}

template <DType D, int W>
__device__ __forceinline__ Word<W> pack(const AccT<D> (&x)[W / Elem<D>::bytes]) {
  constexpr int B = Elem<D>::bytes;
  Word<W> w{};
  if constexpr (B == 8) {
#pragma unroll
    for (int i = 0; i < W / 8; ++i) {
      const u64 bits = Acc<D>::to_bits(x[i]);
      set_word<W>(w, 2 * i, u32(bits));
      set_word<W>(w, 2 * i + 1, u32(bits >> 32));
    }
    return w;
  }
  constexpr int per_word = B >= 4 ? 1 : 4 / B;
  constexpr u32 mask = B >= 4 ? ~0u : (1u << (8 * B)) - 1;
#pragma unroll
  for (int i = 0; i < (W + 3) / 4; ++i) {
    u32 bits = 0;
#pragma unroll
    for (int j = 0; j < per_word && i * per_word + j < W / B; ++j)
      bits |= (u32(Acc<D>::to_bits(x[i * per_word + j])) & mask) << (8 * B * j);
    set_word<W>(w, i, bits);
  }
  return w;
}

// The threads of all blocks of a role, as one flat range.
struct Part {
  int index, count;  // this block among the role's blocks
  __device__ i64 first() const { return i64(index) * blockDim.x + threadIdx.x; }
  __device__ i64 stride() const { return i64(count) * blockDim.x; }
};

// -- copy and reduce through registers ----------------------------------------

// Loads in flight per thread of a copy.
constexpr int kCopyUnroll = 4;

// Chunks [0, chunks) of W bytes spread over the role's threads in rounds of
// kCopyUnroll loads in flight per thread: `load(k)` gives chunk k, and
// `put(i, stride, v)` stores the round's chunks i + u * stride (u <
// kCopyUnroll, those below `chunks`) wherever they go.
template <int W, class Load, class Put>
__device__ __forceinline__ void copy_rounds(i64 chunks, Part part, Load load, Put put) {
  constexpr int U = kCopyUnroll;
  const i64 stride = part.stride();
  for (i64 i = part.first(); i < chunks; i += stride * U) {
    // Zeroed: left undefined where not loaded, they went to local memory in the kernel.
    Word<W> v[U] = {};
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < chunks) v[u] = load(i + u * stride);
    put(i, stride, v);
  }
}

// dst[from, from + chunks * W) = src[...], several loads in flight per thread.
template <int W>
__device__ void copy_chunks(Span dst, Span src, i64 from, i64 chunks, Part part) {
  copy_rounds<W>(chunks, part, [&](i64 k) { return load<W>(at(src, from + k * W)); },
                 [&](i64 i, i64 stride, const Word<W>(&v)[kCopyUnroll]) {
#pragma unroll
                   for (int u = 0; u < kCopyUnroll; ++u)
                     if (i + u * stride < chunks) store<W>(at(dst, from + (i + u * stride) * W), v[u]);
                 });
}

// Several destinations at once (a push, a reduce that forwards its result):
// the linear spans of dsts[0..n), W-aligned at byte `from`, each get every
// chunk, which is loaded (or reduced) once.

// dsts[d][from + k * W, ...) = src[from + k * W, ...) for k in [0, chunks), src aligned as they are.
// Loads above kCopyUnroll: first the rounds in which every thread has Loads
// chunks, loaded with no bound checks (atom.push `loads`), then the rest.
template <int W, int Loads = kCopyUnroll>
__device__ void copy_chunks_to_all(const Span* dsts, int n, const char* src, i64 from, i64 chunks, Part part) {
  if constexpr (Loads > kCopyUnroll) {
    // Byte offsets, not chunk indices: fewer values live across the round (at two blocks an SM
    // a thread has 64 registers, Loads of them 4 each).
    const i64 step = part.stride() * W, rounds = chunks / (part.stride() * Loads);
    const i64 end = from + rounds * step * Loads;
    for (i64 at = from + part.first() * W; at < end; at += step * Loads) {
      Word<W> v[Loads];
#pragma unroll
      for (int u = 0; u < Loads; ++u) v[u] = load<W>(src + at + u * step);
      for (int d = 0; d < n; ++d) {
        char* p = dsts[d].p + at;
#pragma unroll
        for (int u = 0; u < Loads; ++u) store<W>(p + u * step, v[u]);
      }
    }
    from = end;
    chunks -= rounds * part.stride() * Loads;
  }
  copy_rounds<W>(chunks, part, [&](i64 k) { return load<W>(src + from + k * W); },
                 [&](i64 i, i64 stride, const Word<W>(&v)[kCopyUnroll]) {
                   for (int d = 0; d < n; ++d)
#pragma unroll
                     for (int u = 0; u < kCopyUnroll; ++u)
                       if (i + u * stride < chunks) store<W>(dsts[d].p + from + (i + u * stride) * W, v[u]);
                 });
}

// dst[from, to) = src[from, to) a byte per thread: the few bytes around
// wider copies, without copy_chunks' loads in flight (and their registers).
__device__ __forceinline__ void copy_bytes(Span dst, Span src, i64 from, i64 to, Part part) {
  for (i64 i = from + part.first(); i < to; i += part.stride()) *at(dst, i) = *at(src, i);
}

// Resident blocks per SM the kernel is compiled for (its __launch_bounds__):
// the generated source defines it before the include.
#ifndef PURLIN_BLOCKS_PER_SM
#define PURLIN_BLOCKS_PER_SM 1
#endif

// Chunks in flight per thread and source for a reduction: NVLink reads need
// several to keep the link busy; at most 32 accumulators stay in registers.
// At two blocks an SM ptxas caps a thread at 64 registers: 4 in flight spill
// there (reduce_scatter 134 B, the composed all_reduce 204 B), 2 spill less or
// not at all and ran 0.89-0.97x as long on one H100 (bench/results).
constexpr int kReduceChunksMost = PURLIN_BLOCKS_PER_SM > 1 ? 2 : 4;
template <DType D, int W>
constexpr int kReduceUnroll = W / Elem<D>::bytes >= 32                              ? 1
                              : 32 / (W / Elem<D>::bytes) < kReduceChunksMost ? 32 / (W / Elem<D>::bytes)
                                                                             : kReduceChunksMost;

// acc[u] = source 0 op source 1 op ... in source order, in f32, for the U
// chunks that `load(s, u)` gives of source s (all sources' loads of one
// round in flight together).
template <DType D, int W, int U, class Combine, class Load>
__device__ __forceinline__ void reduce_round(AccT<D> (&acc)[U][W / Elem<D>::bytes], int n_srcs, int op, Load load) {
  Word<W> raw[U];
#pragma unroll
  for (int u = 0; u < U; ++u) raw[u] = load(0, u);
#pragma unroll
  for (int u = 0; u < U; ++u) unpack<D, W>(raw[u], acc[u]);
  for (int s = 1; s < n_srcs; ++s) {
#pragma unroll
    for (int u = 0; u < U; ++u) raw[u] = load(s, u);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      AccT<D> x[W / Elem<D>::bytes];
      unpack<D, W>(raw[u], x);
      Combine::apply(op, acc[u], x);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) finish_average(op, acc[u], n_srcs);
}

// Chunks [0, chunks) of W bytes reduced over the role's threads in rounds
// of U chunks per thread: `load(s, k)` gives chunk k of source s (all
// sources' loads of a round in flight together), and `put(i, stride, acc)`
// stores the round's chunks i + u * stride (those below `chunks`).
template <DType D, int W, class Combine, class Load, class Put>
__device__ __forceinline__ void reduce_rounds(int n_srcs, int op, i64 chunks, Part part, Load load, Put put) {
  constexpr int U = kReduceUnroll<D, W>;
  const i64 stride = part.stride();
  for (i64 i = part.first(); i < chunks; i += stride * U) {
    AccT<D> acc[U][W / Elem<D>::bytes];
    reduce_round<D, W, U, Combine>(acc, n_srcs, op, [&](int s, int u) {
      const i64 c = i + u * stride;
      return c < chunks ? load(s, c) : Word<W>{};
    });
    put(i, stride, acc);
  }
}

// dst = srcs[0] op srcs[1] op ... in source order, accumulated in f32.
template <DType D, int W, class Combine>
__device__ void reduce_chunks(Span dst, const Span* srcs, int n_srcs, int op, i64 from, i64 chunks,
                              Part part) {
  constexpr int U = kReduceUnroll<D, W>;
  reduce_rounds<D, W, Combine>(
      n_srcs, op, chunks, part, [&](int s, i64 c) { return load<W>(at(srcs[s], from + c * W)); },
      [&](i64 i, i64 stride, AccT<D>(&acc)[U][W / Elem<D>::bytes]) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (i + u * stride < chunks) store<W>(at(dst, from + (i + u * stride) * W), pack<D, W>(acc[u]));
      });
}

// dsts[d] = srcs[0] op srcs[1] op ... from byte `from`, sources aligned as
// the destinations. Each store packs its chunk again: holding the packed
// chunks as well as the accumulators spills at 64 registers (measured slower).
template <DType D, int W, class Combine>
__device__ void reduce_chunks_to_all(const Span* dsts, int n, const Span* srcs, int n_srcs, int op, i64 from,
                                     i64 chunks, Part part) {
  constexpr int U = kReduceUnroll<D, W>;
  reduce_rounds<D, W, Combine>(
      n_srcs, op, chunks, part, [&](int s, i64 c) { return load<W>(srcs[s].p + from + c * W); },
      [&](i64 i, i64 stride, AccT<D>(&acc)[U][W / Elem<D>::bytes]) {
        for (int d = 0; d < n; ++d)
#pragma unroll
          for (int u = 0; u < U; ++u)
            if (i + u * stride < chunks) store<W>(dsts[d].p + from + (i + u * stride) * W, pack<D, W>(acc[u]));
      });
}

// -- sources aligned unlike the destination -----------------------------------
// A W-aligned destination chunk takes its bytes from two neighbouring aligned
// W-byte words of the source. Each lane loads one aligned word and gets the
// next from lane + 1, so every source word (on NVLink: remote) is read once;
// words with no byte of the span are never read. These functions shuffle, so
// all 32 lanes call them together (blocks are whole warps). Words are chosen
// by assignment, not `?:`, which can put them in local memory.

// The source word after `w`: lane l's comes from lane l + 1, lane 31's from
// lane 0, which offers `after` (the word after the warp's) in place of its
// own, since no other lane reads lane 0.
template <int W>
__device__ __forceinline__ Word<W> next_word(const Word<W>& w, const Word<W>& after) {
  Word<W> offer = w, r;
  if (threadIdx.x % 32 == 0) offer = after;
  const int from = (threadIdx.x + 1) % 32;
#pragma unroll
  for (int i = 0; i < W / 4; ++i) set_word<W>(r, i, __shfl_sync(~0u, word<W>(offer, i), from));
  return r;
}

// Bytes [off, off + W) of the 2W bytes lo, hi (off in [0, W), warp-uniform):
// whole words are selected in log2(W / 4) steps, so that no register array is
// indexed at run time (that would go to local memory), then bytes by a funnel shift.
template <int W>
__device__ __forceinline__ Word<W> extract(const Word<W>& lo, const Word<W>& hi, int off) {
  constexpr int N = W / 4;
  u32 c[2 * N];
#pragma unroll
  for (int i = 0; i < N; ++i) {
    c[i] = word<W>(lo, i);
    c[N + i] = word<W>(hi, i);
  }
  const int q = off / 4;
#pragma unroll
  for (int s = 1; s < N; s *= 2)
#pragma unroll
    for (int i = 0; i + s < 2 * N; ++i) c[i] = q & s ? c[i + s] : c[i];
  Word<W> r;
#pragma unroll
  for (int i = 0; i < N; ++i) set_word<W>(r, i, __funnelshift_r(c[i], c[i + 1], 8 * (off % 4)));
  return r;
}

// Chunk k (bytes [k * W, (k + 1) * W)) of the linear span starting at `src`,
// any alignment, of which the warp reads chunks [k - lane, k - lane + 32);
// lanes with k >= chunks get zeros.
template <int W>
__device__ Word<W> load_shifted(const char* src, i64 k, i64 chunks) {
  const int off = int(reinterpret_cast<u64>(src) % W);
  if (off == 0) return k < chunks ? load<W>(src + k * W) : Word<W>{};
  const char* base = src - off;
  // Word `chunks` holds the span's last bytes (off > 0).
  const i64 after = k - threadIdx.x % 32 + 32;
  Word<W> w{}, next{};
  if (k <= chunks) w = load<W>(base + k * W);
  if (threadIdx.x % 32 == 0 && after <= chunks) next = load<W>(base + after * W);
  return extract<W>(w, next_word<W>(w, next), off);
}

// dsts[d].p + from + [k * W, (k + 1) * W) = src + from + [k * W, (k + 1) * W)
// for k in [0, chunks) and each of the n linear destinations, W-aligned
// there, src not. As copy_chunks, several loads in flight per thread, every
// source word read once: a warp takes 32 * U consecutive chunks, lane l
// loading aligned words l, l + 32, ..., and lane 0 also the word after the
// warp's.
template <int W>
__device__ void copy_shifted_to_all(const Span* dsts, int n, const char* src, i64 from, i64 chunks, Part part) {
  constexpr int U = 64 / W;
  const int off = int(reinterpret_cast<u64>(src + from) % W);
  const char* base = src + from - off;
  const int lane = threadIdx.x % 32;
  for (i64 k0 = (part.first() - lane) * U; k0 < chunks; k0 += part.stride() * U) {
    Word<W> w[U + 1] = {};
#pragma unroll
    for (int u = 0; u <= U; ++u) {
      const i64 k = k0 + u * 32 + lane;
      if (k <= chunks && (u < U || lane == 0)) w[u] = load<W>(base + k * W);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const i64 k = k0 + u * 32 + lane;
      const Word<W> v = extract<W>(w[u], next_word<W>(w[u], w[u + 1]), off);
      if (k < chunks)
        for (int d = 0; d < n; ++d) store<W>(dsts[d].p + from + k * W, v);
    }
  }
}

// dst[k * W, (k + 1) * W) = src[k * W, (k + 1) * W) for k in [0, chunks), dst W-aligned, src not.
template <int W>
__device__ void copy_shifted(char* dst, const char* src, i64 chunks, Part part) {
  const Span to{dst, -1};
  copy_shifted_to_all<W>(&to, 1, src, 0, chunks, part);
}

// As reduce_chunks from byte `from` of each span, for a destination W-aligned
// there (dst points at it) and sources at any alignment. Lane l of a warp
// takes chunks k + u * stride, consecutive across the warp for every u.
template <DType D, int W, class Combine>
__device__ void reduce_shifted(char* dst, const Span* srcs, int n_srcs, int op, i64 from, i64 chunks,
                               Part part) {
  constexpr int U = kReduceUnroll<D, W>;
  const int lane = threadIdx.x % 32;
  const i64 stride = part.stride();
  for (i64 k = part.first(); k - lane < chunks; k += stride * U) {
    AccT<D> acc[U][W / Elem<D>::bytes];
    reduce_round<D, W, U, Combine>(acc, n_srcs, op, [&](int s, int u) {
      return load_shifted<W>(srcs[s].p + from, k + u * stride, chunks);
    });
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (k + u * stride < chunks) store<W>(dst + (k + u * stride) * W, pack<D, W>(acc[u]));
  }
}

}  // namespace purlin::cuda
