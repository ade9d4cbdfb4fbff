// A phase's units and groups when its V layouts' counts are known only at run
// time: the same records purlin/cuda/tables.py writes from the bound
// PhasePlan (purlin/snac/protocol.py), computed here from the counts every
// rank contributed. Plain C++ for NVRTC's device code and the host compiler
// alike: the kernel of a device-counts collective runs it in each block, and
// purlin._runtime exposes it so that tests/python/cuda/test_counts_tables.py
// checks it against the Python tables.
#pragma once

#include "purlin/abi.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define PURLIN_HD __host__ __device__
#else
#define PURLIN_HD
#endif

namespace purlin::counts {

// What shapes a device-counts phase: folded into the generated kernel.
struct PhaseShape {
  i64 src, dst;      // abi::LayoutKind of the phase's layouts
  i64 chunk;         // elements per unit, 0: one unit per slice
  i64 stage_local;   // every contribution staged, the consumer's own too
  i64 keep_unread;   // a unit of every source slice, read or not
  i64 packets;       // the buffer is a packet window (else staging)
  i64 from_output;   // units come from the output
};

// Where the counts went wrong; every rank sees every rank's counts, so every
// rank finds the same error.
struct Problem {
  i64 code = i64(abi::CountsError::None);
  i64 rank = 0, need = 0, have = 0;
};

// The counts of every rank, `row` words each (a matrix's row, or one count).
struct Counts {
  const i64* c;
  i64 world, row;
  PURLIN_HD i64 at(i64 i, i64 j) const { return c[i * row + (row == 1 ? 0 : j)]; }
};

// A name of a V layout: (a) or (a, b); b = -1 for one-part names.
struct Name {
  i64 a, b;
};

PURLIN_HD inline i64 slices_of(i64 kind, i64 world) { return kind == i64(abi::LayoutKind::Packed) ? 1 : world; }
// Words of one phase's Index: rows of world x (world + 1).
PURLIN_HD inline i64 index_words(i64 world) { return abi::kCountsScratchRows * world * (world + 1); }

// The size of slice k of `rank`'s buffer, and its name (slices are in name order).
PURLIN_HD inline i64 slice_size(const Counts& n, i64 kind, i64 rank, i64 k) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Packed: return n.at(rank, 0);
    case abi::LayoutKind::Scattered: return n.at(k, 0);
    case abi::LayoutKind::Addressed: return n.at(rank, k);
    default: return n.at(k, rank);
  }
}
PURLIN_HD inline Name slice_name(i64 kind, i64 rank, i64 k) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Packed: return {rank, -1};
    case abi::LayoutKind::Scattered: return {k, -1};
    case abi::LayoutKind::Addressed: return {rank, k};
    default: return {k, rank};
  }
}

// The holder of `name` (every rank, for a scattered layout: -1), and the
// position of the name among the holder's slices.
PURLIN_HD inline i64 holder(i64 kind, Name name) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Scattered: return -1;
    case abi::LayoutKind::Transposed: return name.b;
    default: return name.a;
  }
}
PURLIN_HD inline i64 holders(i64 kind, i64 world) { return kind == i64(abi::LayoutKind::Scattered) ? world : 1; }
// The h-th holder of `name`, in rank order.
PURLIN_HD inline i64 holder_at(i64 kind, Name name, i64 h) { return kind == i64(abi::LayoutKind::Scattered) ? h : holder(kind, name); }
PURLIN_HD inline i64 position(i64 kind, Name name) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Packed: return 0;
    case abi::LayoutKind::Addressed: return name.b;
    default: return name.a;
  }
}

// The chunking rule, as _chunks in purlin/snac/protocol.py states it for
// Python (tests/python/cuda/test_chunks.py holds the two equal): a slice of
// `size` elements is cut from 0 into chunks of `chunk` elements, the last
// one shorter; chunk 0 leaves it whole; an empty slice has none.
PURLIN_HD inline i64 chunk_step(i64 size, i64 chunk) { return chunk > 0 ? chunk : size; }
PURLIN_HD inline i64 chunks(i64 size, i64 chunk) { return size == 0 ? 0 : chunk > 0 ? (size + chunk - 1) / chunk : 1; }
// Elements of the chunk that starts at `lo`.
PURLIN_HD inline i64 chunk_at(i64 size, i64 chunk, i64 lo) {
  const i64 step = chunk_step(size, chunk);
  return size - lo < step ? size - lo : step;
}
PURLIN_HD inline i64 round_up(i64 n, i64 align) { return (n + align - 1) / align * align; }

// Ranks that read `src_rank`'s slice of `name` from symmetric memory, and the r-th of them.
PURLIN_HD inline i64 readers(const PhaseShape& p, i64 world, Name name, i64 src_rank) {
  const i64 d = holder(p.dst, name);
  if (d < 0) return p.stage_local ? world : world - 1;
  return d != src_rank || p.stage_local;
}
PURLIN_HD inline i64 reader(const PhaseShape& p, Name name, i64 src_rank, i64 r) {
  const i64 d = holder(p.dst, name);
  if (d >= 0) return d;
  return p.stage_local || r < src_rank ? r : r + 1;
}

// Whether `rank`'s groups of `name` read a source from symmetric memory.
PURLIN_HD inline bool remote(const PhaseShape& p, i64 world, Name name, i64 rank) {
  const i64 s = holder(p.src, name);
  return p.stage_local || (s < 0 ? world > 1 : s != rank);
}

// Prefix sums over every rank's source slices, in kCountsScratchRows rows of
// world x (world + 1) words: slice offsets, units before a slice, and their
// packet-aligned elements (where a unit lands in the packet window).
struct Index {
  i64* words;
  i64 world;
  PURLIN_HD i64& offset(i64 rank, i64 k) const { return words[rank * (world + 1) + k]; }
  PURLIN_HD i64& units(i64 rank, i64 k) const { return words[(world + rank) * (world + 1) + k]; }
  PURLIN_HD i64& window(i64 rank, i64 k) const { return words[(2 * world + rank) * (world + 1) + k]; }
};

// Fills ranks first, first + stride, ... of the index (threads of a block
// share the work).
PURLIN_HD inline void prepare(const Counts& n, const PhaseShape& p, i64 align, const Index& ix, i64 first,
                              i64 stride) {
  const i64 slices = slices_of(p.src, n.world);
  for (i64 r = first; r < n.world; r += stride) {
    i64 offset = 0, units = 0, window = 0;
    for (i64 k = 0; k < slices; ++k) {
      const i64 size = slice_size(n, p.src, r, k);
      ix.offset(r, k) = offset;
      ix.units(r, k) = units;
      ix.window(r, k) = window;
      offset += size;
      if (!readers(p, n.world, slice_name(p.src, r, k), r) && !p.keep_unread) continue;
      const i64 m = chunks(size, p.chunk), step = chunk_step(size, p.chunk);
      units += m;
      // Every chunk but the last is a full step.
      if (m > 0) window += (m - 1) * round_up(step, align) + round_up(chunk_at(size, p.chunk, (m - 1) * step), align);
    }
    ix.offset(r, slices) = offset;
    ix.units(r, slices) = units;
    ix.window(r, slices) = window;
  }
}

// Rank `rank`'s extent of a V layout: its slices lie packed from 0.
PURLIN_HD inline i64 extent(const Counts& n, i64 kind, i64 rank) {
  i64 end = 0;
  for (i64 k = 0; k < slices_of(kind, n.world); ++k) end += slice_size(n, kind, rank, k);
  return end;
}

// The largest unit of `rank`.
PURLIN_HD inline i64 largest_unit(const Counts& n, const PhaseShape& p, i64 rank) {
  i64 most = 0;
  for (i64 k = 0; k < slices_of(p.src, n.world); ++k) {
    const i64 size = chunk_at(slice_size(n, p.src, rank, k), p.chunk, 0);
    if ((readers(p, n.world, slice_name(p.src, rank, k), rank) || p.keep_unread) && size > most) most = size;
  }
  return most;
}

// A negative count in rank r's counts.
PURLIN_HD inline Problem negative(const Counts& n, i64 r) {
  for (i64 j = 0; j < n.row; ++j)
    if (n.c[r * n.row + j] < 0) return {i64(abi::CountsError::Negative), r, n.c[r * n.row + j], 0};
  return {};
}

// Whether rank r's slices fit the buffers the kernel was built for;
// `buffer_elems[k]`: phase k's staging slot, or a source's region of its
// packet window; `index[k]`: phase k's, prepared.
PURLIN_HD inline Problem fits(const Counts& n, const PhaseShape* phases, i64 count, i64 input_elems,
                              i64 output_elems, const i64* buffer_elems, const Index* index, i64 r) {
  for (i64 k = 0; k < count; ++k) {
    const PhaseShape& ph = phases[k];
    const i64 src = extent(n, ph.src, r), dst = extent(n, ph.dst, r);
    const i64 src_cap = ph.from_output ? output_elems : input_elems;
    if (src > src_cap) return {i64(ph.from_output ? abi::CountsError::Output : abi::CountsError::Input), r, src,
                               src_cap};
    if (dst > output_elems) return {i64(abi::CountsError::Output), r, dst, output_elems};
    const i64 need = ph.packets ? index[k].window(r, slices_of(ph.src, n.world)) : largest_unit(n, ph, r);
    if (need > buffer_elems[k]) return {i64(abi::CountsError::Buffer), r, need, buffer_elems[k]};
  }
  return {};
}

// The first problem with the counts: a negative count on the lowest rank
// with one, else the lowest rank whose slices do not fit. Every rank sees
// every rank's counts, so every rank finds the same one. (The kernel asks
// `negative` and `fits` of each rank on threads of their own, then picks.)
PURLIN_HD inline Problem check(const Counts& n, const PhaseShape* phases, i64 count, i64 input_elems,
                               i64 output_elems, const i64* buffer_elems, const Index* index) {
  for (i64 r = 0; r < n.world; ++r)
    if (const Problem p = negative(n, r); p.code) return p;
  for (i64 r = 0; r < n.world; ++r)
    if (const Problem p = fits(n, phases, count, input_elems, output_elems, buffer_elems, index, r); p.code) return p;
  return {};
}

// Writes phase k's counts-dependent header fields and its records into
// `tab` from word `at` on, from its prepared index; returns the word after
// them, or -1 when they would pass `capacity`.
PURLIN_HD inline i64 build_phase(const Counts& n, const PhaseShape& p, const Index& ix, i64 k, i64 rank, i64 eb,
                                 i64 align, i64* tab, i64 at, i64 capacity) {
  const i64 w = n.world, head = abi::kGlobalWords + w + k * abi::kPhaseWords;
  const i64 src_slices = slices_of(p.src, w), dst_slices = slices_of(p.dst, w);
  i64 most = 0;
  for (i64 r = 0; r < w; ++r) most = ix.units(r, src_slices) > most ? ix.units(r, src_slices) : most;
  const i64 units = ix.units(rank, src_slices);
  i64 groups = 0, staged = 0, consumer_words = 0;
  for (i64 j = 0; j < dst_slices; ++j) {
    const i64 m = chunks(slice_size(n, p.dst, rank, j), p.chunk);
    groups += m;
    staged += remote(p, w, slice_name(p.dst, rank, j), rank) ? m : 0;
  }
  for (i64 j = 0; j < src_slices; ++j)
    consumer_words += (ix.units(rank, j + 1) - ix.units(rank, j)) * readers(p, w, slice_name(p.src, rank, j), rank);
  const i64 source_words = groups * holders(p.src, w) * abi::kSourceWords;
  const i64 end = at + units * abi::kUnitWords + consumer_words + groups * abi::kGroupWords + source_words;
  if (end > capacity) return -1;
  tab[head + abi::kPhUnits] = units;
  tab[head + abi::kPhGroups] = groups;
  tab[head + abi::kPhStaged] = staged;
  tab[head + abi::kPhMaxUnits] = most;
  tab[head + abi::kPhUnitsAt] = at;
  // Units, then their consumers.
  i64 unit = at, consumer = at + units * abi::kUnitWords;
  for (i64 j = 0; j < src_slices; ++j) {
    if (ix.units(rank, j + 1) == ix.units(rank, j)) continue;
    const Name name = slice_name(p.src, rank, j);
    const i64 size = slice_size(n, p.src, rank, j), offset = ix.offset(rank, j), readers_ = readers(p, w, name, rank);
    const i64 step = chunk_step(size, p.chunk);
    i64 window = ix.window(rank, j);
    for (i64 lo = 0; lo < size; lo += step, unit += abi::kUnitWords) {
      const i64 part = chunk_at(size, p.chunk, lo);
      tab[unit + abi::kUSrc] = (offset + lo) * eb;
      tab[unit + abi::kUBytes] = part * eb;
      tab[unit + abi::kUWindow] = p.packets ? window * eb : 0;
      tab[unit + abi::kUConsumersAt] = consumer;
      tab[unit + abi::kUConsumers] = readers_;
      // Device counts lower staged or packet phases only: nothing is pushed in place.
      tab[unit + abi::kUDestsAt] = 0;
      tab[unit + abi::kUDests] = 0;
      for (i64 r = 0; r < readers_; ++r) tab[consumer++] = reader(p, name, rank, r);
      window += round_up(part, align);
    }
  }
  // Groups that read staging first, then the ones that read only this rank's buffers.
  const i64 groups_at = consumer;
  tab[head + abi::kPhGroupsAt] = groups_at;
  i64 group = groups_at, source = groups_at + groups * abi::kGroupWords;
  for (int pass = 0; pass < 2; ++pass) {
    i64 dst_offset = 0;
    for (i64 j = 0; j < dst_slices; dst_offset += slice_size(n, p.dst, rank, j), ++j) {
      const Name name = slice_name(p.dst, rank, j);
      if (remote(p, w, name, rank) != (pass == 0)) continue;
      const i64 size = slice_size(n, p.dst, rank, j), step = chunk_step(size, p.chunk);
      const i64 pos = position(p.src, name);
      for (i64 lo = 0; lo < size; lo += step, group += abi::kGroupWords) {
        i64 far = 0;
        tab[group + abi::kGDst] = (dst_offset + lo) * eb;
        tab[group + abi::kGBytes] = chunk_at(size, p.chunk, lo) * eb;
        tab[group + abi::kGSourcesAt] = source;
        tab[group + abi::kGSources] = holders(p.src, w);
        for (i64 h = 0; h < holders(p.src, w); ++h, source += abi::kSourceWords) {
          const i64 s = holder_at(p.src, name, h);
          tab[source + abi::kSRank] = s;
          if (s == rank && !p.stage_local) {
            tab[source + abi::kSUnit] = -1;
            tab[source + abi::kSOffset] = (ix.offset(s, pos) + lo) * eb;
            continue;
          }
          ++far;
          // Chunk lo / step of the slice: every chunk before it is a full step.
          tab[source + abi::kSUnit] = ix.units(s, pos) + lo / step;
          tab[source + abi::kSOffset] = p.packets ? (ix.window(s, pos) + lo / step * round_up(step, align)) * eb : 0;
        }
        tab[group + abi::kGRemote] = far;
      }
    }
  }
  return source;
}

}  // namespace purlin::counts
