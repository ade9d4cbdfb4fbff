// What a kernel generated from an atom.kernel (purlin/cuda/codegen.py) calls:
// one device function per Atom op, reading the rank's units and groups from
// its tables. The generated code holds the control flow (roles as blockIdx
// ranges, loops, straight-line steps) and folds as template arguments what
// shapes the code: phase, mechanism, order, role size.
#pragma once

#include "purlin/datapath.cuh"

namespace purlin::cuda {

// Polls between looks at the clock and at the abort flag (host memory: too
// slow to read on every poll).
constexpr int kPollsPerCheck = 256;

// One rank's call as a block sees it. W: the world size; Shared: whether the
// block copies the tables into shared memory first (one round trip, next to
// the epoch's load; purlin/cuda/program.py decides by their size); System:
// whether its signals and packets are at system scope (else every rank runs
// on this GPU and GPU scope orders them).
template <int W, bool Shared, bool System = true>
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
  __device__ Kernel(const abi::Header& header, i64* shared, const abi::Peers<W>* peer_buffers = nullptr)
      : h(header), peers(peer_buffers) {
    const abi::BlockState s = h.blocks[blockIdx.x];
    if constexpr (Shared) {
      for (i64 i = threadIdx.x; i < h.table_words; i += blockDim.x) shared[i] = h.tables[i];
      tab = shared;
      __syncthreads();
    } else {
      tab = h.tables;
    }
    epoch = s.epoch;
    prev = s.prev;
  }

  __device__ i64 t(i64 i) const { return tab[i]; }
  __device__ i64 rank() const { return h.rank; }
  // Rank r's symmetric allocation, as this rank addresses it.
  __device__ char* sym(i64 r) const { return reinterpret_cast<char*>(t(abi::kGlobalWords + r)); }
  static constexpr i64 phase(int k) { return abi::kGlobalWords + W + i64(k) * abi::kPhaseWords; }
  __device__ char* source(i64 ph) const { return t(ph + abi::kPhSource) ? h.output : h.input; }
  // Rank r's source buffer of phase ph, and its output (direct phases: symmetric kernels only).
  __device__ char* source_of(i64 ph, i64 r) const { return t(ph + abi::kPhSource) ? peers->output[r] : peers->input[r]; }
  __device__ char* output_of(i64 r) const { return peers->output[r]; }
  __device__ i64 unit(i64 ph, u64 u) const { return t(ph + abi::kPhUnitsAt) + i64(u) * abi::kUnitWords; }
  __device__ i64 group(i64 ph, u64 g) const { return t(ph + abi::kPhGroupsAt) + i64(g) * abi::kGroupWords; }
  __device__ i64 source_at(i64 group, i64 j) const { return t(group + abi::kGSourcesAt) + j * abi::kSourceWords; }
  // Half `half` of buffer `ph` on rank r.
  __device__ char* half_of(i64 ph, i64 r, u64 half) const {
    return sym(r) + t(ph + abi::kPhBuffer) + i64(half) * t(ph + abi::kPhHalfBytes);
  }
  __device__ u64* signal(i64 r, i64 ph, int which, i64 slot) const {
    return reinterpret_cast<u64*>(sym(r) + t(ph + which)) + slot;
  }
};

__device__ __forceinline__ u64 max_u(u64 a, u64 b) { return a > b ? a : b; }
__device__ __forceinline__ u64 min_u(u64 a, u64 b) { return a < b ? a : b; }

__device__ __forceinline__ u64 atom_add_acq_rel_gpu(u64* p, u64 v) {
  u64 old;
  asm volatile("atom.acq_rel.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(p), "l"(v) : "memory");
  return old;
}
__device__ __forceinline__ u64 ld_acquire_gpu(const u64* p) {
  u64 v;
  asm volatile("ld.acquire.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

template <bool Release, class K>
__device__ __forceinline__ void store_signal(u64* slot, u64 value) {
  if constexpr (Release)
    st_release<K::system>(slot, value);
  else
    st_relaxed<K::system>(slot, value);
}

// Called by the one thread that gave up: the first record per rank wins, and
// every rank's waits stop at their next check.
__device__ __noinline__ void record_timeout(const abi::Header& h, u64 epoch, int site, int packets, int slot,
                                            i64 packet, u64 awaited, u64 seen) {
  if (atomicCAS(h.error_claim, 0u, 1u) == 0u) {
    volatile abi::ErrorRecord* e = h.error;
    e->site = site;
    e->rank = i32(h.rank);
    e->block = i32(blockIdx.x);
    e->packets = packets;
    e->slot = slot;
    e->packet = packet;
    e->awaited = awaited;
    e->seen = seen;
    e->epoch = epoch;
    __threadfence_system();
    e->valid = 1;
  }
  *h.abort = 1;
  __threadfence_system();
}

// Whether to give up polling: past the deadline or another wait gave up.
struct Deadline {
  u64 start = 0;
  int polls = 0;
  template <class K>
  __device__ bool expired(const K& k) {
    if (++polls % kPollsPerCheck) return false;
    const u64 now = globaltimer();
    if (start == 0) start = now;
    return *k.h.abort || now - start > k.h.timeout_ns;
  }
};

// One thread polls *slot until it reaches `need`; false when it gave up.
template <class K>
__device__ bool poll_signal(const K& k, const u64* slot, u64 need, int site, int which) {
  Deadline deadline;
  u64 seen;
  while ((seen = ld_relaxed<K::system>(slot)) < need) {
    if (deadline.expired(k)) {
      if (!*k.h.abort) record_timeout(k.h, k.epoch, site, 0, which, -1, need, seen);
      return false;
    }
  }
  return true;
}

// The threads share out every (slot, need, which) that `each` visits, each
// polling its own relaxed, then acquiring what it saw; the block continues
// together after the barrier, which orders every thread's later reads after
// all the acquires. `each` takes a visitor that returns false to stop.
template <bool Acquire, class K, class Each>
__device__ void block_wait(K& k, int site, Each each) {
  bool ok = true;
  const u64* last = nullptr;
  int polled = 0;
  unsigned item = 0;
  each([&](const u64* slot, u64 need, int which) {
    if (item++ % blockDim.x != threadIdx.x) return true;
    if (!poll_signal(k, slot, need, site, which)) return ok = false;
    last = slot;
    ++polled;
    return true;
  });
  // A relaxed read followed by a fence acquires what it observed.
  if (ok && Acquire && polled == 1) ld_acquire<K::system>(last);
  if (ok && Acquire && polled > 1) fence_acq_rel<K::system>();
  if (__syncthreads_or(!ok)) k.failed = true;
}

// Thread 0 of the role's last block to arrive at (site, iv) stores the role's
// signal, after every block finished what came before: earlier writes are
// ordered by __syncthreads within a block, by the acq_rel counter across
// blocks and by the release store towards the peer. Counters only grow.
template <int Blocks, class K>
__device__ bool last_arrival(const K& k, int site, u64 iv) {
  __syncthreads();
  if (threadIdx.x != 0) return false;
  if constexpr (Blocks == 1) {
    return true;
  } else {
    u64* c = k.h.arrivals + i64(site) * k.t(abi::kCounterStride) + i64(iv);
    return (atom_add_acq_rel_gpu(c, 1) + 1) % Blocks == 0;
  }
}

// Every block of the role waits until all of them got here (co-resident, so
// this cannot hang): for steps that read what other blocks wrote.
template <int Blocks, class K>
__device__ void role_barrier(K& k, int site, u64 iv) {
  __syncthreads();
  if constexpr (Blocks > 1) {
    bool ok = true;
    if (threadIdx.x == 0) {
      u64* c = k.h.arrivals + i64(site) * k.t(abi::kCounterStride) + i64(iv);
      const u64 target = (atom_add_acq_rel_gpu(c, 1) / Blocks + 1) * Blocks;
      Deadline deadline;
      u64 seen;
      while ((seen = ld_acquire_gpu(c)) < target) {
        if (deadline.expired(k)) {
          if (!*k.h.abort) record_timeout(k.h, k.epoch, site, 0, -1, -1, target, seen);
          ok = false;
          break;
        }
      }
    }
    if (__syncthreads_or(!ok)) k.failed = true;
  }
}

// -- signals -------------------------------------------------------------------

// atom.wait_free: before unit u goes to its slot (or the first unit to the
// half), its previous readers must be done with it; direct push: before it
// goes to its destinations, each of them granted this call.
template <abi::Moves Mv, bool Acquire, class K>
__device__ void wait_free(K& k, int phase, u64 u, u64 epoch, u64 prev, int site) {
  const i64 ph = K::phase(phase);
  const i64 slots = k.t(ph + abi::kPhSlots);
  if constexpr (Mv == abi::Moves::Push) {
    const i64 unit = k.unit(ph, u), at = k.t(unit + abi::kUDestsAt);
    block_wait<Acquire>(k, site, [&](auto&& visit) {
      for (i64 c = 0; c < k.t(unit + abi::kUDests); ++c) {
        const i64 d = k.t(at + 2 * c);
        if (d != k.rank() && !visit(k.signal(k.rank(), ph, abi::kPhFree, d), epoch + 1, int(d))) return;
      }
    });
  } else if (Mv == abi::Moves::Staging && i64(u) >= slots) {
    const i64 prior = k.unit(ph, u - slots);
    const u64 need = epoch + u - slots + 1;
    block_wait<Acquire>(k, site, [&](auto&& visit) {
      for (i64 c = 0; c < k.t(prior + abi::kUConsumers); ++c) {
        const i64 d = k.t(k.t(prior + abi::kUConsumersAt) + c);
        if (!visit(k.signal(k.rank(), ph, abi::kPhFree, d), need, int(d))) return;
      }
    });
  } else if (u == 0) {
    block_wait<Acquire>(k, site, [&](auto&& visit) {
      for (i64 d = 0; d < K::world; ++d)
        if (d != k.rank() && !visit(k.signal(k.rank(), ph, abi::kPhFree, d), prev, int(d))) return;
    });
  }
}

// atom.wait_ready of groups [lo, hi) (a loop whose body is one wait, or one
// wait): every remote source of each was announced, all polled at once.
template <bool Acquire, class K>
__device__ void wait_ready(K& k, int phase, u64 lo, u64 hi, u64 epoch, int site) {
  const i64 ph = K::phase(phase);
  block_wait<Acquire>(k, site, [&](auto&& visit) {
    for (u64 g = lo; g < hi; ++g) {
      const i64 group = k.group(ph, g);
      for (i64 j = 0; j < k.t(group + abi::kGSources); ++j) {
        const i64 s = k.source_at(group, j), unit = k.t(s + abi::kSUnit);
        if (unit < 0) continue;
        const i64 from = k.t(s + abi::kSRank);
        if (!visit(k.signal(k.rank(), ph, abi::kPhReady, from), epoch + u64(unit) + 1, int(from))) return;
      }
    }
  });
}

// atom.notify: `value` into slot [rank] of every consumer's ready signals.
template <int Blocks, bool Release, class K>
__device__ void notify(const K& k, int phase, u64 u, u64 value, int site) {
  if (!last_arrival<Blocks>(k, site, u)) return;
  const i64 ph = K::phase(phase), unit = k.unit(ph, u);
  for (i64 c = 0; c < k.t(unit + abi::kUConsumers); ++c)
    store_signal<Release, K>(k.signal(k.t(k.t(unit + abi::kUConsumersAt) + c), ph, abi::kPhReady, k.rank()), value);
}

// atom.ack: each remote source of group g may reuse the unit's slot.
template <int Blocks, bool Release, class K>
__device__ void ack(const K& k, int phase, u64 g, u64 epoch, int site) {
  if (!last_arrival<Blocks>(k, site, g)) return;
  const i64 ph = K::phase(phase), group = k.group(ph, g);
  for (i64 j = 0; j < k.t(group + abi::kGSources); ++j) {
    const i64 s = k.source_at(group, j), unit = k.t(s + abi::kSUnit);
    if (unit >= 0)
      store_signal<Release, K>(k.signal(k.t(s + abi::kSRank), ph, abi::kPhFree, k.rank()), epoch + u64(unit) + 1);
  }
}

// atom.finish: this rank is done reading the phase's half on every peer
// (direct pull: the buffers of the ranks it read from).
template <int Blocks, bool Release, abi::Moves Mv, class K>
__device__ void finish(const K& k, int phase, u64 value, int site) {
  if (!last_arrival<Blocks>(k, site, 0)) return;
  const i64 ph = K::phase(phase);
  if constexpr (Mv == abi::Moves::Pull) {
    for (i64 j = 0; j < k.t(ph + abi::kPhSenders); ++j)
      store_signal<Release, K>(k.signal(k.t(k.t(ph + abi::kPhSendersAt) + j), ph, abi::kPhFree, k.rank()), value);
  } else {
    for (i64 d = 0; d < K::world; ++d)
      if (d != k.rank()) store_signal<Release, K>(k.signal(d, ph, abi::kPhFree, k.rank()), value);
  }
}

// atom.grant: this rank's output may be written this call; one thread of the
// role tells every rank that pushes to it (nothing before it to order).
template <bool Release, class K>
__device__ void grant(const K& k, int phase, u64 value, Part part) {
  if (part.index != 0 || threadIdx.x != 0) return;
  const i64 ph = K::phase(phase);
  for (i64 j = 0; j < k.t(ph + abi::kPhSenders); ++j)
    store_signal<Release, K>(k.signal(k.t(k.t(ph + abi::kPhSendersAt) + j), ph, abi::kPhFree, k.rank()), value);
}

// atom.drain: every rank that reads this rank's units in place is done.
template <bool Acquire, class K>
__device__ void drain(K& k, int phase, u64 value, int site) {
  const i64 ph = K::phase(phase);
  block_wait<Acquire>(k, site, [&](auto&& visit) {
    for (i64 j = 0; j < k.t(ph + abi::kPhReceivers); ++j) {
      const i64 d = k.t(k.t(ph + abi::kPhReceiversAt) + j);
      if (!visit(k.signal(k.rank(), ph, abi::kPhFree, d), value, int(d))) return;
    }
  });
}

// -- data ------------------------------------------------------------------------

// atom.stage: unit u into this rank's slot u mod slots of `half`.
template <DType D, Mech M, int Width, class K>
__device__ void stage(const K& k, int phase, u64 u, u64 half, Part part, char* smem, int smem_bytes) {
  const i64 ph = K::phase(phase), unit = k.unit(ph, u);
  const i64 slot = i64(u) % k.t(ph + abi::kPhSlots);
  const Span dst{k.half_of(ph, k.rank(), half) + slot * k.t(ph + abi::kPhSlotBytes), -1};
  const Span src{k.source(ph) + k.t(unit + abi::kUSrc), -1};
  move<D, M, Width, false, false>(dst, &src, 1, 0, k.t(unit + abi::kUBytes), part, smem, smem_bytes, nullptr);
}

// Items [lo, hi) of a loop, item i made of count(i) pieces, as one flat range
// of pieces spread over the role's threads. Every thread runs the same loop,
// so that the waits of different items overlap instead of diverging by item.
// body(i, piece) returns false to stop.
template <class Count, class Body>
__device__ void spread(u64 lo, u64 hi, Part part, Count count, Body body) {
  i64 total = 0;
  for (u64 i = lo; i < hi; ++i) total += count(i);
  u64 item = lo;
  i64 base = 0, n = total > 0 ? count(lo) : 0;
  for (i64 f = part.first(); f < total; f += part.stride()) {
    while (f >= base + n) {
      base += n;
      n = count(++item);
    }
    if (!body(item, f - base)) return;
  }
}

// atom.put of units [lo, hi) (a loop whose body is one put, or one put): each
// unit as packets into this rank's region of every consumer's window, one
// (unit, consumer, packet) store per piece.
template <class K>
__device__ void put_units(const K& k, int phase, u64 lo, u64 hi, u64 half, u64 flag, Part part) {
  const i64 ph = K::phase(phase);
  char* const base_src = k.source(ph);
  const i64 region = k.t(ph + abi::kPhBuffer) + i64(half) * k.t(ph + abi::kPhHalfBytes) +
                     k.rank() * k.t(ph + abi::kPhSlotBytes);
  auto packets = [&](i64 unit) { return (k.t(unit + abi::kUBytes) + kPacketDataBytes - 1) / kPacketDataBytes; };
  spread(
      lo, hi, part, [&](u64 u) { const i64 unit = k.unit(ph, u); return packets(unit) * k.t(unit + abi::kUConsumers); },
      [&](u64 u, i64 piece) {
        const i64 unit = k.unit(ph, u), n = packets(unit);
        const u32 c = u32(piece) / u32(n), pk = u32(piece) - c * u32(n);
        const char* src = base_src + k.t(unit + abi::kUSrc);
        const i64 bytes = k.t(unit + abi::kUBytes), b = i64(pk) * kPacketDataBytes;
        const u64 data = b + kPacketDataBytes <= bytes && reinterpret_cast<u64>(src) % kPacketDataBytes == 0
                             ? *reinterpret_cast<const u64*>(src + b)
                             : load_bytes(src + b, bytes - b);
        char* line = k.sym(k.t(k.t(unit + abi::kUConsumersAt) + c)) + region +
                     (k.t(unit + abi::kUWindow) / kPacketDataBytes + pk) * kPacketBytes;
        st_packet<K::system>(line, data, flag);
        return true;
      });
}

// The region of this rank's window where source s of a group lands, as a
// packet span (data byte offsets).
template <class K>
__device__ Span window_span(const K& k, i64 ph, i64 s, u64 half) {
  return {k.half_of(ph, k.rank(), half) + k.t(s + abi::kSRank) * k.t(ph + abi::kPhSlotBytes),
          k.t(s + abi::kSOffset)};
}

// atom.wait_packets on its own: every block polls every packet of the group's
// remote sources, so that its later reads follow its own look at the flags.
template <bool Acquire, class K>
__device__ void wait_packets(K& k, int phase, u64 g, u64 epoch, Part part, int site) {
  const i64 ph = K::phase(phase), group = k.group(ph, g);
  const i64 packets = (k.t(group + abi::kGBytes) + kPacketDataBytes - 1) / kPacketDataBytes;
  const u64 need = epoch + 1;
  bool ok = true;
  for (i64 j = 0; j < k.t(group + abi::kGSources) && ok; ++j) {
    const i64 s = k.source_at(group, j);
    if (k.t(s + abi::kSUnit) < 0) continue;
    const Span w = window_span(k, ph, s, epoch & 1);
    for (i64 pk = threadIdx.x; pk < packets && ok; pk += blockDim.x) {
      const char* line = w.p + (w.packet_byte / kPacketDataBytes + pk) * kPacketBytes;
      u64 data, flag;
      Deadline deadline;
      for (ld_packet<K::system>(line, data, flag); flag < need; ld_packet<K::system>(line, data, flag)) {
        if (deadline.expired(k)) {
          if (!*k.h.abort) record_timeout(k.h, k.epoch, site, 1, int(k.t(s + abi::kSRank)), pk, need, flag);
          ok = false;
          break;
        }
      }
    }
  }
  // The block observed the flags before the barrier; one fence orders its
  // later reads of the data (L1 is per SM).
  if (__syncthreads_or(!ok)) {
    k.failed = true;
    return;
  }
  if (Acquire) {
    if (threadIdx.x == 0) fence_acq_rel<K::system>();
    __syncthreads();
  }
}

// The sources of group `group` into `srcs`: own buffer, peers' staging,
// packets, or (direct pull) the source ranks' own buffers.
template <abi::Moves Mv, class K>
__device__ void group_sources(const K& k, i64 ph, i64 group, u64 half, Span* srcs) {
  const int n = int(k.t(group + abi::kGSources));
  for (int j = threadIdx.x; j < n; j += blockDim.x) {
    const i64 s = k.source_at(group, j);
    if (k.t(s + abi::kSUnit) < 0)
      srcs[j] = {k.source(ph) + k.t(s + abi::kSOffset), -1};
    else if constexpr (Mv == abi::Moves::Packets)
      srcs[j] = window_span(k, ph, s, half);
    else if constexpr (Mv == abi::Moves::Pull)
      srcs[j] = {k.source_of(ph, k.t(s + abi::kSRank)) + k.t(s + abi::kSOffset), -1};
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
  const i64 ph = K::phase(phase), group = k.group(ph, g);
  const int n = int(k.t(group + abi::kGSources));
  __syncthreads();  // the previous step is done with the spans
  group_sources<Mv>(k, ph, group, half, srcs);
  if (threadIdx.x == 0) dst = {k.h.output + k.t(group + abi::kGDst), -1};
  __syncthreads();
  char* mc = nullptr;
  if constexpr (M == Mech::Multimem) {
    // Every source sits at the same slot of the symmetric buffer (stage_local).
    const i64 s = k.source_at(group, 0);
    mc = reinterpret_cast<char*>(k.t(ph + abi::kPhMulticast)) + i64(half) * k.t(ph + abi::kPhHalfBytes) +
         k.t(s + abi::kSUnit) % k.t(ph + abi::kPhSlots) * k.t(ph + abi::kPhSlotBytes);
  }
  // A slice copied onto itself (the rank's input is its own output slice) is left alone.
  if (!Reduce && !Packets && dst.p == srcs[0].p) return;
  move<D, M, Width, Reduce, Packets>(dst, srcs, n, op, k.t(group + abi::kGBytes), part, smem, smem_bytes, mc);
}

// The destinations of unit `unit` of a direct push phase into `dsts`, but
// where the unit would be copied onto itself; returns how many.
template <class K>
__device__ int unit_destinations(const K& k, i64 unit, const char* src, Span* dsts, int first) {
  __shared__ int count;
  if (threadIdx.x == 0) {
    int n = first;
    const i64 at = k.t(unit + abi::kUDestsAt);
    for (i64 c = 0; c < k.t(unit + abi::kUDests); ++c) {
      char* p = k.output_of(k.t(at + 2 * c)) + k.t(at + 2 * c + 1);
      if (p != src) dsts[n++] = {p, -1};
    }
    count = n;
  }
  __syncthreads();
  return count;
}

// atom.push of unit u: from this rank's source buffer into the output of
// every destination, all written from one read of the unit.
template <DType D, Mech M, int Width, class K>
__device__ void push(const K& k, int phase, u64 u, Part part, char* smem, int smem_bytes) {
  __shared__ Span dsts[K::world];
  __shared__ Span src;
  const i64 ph = K::phase(phase), unit = k.unit(ph, u);
  __syncthreads();  // the previous step is done with the spans
  if (threadIdx.x == 0) src = {k.source(ph) + k.t(unit + abi::kUSrc), -1};
  __syncthreads();
  const int n = unit_destinations(k, unit, src.p, dsts, 0);
  move_to_all<D, M, Width, false>(dsts, n, &src, 1, 0, k.t(unit + abi::kUBytes), part, smem, smem_bytes);
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
  const i64 ph = K::phase(phase), group = k.group(ph, g);
  const i64 unit = k.unit(K::phase(fwd), g);
  __syncthreads();  // the previous step is done with the spans
  group_sources<abi::Moves::Pull>(k, ph, group, 0, srcs);
  if (threadIdx.x == 0) dsts[0] = {k.h.output + k.t(group + abi::kGDst), -1};
  __syncthreads();
  const int n = unit_destinations(k, unit, dsts[0].p, dsts, 1);
  move_to_all<D, M, Width, true>(dsts, n, srcs, int(k.t(group + abi::kGSources)), op, k.t(group + abi::kGBytes),
                                 part, smem, smem_bytes);
}

// Packet pk of group `group` from its n sources, combined in source order
// and stored; the remote sources are polled kBatch at a time, their loads in
// flight together.
template <DType D, bool Reduce, class K>
__device__ void consume_packet(K& k, i64 ph, i64 group, i64 pk, char* own, u64 need, int op, int site) {
  constexpr int E = kPacketDataBytes / Elem<D>::bytes;
  constexpr int kBatch = K::world < 8 ? K::world : 8;
  const i64 bytes = k.t(group + abi::kGBytes), n = k.t(group + abi::kGSources);
  const i64 b = pk * kPacketDataBytes, nb = min(i64(kPacketDataBytes), bytes - b);
  const i64 region_bytes = k.t(ph + abi::kPhSlotBytes);
  AccT<D> acc[E];
  u64 word = 0;
  for (i64 j0 = 0; j0 < n; j0 += kBatch) {
    u64 data[kBatch];
    const char* line[kBatch];
    bool pending[kBatch];
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      pending[q] = false;
      data[q] = 0;
      line[q] = nullptr;
      if (j0 + q >= n) continue;
      const i64 s = k.source_at(group, j0 + q), off = k.t(s + abi::kSOffset);
      if (k.t(s + abi::kSUnit) < 0) {
        const char* p = k.source(ph) + off + b;
        data[q] = nb == kPacketDataBytes && reinterpret_cast<u64>(p) % kPacketDataBytes == 0
                      ? *reinterpret_cast<const u64*>(p)
                      : load_bytes(p, nb);
      } else {
        line[q] = own + k.t(s + abi::kSRank) * region_bytes + (off / kPacketDataBytes + pk) * kPacketBytes;
        pending[q] = true;
      }
    }
    Deadline deadline;
    u64 flag[kBatch] = {};
    for (bool waiting = true; waiting;) {
#pragma unroll
      for (int q = 0; q < kBatch; ++q)
        if (pending[q]) ld_packet<K::system>(line[q], data[q], flag[q]);
      waiting = false;
#pragma unroll
      for (int q = 0; q < kBatch; ++q) {
        if (pending[q] && flag[q] >= need) pending[q] = false;
        waiting |= pending[q];
      }
      if (waiting && deadline.expired(k)) {
        int late = 0;  // unrolled, so that the arrays stay in registers
        u64 seen = 0;
#pragma unroll
        for (int q = kBatch - 1; q >= 0; --q)
          if (pending[q]) late = q, seen = flag[q];
        if (!*k.h.abort)
          record_timeout(k.h, k.epoch, site, 1, int(k.t(k.source_at(group, j0 + late) + abi::kSRank)), pk, need,
                         seen);
        k.failed = true;
        waiting = false;
      }
    }
#pragma unroll
    for (int q = 0; q < kBatch; ++q) {
      if (j0 + q >= n) continue;
      if constexpr (Reduce) {
        const Word<8> w{make_uint2(u32(data[q]), u32(data[q] >> 32))};
        if (j0 + q == 0) {
          unpack<D, 8>(w, acc);
        } else {
          AccT<D> x[E];
          unpack<D, 8>(w, x);
          ArchCombine::apply(op, acc, x);
        }
      } else {
        word = data[q];
      }
    }
  }
  if constexpr (Reduce) {
    finish_average(op, acc, n);
    const Word<8> w = pack<D, 8>(acc);
    word = u64(w.v.x) | u64(w.v.y) << 32;
  }
  char* dst = k.h.output + k.t(group + abi::kGDst) + b;
  // A slice copied onto itself (the rank's input is its own output slice) is left alone.
  if (!Reduce && n == 1 && k.t(k.source_at(group, 0) + abi::kSUnit) < 0 &&
      k.source(ph) + k.t(k.source_at(group, 0) + abi::kSOffset) + b == dst)
    return;
  if (nb == kPacketDataBytes && reinterpret_cast<u64>(dst) % kPacketDataBytes == 0)
    *reinterpret_cast<u64*>(dst) = word;
  else
    store_bytes(dst, word, nb);
}

// atom.wait_packets followed by the copy or reduce of the same group, fused,
// for groups [lo, hi) (a loop whose body is that pair, or one pair): the
// (group, packet) pairs are spread over the role's threads; each thread polls
// its packets and combines the data it polled in registers (no barrier, no
// fence: a packet's data comes with its flag).
template <DType D, bool Reduce, class K>
__device__ void poll_consume(K& k, int phase, int op, u64 lo, u64 hi, u64 half, u64 epoch, Part part, int site) {
  const i64 ph = K::phase(phase);
  char* const own = k.half_of(ph, k.rank(), half);
  spread(
      lo, hi, part,
      [&](u64 g) { return (k.t(k.group(ph, g) + abi::kGBytes) + kPacketDataBytes - 1) / kPacketDataBytes; },
      [&](u64 g, i64 pk) {
        consume_packet<D, Reduce>(k, ph, k.group(ph, g), pk, own, epoch + 1, op, site);
        return !k.failed;
      });
}

// snac.advance: each block moves its own epochs on, unless a wait gave up
// (the host then refuses further calls).
template <class K>
__device__ void advance(const K& k, u64 amount) {
  if (__syncthreads_or(k.failed)) return;
  if (threadIdx.x == 0) k.h.blocks[blockIdx.x] = {k.epoch + amount, k.epoch};
}

}  // namespace purlin::cuda
