// Memory orders and polling, shared by both protocols: loads, stores and
// fences at the scope the kernel's ranks need, the deadline every wait
// polls under (and the record of the wait that gave up), a block's wait on a
// set of signals, and the arrival counters of a role's blocks.
#pragma once

#include "purlin/abi.h"

namespace purlin::cuda {

// Sys: system scope (peers on other GPUs); else GPU scope, enough where every
// rank of the kernel runs on this GPU. The instruction `op` is `op.sys` or
// `op.gpu` followed by `rest`, with the asm operands after it.
#define PURLIN_SCOPED_ASM(Sys, op, rest, ...) \
  do {                                        \
    if constexpr (Sys)                        \
      asm volatile(op ".sys" rest __VA_ARGS__); \
    else                                      \
      asm volatile(op ".gpu" rest __VA_ARGS__); \
  } while (0)

template <bool Sys>
__device__ __forceinline__ u64 ld_relaxed(const u64* p) {
  u64 v;
  PURLIN_SCOPED_ASM(Sys, "ld.relaxed", ".global.u64 %0, [%1];", : "=l"(v) : "l"(p) : "memory");
  return v;
}
template <bool Sys>
__device__ __forceinline__ void st_relaxed(u64* p, u64 v) {
  PURLIN_SCOPED_ASM(Sys, "st.relaxed", ".global.u64 [%0], %1;", ::"l"(p), "l"(v) : "memory");
}
template <bool Sys>
__device__ __forceinline__ void st_release(u64* p, u64 v) {
  PURLIN_SCOPED_ASM(Sys, "st.release", ".global.u64 [%0], %1;", ::"l"(p), "l"(v) : "memory");
}
// Adds one to *p without waiting for the result (counted ready signals).
template <bool Sys>
__device__ __forceinline__ void red_add_relaxed(u64* p) {
  PURLIN_SCOPED_ASM(Sys, "red.relaxed", ".global.add.u64 [%0], 1;", ::"l"(p) : "memory");
}
// After relaxed polling: re-reading the slot with acquire orders the reads after it.
template <bool Sys>
__device__ __forceinline__ u64 ld_acquire(const u64* p) {
  u64 v;
  PURLIN_SCOPED_ASM(Sys, "ld.acquire", ".global.u64 %0, [%1];", : "=l"(v) : "l"(p) : "memory");
  return v;
}
template <bool Sys>
__device__ __forceinline__ void fence_acq_rel() {
  PURLIN_SCOPED_ASM(Sys, "fence.acq_rel", ";", ::: "memory");
}

__device__ __forceinline__ u64 globaltimer() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

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

// One step's signals to several ranks: a release fence once, then relaxed
// stores, each a release pattern with the fence (PTX memory model). A
// st.release per signal would fence before each store, and each fence waits
// for the store before it to reach L2: a round trip per peer.
template <bool Release, class K, class Each>
__device__ __forceinline__ void store_signals(Each each) {
  if constexpr (Release) fence_acq_rel<K::system>();
  each([](u64* slot, u64 value) { st_relaxed<K::system>(slot, value); });
}

// -- polling ------------------------------------------------------------------

// Polls between looks at the clock and at the abort flag (host memory: too
// slow to read on every poll).
constexpr int kPollsPerCheck = 256;

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

// Polls of a signal at full speed before a poller backs off, and the longest
// nap between later polls (ns). Hundreds of blocks spinning on a few signal
// lines flood their L2 slice: measured on one H200 with 8 ranks, the fences
// and atomics of the blocks still working then took hundreds of us (all_reduce
// of 16 MiB: 151-165 us per call polling flat out, 102 with these naps; a
// 2 us cap was slower for calls of a few us).
constexpr int kEagerPolls = 16;
constexpr unsigned kLongestNapNs = 256;

// One thread polls *slot until it reaches `need`; false when it gave up.
template <class K>
__device__ bool poll_signal(const K& k, const u64* slot, u64 need, int site, int which) {
  Deadline deadline;
  u64 seen;
  int polls = 0;
  unsigned nap = 32;
  while ((seen = ld_relaxed<K::system>(slot)) < need) {
    if (++polls > kEagerPolls) {
      __nanosleep(nap);
      nap = nap < kLongestNapNs ? 2 * nap : kLongestNapNs;
    }
    if (deadline.expired(k)) {
      if (!*k.h.abort) record_timeout(k.h, k.epoch, site, 0, which, -1, need, seen);
      return false;
    }
  }
  return true;
}

// One rank per process (Header::record_at): before this rank touches rank
// r's buffers in place, r's record of this call must show the keys (heap
// and offset) this rank's buffers have. False, once recorded (kBadBuffers), where they
// differ: the caller leaves r's buffers alone and the host raises.
template <class K>
__device__ bool same_offsets(const K& k, i64 r) {
  if (!k.h.record_at || r == k.rank()) return true;
  const auto* rec = reinterpret_cast<const abi::BufferRecord*>(k.sym(r) + k.h.record_at);
  if (!poll_signal(k, &rec->epoch, k.epoch + 1, -1, int(r))) return false;
  ld_acquire<K::system>(&rec->epoch);
  const i64 in = i64(ld_relaxed<K::system>(reinterpret_cast<const u64*>(&rec->input_at)));
  const i64 out = i64(ld_relaxed<K::system>(reinterpret_cast<const u64*>(&rec->output_at)));
  if (in == k.h.input_at && out == k.h.output_at) return true;
  const bool input = in != k.h.input_at;
  if (!*k.h.abort)
    record_timeout(k.h, k.epoch, -1, abi::kBadBuffers, int(r), input ? 0 : 1, u64(input ? k.h.input_at : k.h.output_at),
                   u64(input ? in : out));
  return false;
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

// -- a role's blocks ----------------------------------------------------------

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

}  // namespace purlin::cuda
