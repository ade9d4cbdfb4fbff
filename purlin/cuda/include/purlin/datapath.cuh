// The Atoms' copy and N-to-1 reduce over spans of any alignment, with the
// mechanism the lowering chose (a template argument, so a generated kernel
// holds only the paths it uses).
#pragma once

#include "purlin/atoms/sm100.cuh"

namespace purlin::cuda {

#if __CUDA_ARCH__ >= 1000
using ArchCombine = sm100::PackedCombine;
constexpr int kWidestAccess = 32;
#else
using ArchCombine = ScalarCombine;
constexpr int kWidestAccess = 16;
#endif

__device__ inline bool all_aligned(const Span& dst, const Span* srcs, int n_srcs, int width) {
  if (!aligned(dst, width)) return false;
  for (int k = 0; k < n_srcs; ++k)
    if (!aligned(srcs[k], width)) return false;
  return true;
}

// The widest access (a power of two in [unit, widest]) at which every span is
// aligned.
__device__ inline int widest_access(const Span& dst, const Span* srcs, int n_srcs, int unit, int widest) {
  int w = widest;
  while (w > unit && !all_aligned(dst, srcs, n_srcs, w)) w /= 2;
  return w;
}

__device__ inline bool any_packets(const Span& dst, const Span* srcs, int n_srcs) {
  if (is_packets(dst)) return true;
  for (int k = 0; k < n_srcs; ++k)
    if (is_packets(srcs[k])) return true;
  return false;
}

// Whether linear sources are `width`-aligned at `byte`.
__device__ inline bool sources_aligned_at(const Span* srcs, int n_srcs, i64 byte, int width) {
  for (int k = 0; k < n_srcs; ++k)
    if (reinterpret_cast<u64>(srcs[k].p + byte) % width) return false;
  return true;
}

template <DType D, int W>
__device__ void move_at(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, i64 from, i64 chunks,
                        Part part) {
  if constexpr (W <= kWidestAccess) {
    if (!reduce)
      copy_chunks<W>(dst, srcs[0], from, chunks, part);
    else if constexpr (W >= Elem<D>::bytes)
      reduce_chunks<D, W, ArchCombine>(dst, srcs, n_srcs, op, from, chunks, part);
  }
}

// Bytes [from, to) one element (a copy: one byte) at a time.
template <DType D>
__device__ void move_units(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, i64 from, i64 to,
                           Part part) {
  constexpr int elem = Elem<D>::bytes;
  if (reduce)
    move_at<D, elem>(dst, srcs, n_srcs, true, op, from, (to - from) / elem, part);
  else
    copy_bytes(dst, srcs[0], from, to, part);
}

// Linear spans, the destination element-aligned, at the widest access W: the
// head one unit at a time until the destination is W-aligned, the body W
// bytes at a time (sources aligned otherwise are shifted into place), the
// tail one unit at a time.
template <DType D, bool Reduce, int Width>
__device__ void move_linear(const Span& dst, const Span* srcs, int n_srcs, int op, i64 from, i64 bytes, Part part) {
  // A reduce keeps at most 16 accumulators per thread, so fp8 chunks stay in registers.
  constexpr int Widest = Width < kWidestAccess ? Width : kWidestAccess;
  constexpr int W = Reduce && 16 * Elem<D>::bytes < Widest ? 16 * Elem<D>::bytes : Widest;
  const int head = (W - int(reinterpret_cast<u64>(dst.p + from) % W)) % W;
  const i64 body = min(from + head, bytes);
  const i64 chunks = (bytes - body) / W;
  move_units<D>(dst, srcs, n_srcs, Reduce, op, from, body, part);
  if (sources_aligned_at(srcs, Reduce ? n_srcs : 1, body, W))
    move_at<D, W>(dst, srcs, n_srcs, Reduce, op, body, chunks, part);
  else if constexpr (Reduce)
    reduce_shifted<D, W, ArchCombine>(dst.p + body, srcs, n_srcs, op, body, chunks, part);
  else
    copy_shifted<W>(dst.p + body, srcs[0].p + body, chunks, part);
  move_units<D>(dst, srcs, n_srcs, Reduce, op, body + chunks * W, bytes, part);
}

// Bytes [from, bytes) through registers. Linear spans: move_linear. With
// packets (or a destination off element alignment): the widest access at
// which every span is aligned, at most a packet's 8 data bytes, the
// remainder one unit at a time. Width: the widest access the lowering chose;
// Packets: whether a span may be a packet window (else only linear code).
template <DType D, int Width, bool Packets>
__device__ void move_registers(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, i64 from,
                               i64 bytes, Part part) {
  const int unit = reduce ? Elem<D>::bytes : 1;
  if (!Packets || (!any_packets(dst, srcs, n_srcs) && aligned(dst, unit))) {
    if (reduce)
      move_linear<D, true, Width>(dst, srcs, n_srcs, op, from, bytes, part);
    else
      move_linear<D, false, Width>(dst, srcs, n_srcs, op, from, bytes, part);
    return;
  }
  if constexpr (!Packets) return;
  // Chunks start at `from`, so they are no wider than its alignment.
  int widest = kPacketDataBytes;
  while (from % widest) widest /= 2;
  const int w = widest_access(dst, srcs, n_srcs, unit, max(widest, unit));
  const i64 chunks = (bytes - from) / w;
  switch (w) {
    case 8: move_at<D, 8>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    case 4: move_at<D, 4>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    case 2: move_at<D, 2>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    default: move_at<D, 1>(dst, srcs, n_srcs, reduce, op, from, chunks, part);
  }
  move_units<D>(dst, srcs, n_srcs, reduce, op, from + chunks * w, bytes, part);
}

// dst = srcs[0] (a copy) or srcs[0] op srcs[1] op ... (a reduce), `bytes`
// long, by the role's blocks with mechanism M and accesses of at most Width
// bytes; Packets: whether a source is a packet window. `smem` is the kernel's dynamic
// shared memory of `smem_bytes` (the pipelines' tiles); `mc` the multicast
// address of a multimem step.
template <DType D, Mech M, int Width, bool Reduce, bool Packets>
__device__ void move(const Span& dst, const Span* srcs, int n_srcs, int op, i64 bytes, Part part, char* smem,
                     int smem_bytes, char* mc) {
  i64 done = 0;
  if constexpr (M == Mech::Multimem) {
    // Multicast objects are never created (the host refuses such kernels); the
    // path is compiled so that the sm_90 lowering stays checked.
    const i64 vecs = bytes / 16;
    if constexpr (Reduce)
      sm90::multimem_reduce<D>(dst, mc, op, vecs, part);
    else
      sm90::multimem_broadcast(mc, srcs[0], vecs, part);
    done = vecs * 16;
  } else if constexpr (M == Mech::CpAsync || M == Mech::Bulk) {
    const int n_staged = Reduce ? n_srcs : 1;
    const int tile_bytes = smem_bytes / (kPipelineStages * n_staged) / 16 * 16;
    // Pipelines move whole 16-byte vectors of linear memory.
    if (tile_bytes >= 16 && all_aligned(dst, srcs, n_staged, 16)) {
      const i64 vecs = bytes / 16;
      if constexpr (M == Mech::Bulk)
        sm90::pipelined_bulk<D, ArchCombine>(dst, srcs, n_staged, Reduce, op, vecs, smem, tile_bytes, part);
      else
        sm80::pipelined<D, ArchCombine>(dst, srcs, n_staged, Reduce, op, vecs, smem, tile_bytes, part);
      done = vecs * 16;
    }
  }
  if (done < bytes) move_registers<D, Width, Packets>(dst, srcs, n_srcs, Reduce, op, done, bytes, part);
}

// Bytes [from, to) of every destination one unit at a time: a reduction's
// sources read once per element for all of them (in place a destination is
// also a source, and must not be read after it was written), a copy's per
// destination.
template <DType D, bool Reduce>
__device__ void move_units_to_all(const Span* dsts, int n_dsts, const Span* srcs, int n_srcs, int op, i64 from,
                                  i64 to, Part part) {
  constexpr int elem = Elem<D>::bytes;
  if constexpr (Reduce)
    reduce_chunks_to_all<D, elem, ArchCombine>(dsts, n_dsts, srcs, n_srcs, op, from, (to - from) / elem, part);
  else
    for (int d = 0; d < n_dsts; ++d) copy_bytes(dsts[d], srcs[0], from, to, part);
}

// Whether a destination is one of the sources (in place).
__device__ inline bool aliases(const Span* dsts, int n_dsts, const Span* srcs, int n_srcs) {
  for (int d = 0; d < n_dsts; ++d)
    for (int s = 0; s < n_srcs; ++s)
      if (dsts[d].p == srcs[s].p) return true;
  return false;
}

// dsts[0..n_dsts) = srcs[0] (a copy) or srcs[0] op srcs[1] op ... (a
// reduce), all linear. Where the destinations are element-aligned and alike
// modulo the widest access W (as buffers at one offset of every rank's are),
// the head to W-alignment and the tail go one unit at a time, the body W
// bytes, the sources read once and every chunk stored to all of them:
// aligned, or for a copy from sources shifted into place. Else each
// destination is moved on its own, but a reduction in place, which goes one
// element at a time to all. Loads: a copy's loads in flight a thread in whole
// rounds (copy_chunks_to_all).
template <DType D, Mech M, int Width, bool Reduce, int Loads = kCopyUnroll>
__device__ void move_to_all(const Span* dsts, int n_dsts, const Span* srcs, int n_srcs, int op, i64 bytes, Part part,
                            char* smem, int smem_bytes) {
  constexpr int Widest = Width < kWidestAccess ? Width : kWidestAccess;
  constexpr int W = Reduce && 16 * Elem<D>::bytes < Widest ? 16 * Elem<D>::bytes : Widest;
  const int unit = Reduce ? Elem<D>::bytes : 1;
  const int head = int((W - reinterpret_cast<u64>(dsts[0].p) % W) % W);
  const i64 body = min(i64(head), bytes), chunks = (bytes - body) / W;
  const bool aligned_sources = sources_aligned_at(srcs, Reduce ? n_srcs : 1, body, W);
  bool together = n_dsts > 1 && (aligned_sources || !Reduce);
  for (int d = 0; d < n_dsts && together; ++d)
    together = aligned(dsts[d], unit) && (reinterpret_cast<u64>(dsts[d].p) - reinterpret_cast<u64>(dsts[0].p)) % W == 0;
  if (!together) {
    if (Reduce && n_dsts > 1 && aliases(dsts, n_dsts, srcs, n_srcs)) {
      move_units_to_all<D, Reduce>(dsts, n_dsts, srcs, n_srcs, op, 0, bytes, part);
      return;
    }
    for (int d = 0; d < n_dsts; ++d)
      move<D, M, Width, Reduce, false>(dsts[d], srcs, n_srcs, op, bytes, part, smem, smem_bytes, nullptr);
    return;
  }
  move_units_to_all<D, Reduce>(dsts, n_dsts, srcs, n_srcs, op, 0, body, part);
  if constexpr (Reduce)
    reduce_chunks_to_all<D, W, ArchCombine>(dsts, n_dsts, srcs, n_srcs, op, body, chunks, part);
  else if (aligned_sources)
    copy_chunks_to_all<W, Loads>(dsts, n_dsts, srcs[0].p, body, chunks, part);
  else
    copy_shifted_to_all<W>(dsts, n_dsts, srcs[0].p, body, chunks, part);
  move_units_to_all<D, Reduce>(dsts, n_dsts, srcs, n_srcs, op, body + chunks * W, bytes, part);
}

}  // namespace purlin::cuda
