// The staged protocol: data moves with the datapath, then a signal store
// (release, or relaxed where a fence orders it) tells the peer, whose wait
// polls the signal. Staging goes through slots of the senders' symmetric
// buffers; direct phases (symmetric kernels) push into or pull from the
// peers' own buffers, with the same free/ready signals around them.
#pragma once

#include "purlin/datapath.cuh"
#include "purlin/order.cuh"

namespace purlin::cuda {

// -- signals ------------------------------------------------------------------

// atom.wait_free: before unit u goes to its slot (or the first unit to the
// half), its previous readers must be done with it; direct push: before it
// goes to its destinations, each of them granted this call.
template <abi::Moves Mv, bool Acquire, class K>
__device__ void wait_free(K& k, int phase, u64 u, u64 epoch, u64 prev, int site) {
  const int ph = K::phase(phase);
  const i64 slots = k.t(ph + abi::kPhSlots);
  if constexpr (Mv == abi::Moves::Push) {
    const int unit = k.unit(ph, u), at = int(k.t(unit + abi::kUDestsAt));
    block_wait<Acquire>(k, site, [&](auto&& visit) {
      for (i64 c = 0; c < k.t(unit + abi::kUDests); ++c) {
        const i64 d = k.t(at + 2 * c);
        if (d != k.rank() && !visit(k.signal(k.rank(), ph, abi::kPhFree, d), epoch + 1, int(d))) return;
      }
    });
  } else if (Mv == abi::Moves::Staging && i64(u) >= slots) {
    const int prior = k.unit(ph, u - slots);
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
// Counted (the notifying role's blocks, tables.py counted_ready): each
// source's slot [rank x max units + unit] holds how many of its blocks
// announced that unit in all calls so far; `advance` is what a call moves the
// epoch on by, so this is call epoch / advance + 1.
template <bool Acquire, int Counted = 0, class K>
__device__ void wait_ready(K& k, int phase, u64 lo, u64 hi, u64 epoch, int site, u64 advance = 1) {
  const int ph = K::phase(phase);
  const u64 counted = Counted ? u64(Counted) * (epoch / advance + 1) : 0;
  block_wait<Acquire>(k, site, [&](auto&& visit) {
    for (u64 g = lo; g < hi; ++g) {
      const int group = k.group(ph, g);
      for (i64 j = 0; j < k.t(group + abi::kGSources); ++j) {
        const int s = k.source_at(group, j), unit = int(k.t(s + abi::kSUnit));
        if (unit < 0) continue;
        const i64 from = k.t(s + abi::kSRank);
        const bool ok = Counted ? visit(k.signal(k.rank(), ph, abi::kPhReady, from * k.t(ph + abi::kPhMaxUnits) + unit),
                                        counted, int(from))
                                : visit(k.signal(k.rank(), ph, abi::kPhReady, from), epoch + u64(unit) + 1, int(from));
        if (!ok) return;
      }
    }
  });
}

// atom.notify: `value` into slot [rank] of every consumer's ready signals,
// by the role's last block to arrive (see last_arrival). Counted: each block
// adds one to slot [rank x max units + u] of every consumer once its threads
// are done (see wait_ready): no block waits for an atomic's result.
template <int Blocks, bool Release, bool Counted = false, class K>
__device__ void notify(const K& k, int phase, u64 u, u64 value, int site) {
  if constexpr (Counted) {
    __syncthreads();
    if (threadIdx.x != 0) return;
    const int ph = K::phase(phase), unit = k.unit(ph, u);
    const i64 slot = k.rank() * k.t(ph + abi::kPhMaxUnits) + i64(u);
    if constexpr (Release) fence_acq_rel<K::system>();
    for (i64 c = 0; c < k.t(unit + abi::kUConsumers); ++c)
      red_add_relaxed<K::system>(k.signal(k.t(k.t(unit + abi::kUConsumersAt) + c), ph, abi::kPhReady, slot));
    return;
  }
  if (!last_arrival<Blocks>(k, site, u)) return;
  const int ph = K::phase(phase), unit = k.unit(ph, u);
  store_signals<Release, K>([&](auto&& store) {
    for (i64 c = 0; c < k.t(unit + abi::kUConsumers); ++c)
      store(k.signal(k.t(k.t(unit + abi::kUConsumersAt) + c), ph, abi::kPhReady, k.rank()), value);
  });
}

// atom.ack: each remote source of group g may reuse the unit's slot.
template <int Blocks, bool Release, class K>
__device__ void ack(const K& k, int phase, u64 g, u64 epoch, int site) {
  if (!last_arrival<Blocks>(k, site, g)) return;
  const int ph = K::phase(phase), group = k.group(ph, g);
  store_signals<Release, K>([&](auto&& store) {
    for (i64 j = 0; j < k.t(group + abi::kGSources); ++j) {
      const int s = k.source_at(group, j), unit = int(k.t(s + abi::kSUnit));
      if (unit >= 0) store(k.signal(k.t(s + abi::kSRank), ph, abi::kPhFree, k.rank()), epoch + u64(unit) + 1);
    }
  });
}

// `value` into slot [rank] of the free signals of phase ph on every rank that
// sends to this one.
template <bool Release, class K>
__device__ void free_senders(const K& k, int ph, u64 value) {
  store_signals<Release, K>([&](auto&& store) {
    for (i64 j = 0; j < k.t(ph + abi::kPhSenders); ++j)
      store(k.signal(k.t(k.t(ph + abi::kPhSendersAt) + j), ph, abi::kPhFree, k.rank()), value);
  });
}

// atom.finish: this rank is done reading the phase's half on every peer
// (direct pull: the buffers of the ranks it read from).
template <int Blocks, bool Release, abi::Moves Mv, class K>
__device__ void finish(const K& k, int phase, u64 value, int site) {
  if (!last_arrival<Blocks>(k, site, 0)) return;
  const int ph = K::phase(phase);
  if constexpr (Mv == abi::Moves::Pull) {
    free_senders<Release>(k, ph, value);
  } else {
    store_signals<Release, K>([&](auto&& store) {
      for (i64 d = 0; d < K::world; ++d)
        if (d != k.rank()) store(k.signal(d, ph, abi::kPhFree, k.rank()), value);
    });
  }
}

// atom.grant: this rank's output may be written this call; one thread of the
// role tells every rank that pushes to it (nothing before it to order).
template <bool Release, class K>
__device__ void grant(const K& k, int phase, u64 value, Part part) {
  if (part.index != 0 || threadIdx.x != 0) return;
  free_senders<Release>(k, K::phase(phase), value);
}

// atom.drain: every rank that reads this rank's units in place is done.
template <bool Acquire, class K>
__device__ void drain(K& k, int phase, u64 value, int site) {
  const int ph = K::phase(phase);
  block_wait<Acquire>(k, site, [&](auto&& visit) {
    for (i64 j = 0; j < k.t(ph + abi::kPhReceivers); ++j) {
      const i64 d = k.t(k.t(ph + abi::kPhReceiversAt) + j);
      if (!visit(k.signal(k.rank(), ph, abi::kPhFree, d), value, int(d))) return;
    }
  });
}

// -- data ---------------------------------------------------------------------

// atom.stage: unit u into this rank's slot u mod slots of `half`.
template <DType D, Mech M, int Width, class K>
__device__ void stage(const K& k, int phase, u64 u, u64 half, Part part, char* smem, int smem_bytes) {
  const int ph = K::phase(phase), unit = k.unit(ph, u);
  const i64 slot = i64(u) % k.t(ph + abi::kPhSlots);
  const Span dst{k.half_of(ph, k.rank(), half) + slot * k.t(ph + abi::kPhSlotBytes), -1};
  const Span src{k.source(ph) + k.t(unit + abi::kUSrc), -1};
  move<D, M, Width, false, false>(dst, &src, 1, 0, k.t(unit + abi::kUBytes), part, smem, smem_bytes, nullptr);
}

// The destinations of unit `unit` of a direct push phase into `dsts`, but
// where the unit would be copied onto itself, or into a peer whose buffers
// sit elsewhere than this rank's (same_offsets: the call fails); returns how
// many.
template <class K>
__device__ int unit_destinations(const K& k, int unit, const char* src, Span* dsts, int first) {
  __shared__ int count;
  if (threadIdx.x == 0) {
    int n = first;
    const i64 at = k.t(unit + abi::kUDestsAt);
    for (i64 c = 0; c < k.t(unit + abi::kUDests); ++c) {
      char* p = k.output_of(k.t(at + 2 * c)) + k.t(at + 2 * c + 1);
      if (p != src && same_offsets(k, k.t(at + 2 * c))) dsts[n++] = {p, -1};
    }
    count = n;
  }
  __syncthreads();
  return count;
}

// atom.push of unit u: from this rank's source buffer into the output of
// every destination, all written from one read of the unit (Loads: its
// `loads`, in whole rounds).
template <DType D, Mech M, int Width, int Loads = kCopyUnroll, class K>
__device__ void push(const K& k, int phase, u64 u, Part part, char* smem, int smem_bytes) {
  __shared__ Span dsts[K::world];
  __shared__ Span src;
  const int ph = K::phase(phase), unit = k.unit(ph, u);
  __syncthreads();  // the previous step is done with the spans
  if (threadIdx.x == 0) src = {k.source(ph) + k.t(unit + abi::kUSrc), -1};
  __syncthreads();
  const int n = unit_destinations(k, unit, src.p, dsts, 0);
  move_to_all<D, M, Width, false, Loads>(dsts, n, &src, 1, 0, k.t(unit + abi::kUBytes), part, smem, smem_bytes);
}

}  // namespace purlin::cuda
