// What a kernel generated from an atom.kernel (purlin/cuda/codegen.py) calls:
// one device function per Atom op, reading the rank's units and groups from
// its tables. The generated code holds the control flow (roles as blockIdx
// ranges, loops, straight-line steps) and folds as template arguments what
// shapes the code: phase, mechanism, order, role size. This is the frame:
// the Kernel (one rank's call as a block sees it), the copy or reduce of a
// group whichever protocol brought its sources, and snac.advance; the ops
// of each protocol are in staged.cuh and packets.cuh, the memory orders and
// polling they share in order.cuh.
#pragma once

#include "purlin/packets.cuh"
#include "purlin/staged.cuh"

namespace purlin::cuda {

// The tables as the kernel loads them at run time (a Kernel's default Fixed).
struct LoadedTables {
  static constexpr bool fixed = false;
  static constexpr int words = 0;
  __device__ static constexpr i64 word(int) { return 0; }
};

// A kernel's first step: launched as a programmatic dependent, it may start
// while the work ahead of it on its stream (the caller's, or this rank's
// previous call, which holds the block state) still runs, so it waits for
// that work and its memory before it touches anything, then lets the next
// launch start (the host checked that two grids of every rank fit at once).
// The wait returns at once in a kernel launched without it.
__device__ __forceinline__ void follow_previous(const abi::Header& h) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  if (h.programmatic) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// One rank's call as a block sees it. W: the world size; Shared: whether the
// block copies the tables into shared memory first (one round trip, next to
// the epoch's load; purlin/cuda/program.py decides by their size); System:
// whether its signals and packets are at system scope (else every rank runs
// on this GPU and GPU scope orders them). Fixed: LoadedTables, or this
// rank's tables as the host uploads them (Fixed::word(i), a constant array the
// generated code holds per rank): every lookup still loads, but the compiler
// is told the value, so one at an index it knows folds into the code and
// its load goes; the symmetric allocations' addresses (the host's) are not
// among them.
template <int W, bool Shared, bool System = true, class Fixed = LoadedTables>
struct Kernel {
  static constexpr int world = W;
  static constexpr bool system = System;
  const abi::Header& h;
  const i64* tab;
  // A symmetric kernel's: every rank's input and output of this call.
  const abi::Peers<W>* peers;
  u64 epoch, prev;
  bool failed = false;  // a wait of this thread gave up, or saw another give up

  // `shared`: room for the tables in dynamic shared memory.
  // The block state and the tables are loaded at once: one round trip
  // through L2 before the first step, not one per table word a thread copies.
  __device__ Kernel(const abi::Header& header, i64* shared, const abi::Peers<W>* peer_buffers = nullptr)
      : h(header), peers(peer_buffers) {
    const abi::BlockState s = h.blocks[blockIdx.x];
    if constexpr (Shared) {
      // 32-bit indices (tables stay far below 2^31 words, tables.py checks):
      // 64-bit ones double the index arithmetic a one-warp kernel waits on.
      constexpr int kInFlight = 8;
      const int words = int(h.table_words), threads = int(blockDim.x);
      for (int base = int(threadIdx.x); base < words; base += kInFlight * threads) {
        i64 w[kInFlight];
#pragma unroll
        for (int q = 0; q < kInFlight; ++q)
          if (base + q * threads < words) w[q] = h.tables[base + q * threads];
#pragma unroll
        for (int q = 0; q < kInFlight; ++q)
          if (base + q * threads < words) shared[base + q * threads] = w[q];
      }
      tab = shared;
      __syncthreads();
    } else {
      tab = h.tables;
    }
    epoch = s.epoch;
    prev = s.prev;
    // One rank per process: this call's buffer offsets, for the peers' same_offsets.
    if (h.record_at && blockIdx.x == 0 && threadIdx.x == 0) {
      auto* rec = reinterpret_cast<abi::BufferRecord*>(sym(h.rank) + h.record_at);
      st_relaxed<System>(reinterpret_cast<u64*>(&rec->input_at), u64(h.input_at));
      st_relaxed<System>(reinterpret_cast<u64*>(&rec->output_at), u64(h.output_at));
      st_release<System>(&rec->epoch, epoch + 1);
    }
  }

  // Table word i: indices are 32-bit (see the constructor).
  __device__ i64 t(int i) const {
    const i64 v = tab[i];
    if constexpr (Fixed::fixed)
      if (i < Fixed::words && (i < abi::kGlobalWords || i >= abi::kGlobalWords + W))
        __builtin_assume(v == Fixed::word(i));
    return v;
  }
  __device__ i64 rank() const { return h.rank; }
  // Rank r's symmetric allocation, as this rank addresses it (the host's
  // words: loaded even where the rest of the tables are compiled in).
  __device__ char* sym(i64 r) const { return reinterpret_cast<char*>(tab[abi::kGlobalWords + r]); }
  static constexpr int phase(int k) { return abi::kGlobalWords + W + k * abi::kPhaseWords; }
  __device__ char* source(int ph) const { return t(ph + abi::kPhSource) ? h.output : h.input; }
  // Rank r's source buffer of phase ph, and its output (direct phases: symmetric kernels only).
  __device__ char* source_of(int ph, i64 r) const { return t(ph + abi::kPhSource) ? peers->output[r] : peers->input[r]; }
  __device__ char* output_of(i64 r) const { return peers->output[r]; }
  __device__ int unit(int ph, u64 u) const { return int(t(ph + abi::kPhUnitsAt)) + int(u) * abi::kUnitWords; }
  __device__ int group(int ph, u64 g) const { return int(t(ph + abi::kPhGroupsAt)) + int(g) * abi::kGroupWords; }
  __device__ int source_at(int group, i64 j) const {
    return int(t(group + abi::kGSourcesAt)) + int(j) * abi::kSourceWords;
  }
  // Half `half` of buffer `ph` on rank r.
  __device__ char* half_of(int ph, i64 r, u64 half) const {
    return sym(r) + t(ph + abi::kPhBuffer) + i64(half) * t(ph + abi::kPhHalfBytes);
  }
  __device__ u64* signal(i64 r, int ph, int which, i64 slot) const {
    return reinterpret_cast<u64*>(sym(r) + t(ph + which)) + slot;
  }
};

__device__ __forceinline__ u64 max_u(u64 a, u64 b) { return a > b ? a : b; }
__device__ __forceinline__ u64 min_u(u64 a, u64 b) { return a < b ? a : b; }

// The sources of group `group` into `srcs`: own buffer, peers' staging,
// packets, or (direct pull) the source ranks' own buffers.
template <abi::Moves Mv, class K>
__device__ void group_sources(const K& k, int ph, int group, u64 half, Span* srcs) {
  const int n = int(k.t(group + abi::kGSources));
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const int s = k.source_at(group, j);
    if (k.t(s + abi::kSUnit) < 0)
      srcs[j] = {k.source(ph) + k.t(s + abi::kSOffset), -1};
    else if constexpr (Mv == abi::Moves::Packets)
      srcs[j] = window_span(k, ph, s, half);
    else if constexpr (Mv == abi::Moves::Pull)
      // A peer whose buffers sit elsewhere is not read (the call fails).
      srcs[j] = {(same_offsets(k, k.t(s + abi::kSRank)) ? k.source_of(ph, k.t(s + abi::kSRank)) : k.source(ph)) +
                     k.t(s + abi::kSOffset),
                 -1};
    else
      srcs[j] = {k.half_of(ph, k.t(s + abi::kSRank), half) +
                     k.t(s + abi::kSUnit) % k.t(ph + abi::kPhSlots) * k.t(ph + abi::kPhSlotBytes),
                 -1};
  }
}

// atom.copy / atom.reduce of group g: from its sources (own buffer, peers'
// staging, packets or peers' buffers) into the output, with mechanism M.
template <DType D, Mech M, int Width, bool Reduce, abi::Moves Mv, class K>
__device__ void consume(const K& k, int phase, int op, u64 g, u64 half, Part part, char* smem, int smem_bytes) {
  constexpr bool Packets = Mv == abi::Moves::Packets;
  __shared__ Span srcs[K::world];
  __shared__ Span dst;
  const int ph = K::phase(phase), group = k.group(ph, g);
  const int n = int(k.t(group + abi::kGSources));
  __syncthreads();  // the previous step is done with the spans
  group_sources<Mv>(k, ph, group, half, srcs);
  if (threadIdx.x == 0) dst = {k.h.output + k.t(group + abi::kGDst), -1};
  __syncthreads();
  char* mc = nullptr;
  if constexpr (M == Mech::Multimem) {
    // Every source sits at the same slot of the symmetric buffer (stage_local).
    const int s = k.source_at(group, 0);
    mc = reinterpret_cast<char*>(k.t(ph + abi::kPhMulticast)) + i64(half) * k.t(ph + abi::kPhHalfBytes) +
         k.t(s + abi::kSUnit) % k.t(ph + abi::kPhSlots) * k.t(ph + abi::kPhSlotBytes);
  }
  // A slice copied onto itself (the rank's input is its own output slice) is left alone.
  if (!Reduce && !Packets && dst.p == srcs[0].p) return;
  move<D, M, Width, Reduce, Packets>(dst, srcs, n, op, k.t(group + abi::kGBytes), part, smem, smem_bytes, mc);
}

// atom.reduce of group g of a direct pull phase fused with the atom.push of
// unit g of the phase `fwd` that forwards it (a composed reduction): the
// reduced chunk goes to this rank's output and to the unit's destinations
// from one pass over the sources (tables.py checks that unit g is the range
// group g reduces).
template <DType D, Mech M, int Width, class K>
__device__ void reduce_push(const K& k, int phase, int op, u64 g, int fwd, Part part, char* smem, int smem_bytes) {
  __shared__ Span srcs[K::world];
  __shared__ Span dsts[K::world + 1];
  const int ph = K::phase(phase), group = k.group(ph, g);
  const int unit = k.unit(K::phase(fwd), g);
  __syncthreads();  // the previous step is done with the spans
  group_sources<abi::Moves::Pull>(k, ph, group, 0, srcs);
  if (threadIdx.x == 0) dsts[0] = {k.h.output + k.t(group + abi::kGDst), -1};
  __syncthreads();
  const int n = unit_destinations(k, unit, dsts[0].p, dsts, 1);
  move_to_all<D, M, Width, true>(dsts, n, srcs, int(k.t(group + abi::kGSources)), op, k.t(group + abi::kGBytes),
                                 part, smem, smem_bytes);
}

// snac.advance: each block moves its own epochs on, unless a wait gave up
// (the host then refuses further calls).
template <class K>
__device__ void advance(const K& k, u64 amount) {
  if (__syncthreads_or(k.failed)) return;
  if (threadIdx.x == 0) k.h.blocks[blockIdx.x] = {k.epoch + amount, k.epoch};
}

}  // namespace purlin::cuda
