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

struct Slice {
  Name name;
  i64 offset, size;
};

PURLIN_HD inline i64 slices_of(i64 kind, i64 world) { return kind == i64(abi::LayoutKind::Packed) ? 1 : world; }

// Slice k of `rank`'s buffer, in name order.
PURLIN_HD inline Slice slice(const Counts& n, i64 kind, i64 rank, i64 k) {
  Slice s{{0, -1}, 0, 0};
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Packed:
      s = {{rank, -1}, 0, n.at(rank, 0)};
      break;
    case abi::LayoutKind::Scattered:
      s = {{k, -1}, 0, n.at(k, 0)};
      for (i64 i = 0; i < k; ++i) s.offset += n.at(i, 0);
      break;
    case abi::LayoutKind::Addressed:
      s = {{rank, k}, 0, n.at(rank, k)};
      for (i64 j = 0; j < k; ++j) s.offset += n.at(rank, j);
      break;
    case abi::LayoutKind::Transposed:
      s = {{k, rank}, 0, n.at(k, rank)};
      for (i64 i = 0; i < k; ++i) s.offset += n.at(i, rank);
      break;
  }
  return s;
}

// How many ranks hold `name`, the h-th of them (in rank order), and the
// position of the name among that rank's slices.
PURLIN_HD inline i64 holders(i64 kind, i64 world) { return kind == i64(abi::LayoutKind::Scattered) ? world : 1; }
PURLIN_HD inline i64 holder(i64 kind, Name name, i64 h) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Scattered: return h;
    case abi::LayoutKind::Transposed: return name.b;
    default: return name.a;
  }
}
PURLIN_HD inline i64 position(i64 kind, Name name) {
  switch (abi::LayoutKind(kind)) {
    case abi::LayoutKind::Packed: return 0;
    case abi::LayoutKind::Addressed: return name.b;
    default: return name.a;
  }
}

PURLIN_HD inline i64 chunks(i64 size, i64 chunk) { return size == 0 ? 0 : chunk > 0 ? (size + chunk - 1) / chunk : 1; }
PURLIN_HD inline i64 round_up(i64 n, i64 align) { return (n + align - 1) / align * align; }

// Ranks that read `src_rank`'s slice of `name` from symmetric memory, and the r-th of them.
PURLIN_HD inline i64 readers(const PhaseShape& p, i64 world, Name name, i64 src_rank) {
  i64 n = 0;
  for (i64 h = 0; h < holders(p.dst, world); ++h) n += holder(p.dst, name, h) != src_rank || p.stage_local;
  return n;
}
PURLIN_HD inline i64 reader(const PhaseShape& p, i64 world, Name name, i64 src_rank, i64 r) {
  for (i64 h = 0; h < holders(p.dst, world); ++h) {
    const i64 d = holder(p.dst, name, h);
    if ((d != src_rank || p.stage_local) && r-- == 0) return d;
  }
  return -1;
}

// Units of `rank` made from its first `stop` source slices, and their
// packet-aligned elements (where the next unit lands in the window).
struct Position {
  i64 units = 0, window = 0;
};
PURLIN_HD inline Position units_before(const Counts& n, const PhaseShape& p, i64 rank, i64 stop, i64 align) {
  Position at;
  const i64 step_full = p.chunk;
  for (i64 k = 0; k < stop; ++k) {
    const Slice s = slice(n, p.src, rank, k);
    if (!readers(p, n.world, s.name, rank) && !p.keep_unread) continue;
    const i64 m = chunks(s.size, step_full);
    at.units += m;
    const i64 step = step_full > 0 ? step_full : s.size;
    // Every chunk but the last is a full step.
    if (m > 0) at.window += (m - 1) * round_up(step, align) + round_up(s.size - (m - 1) * step, align);
  }
  return at;
}

// Whether `rank`'s groups of `name` read a source from symmetric memory.
PURLIN_HD inline bool remote(const Counts& n, const PhaseShape& p, Name name, i64 rank) {
  for (i64 h = 0; h < holders(p.src, n.world); ++h)
    if (holder(p.src, name, h) != rank || p.stage_local) return true;
  return false;
}

// Rank `rank`'s extents of the phase's source and destination layouts.
PURLIN_HD inline i64 extent(const Counts& n, i64 kind, i64 rank) {
  i64 end = 0;
  for (i64 k = 0; k < slices_of(kind, n.world); ++k) {
    const Slice s = slice(n, kind, rank, k);
    end = s.offset + s.size > end ? s.offset + s.size : end;
  }
  return end;
}

// The largest unit of `rank`.
PURLIN_HD inline i64 largest_unit(const Counts& n, const PhaseShape& p, i64 rank) {
  i64 most = 0;
  for (i64 k = 0; k < slices_of(p.src, n.world); ++k) {
    const Slice s = slice(n, p.src, rank, k);
    const i64 size = p.chunk > 0 && s.size > p.chunk ? p.chunk : s.size;
    if ((readers(p, n.world, s.name, rank) || p.keep_unread) && size > most) most = size;
  }
  return most;
}

// Checks the counts of every rank against the buffers the kernel was built
// for; `buffer_elems[k]`: phase k's staging slot, or a source's region of its
// packet window.
PURLIN_HD inline Problem check(const Counts& n, const PhaseShape* phases, i64 count, i64 input_elems,
                               i64 output_elems, const i64* buffer_elems, i64 align) {
  for (i64 r = 0; r < n.world; ++r)
    for (i64 j = 0; j < n.row; ++j)
      if (n.c[r * n.row + j] < 0) return {i64(abi::CountsError::Negative), r, n.c[r * n.row + j], 0};
  for (i64 k = 0; k < count; ++k) {
    const PhaseShape& ph = phases[k];
    for (i64 r = 0; r < n.world; ++r) {
      const i64 src = extent(n, ph.src, r), dst = extent(n, ph.dst, r);
      const i64 src_cap = ph.from_output ? output_elems : input_elems;
      if (src > src_cap) return {i64(ph.from_output ? abi::CountsError::Output : abi::CountsError::Input), r, src,
                                 src_cap};
      if (dst > output_elems) return {i64(abi::CountsError::Output), r, dst, output_elems};
      const i64 need = ph.packets ? units_before(n, ph, r, slices_of(ph.src, n.world), align).window
                                  : largest_unit(n, ph, r);
      if (need > buffer_elems[k]) return {i64(abi::CountsError::Buffer), r, need, buffer_elems[k]};
    }
  }
  return {};
}

// Writes phase k's counts-dependent header fields and its records into
// `tab` from word `at` on; returns the word after them, or -1 when they
// would pass `capacity`.
PURLIN_HD inline i64 build_phase(const Counts& n, const PhaseShape& p, i64 k, i64 rank, i64 eb, i64 align, i64* tab,
                                 i64 at, i64 capacity) {
  const i64 w = n.world, head = abi::kGlobalWords + w + k * abi::kPhaseWords;
  const i64 src_slices = slices_of(p.src, w), dst_slices = slices_of(p.dst, w);
  i64 most = 0;
  for (i64 r = 0; r < w; ++r) {
    const i64 u = units_before(n, p, r, src_slices, align).units;
    most = u > most ? u : most;
  }
  const i64 units = units_before(n, p, rank, src_slices, align).units;
  i64 groups = 0, staged = 0, consumer_words = 0, source_words = 0;
  for (i64 j = 0; j < dst_slices; ++j) {
    const Slice d = slice(n, p.dst, rank, j);
    const i64 m = chunks(d.size, p.chunk);
    groups += m;
    staged += remote(n, p, d.name, rank) ? m : 0;
    source_words += m * holders(p.src, w) * abi::kSourceWords;
  }
  for (i64 j = 0; j < src_slices; ++j) {
    const Slice s = slice(n, p.src, rank, j);
    const i64 readers_ = readers(p, w, s.name, rank);
    if (readers_ || p.keep_unread) consumer_words += chunks(s.size, p.chunk) * readers_;
  }
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
    const Slice s = slice(n, p.src, rank, j);
    const i64 readers_ = readers(p, w, s.name, rank);
    if (!readers_ && !p.keep_unread) continue;
    const i64 step = p.chunk > 0 ? p.chunk : s.size;
    i64 window = units_before(n, p, rank, j, align).window;
    for (i64 lo = 0; lo < s.size; lo += step, unit += abi::kUnitWords) {
      const i64 size = s.size - lo < step ? s.size - lo : step;
      tab[unit + abi::kUSrc] = (s.offset + lo) * eb;
      tab[unit + abi::kUBytes] = size * eb;
      tab[unit + abi::kUWindow] = p.packets ? window * eb : 0;
      tab[unit + abi::kUConsumersAt] = consumer;
      tab[unit + abi::kUConsumers] = readers_;
      for (i64 r = 0; r < readers_; ++r) tab[consumer++] = reader(p, w, s.name, rank, r);
      window += round_up(size, align);
    }
  }
  // Groups that read staging first, then the ones that read only this rank's buffers.
  const i64 groups_at = consumer;
  tab[head + abi::kPhGroupsAt] = groups_at;
  i64 group = groups_at, source = groups_at + groups * abi::kGroupWords;
  for (int pass = 0; pass < 2; ++pass) {
    for (i64 j = 0; j < dst_slices; ++j) {
      const Slice d = slice(n, p.dst, rank, j);
      if (remote(n, p, d.name, rank) != (pass == 0)) continue;
      const i64 step = p.chunk > 0 ? p.chunk : d.size;
      for (i64 lo = 0; lo < d.size; lo += step, group += abi::kGroupWords) {
        const i64 size = d.size - lo < step ? d.size - lo : step;
        i64 far = 0;
        tab[group + abi::kGDst] = (d.offset + lo) * eb;
        tab[group + abi::kGBytes] = size * eb;
        tab[group + abi::kGSourcesAt] = source;
        tab[group + abi::kGSources] = holders(p.src, w);
        for (i64 h = 0; h < holders(p.src, w); ++h, source += abi::kSourceWords) {
          const i64 s = holder(p.src, d.name, h);
          const i64 pos = position(p.src, d.name);
          const Slice from = slice(n, p.src, s, pos);
          tab[source + abi::kSRank] = s;
          if (s == rank && !p.stage_local) {
            tab[source + abi::kSUnit] = -1;
            tab[source + abi::kSOffset] = (from.offset + lo) * eb;
            continue;
          }
          ++far;
          // Chunk lo / step of the slice: every chunk before it is a full step.
          const Position before = units_before(n, p, s, pos, align);
          tab[source + abi::kSUnit] = before.units + lo / step;
          tab[source + abi::kSOffset] = p.packets ? (before.window + lo / step * round_up(step, align)) * eb : 0;
        }
        tab[group + abi::kGRemote] = far;
      }
    }
  }
  return source;
}

}  // namespace purlin::counts
