// The packet (LL) protocol: each 16-byte packet of a consumer's window holds
// 8 data bytes and the flag that publishes them, stored and loaded as one, so
// a consumer that saw the flag has the data with no fence. put_units writes
// packets; wait_packets polls them for a copy or reduce through the
// datapath; poll_consume polls and combines them in registers.
#pragma once

#include "purlin/datapath.cuh"
#include "purlin/order.cuh"

namespace purlin::cuda {

template <bool Sys>
__device__ __forceinline__ void st_packet(char* p, u64 data, u64 flag) {
  PURLIN_SCOPED_ASM(Sys, "st.relaxed", ".global.v2.u64 [%0], {%1, %2};", ::"l"(p), "l"(data), "l"(flag) : "memory");
}
template <bool Sys>
__device__ __forceinline__ void ld_packet(const char* p, u64& data, u64& flag) {
  PURLIN_SCOPED_ASM(Sys, "ld.relaxed", ".global.v2.u64 {%0, %1}, [%2];", : "=l"(data), "=l"(flag) : "l"(p) : "memory");
}

// The first n (at most 8) bytes at p, little-endian, in pieces of W bytes (p
// and n multiples of W). Each piece's load is predicated rather than branched
// around, so that they are all in flight at once: one round trip, not one per
// piece.
template <int W>
__device__ __forceinline__ u64 load_pieces(const char* p, i64 n) {
  using T = decltype(Word<W>::v);  // u8, u16, u32
  T v[kPacketDataBytes / W];
#pragma unroll
  for (int j = 0; j < kPacketDataBytes / W; ++j) v[j] = j * W < n ? reinterpret_cast<const T*>(p)[j] : T(0);
  u64 data = 0;
#pragma unroll
  for (int j = 0; j < kPacketDataBytes / W; ++j) data |= u64(v[j]) << (8 * W * j);
  return data;
}
template <int W>
__device__ __forceinline__ void store_pieces(char* p, u64 data, i64 n) {
  using T = decltype(Word<W>::v);  // u8, u16, u32
#pragma unroll
  for (int j = 0; j < kPacketDataBytes / W; ++j)
    if (j * W < n) reinterpret_cast<T*>(p)[j] = T(data >> (8 * W * j));
}

// The first n (at most 8) bytes at p, at any alignment: the ends of a packet's
// data and spans off 8-byte alignment, in the widest pieces the address and n
// allow (a bf16 slice at an odd element is 2-byte pieces, not bytes).
__device__ __forceinline__ u64 load_bytes(const char* p, i64 n) {
  const u64 a = reinterpret_cast<u64>(p) | u64(n);
  return a % 4 == 0 ? load_pieces<4>(p, n) : a % 2 == 0 ? load_pieces<2>(p, n) : load_pieces<1>(p, n);
}
__device__ __forceinline__ void store_bytes(char* p, u64 data, i64 n) {
  const u64 a = reinterpret_cast<u64>(p) | u64(n);
  if (a % 4 == 0)
    store_pieces<4>(p, data, n);
  else if (a % 2 == 0)
    store_pieces<2>(p, data, n);
  else
    store_pieces<1>(p, data, n);
}

// Items [lo, hi) of a loop, item i made of count(i) pieces, as one flat range
// of pieces spread over the role's threads. Every thread runs the same loop,
// so that the waits of different items overlap instead of diverging by item.
// body(i, piece) returns false to stop. Counted in ints, which cost fewer
// instructions on the critical path than 64-bit ones: tables.py refuses a
// phase of more pieces (MAX_PACKET_PIECES).
// The pass that counts the pieces also finds the item of the thread's first
// piece: its table loads are independent, where a walk to it after the count
// would be a chain of them (all_to_all: one item per peer).
template <class Count, class Body>
__device__ void spread(u64 lo, u64 hi, Part part, Count count, Body body) {
  const int first = int(part.first());
  int total = 0, item = int(hi), base = 0, n = 0;
  for (int i = int(lo); i < int(hi); ++i) {
    const int c = int(count(u64(i)));
    if (first >= total && first < total + c) {
      item = i;
      base = total;
      n = c;
    }
    total += c;
  }
  const int stride = int(part.stride());
  for (int f = first; f < total; f += stride) {
    while (f >= base + n) {
      base += n;
      n = int(count(u64(++item)));
    }
    if (!body(u64(item), i64(f - base))) return;
  }
}

// The input word a latency role's thread puts first, loaded before the
// frame copies the tables, so that its round trip overlaps theirs (the
// floor's first load takes the epoch and the input together): piece
// blockIdx.x * blockDim.x + threadIdx.x of a role from block 0, whose units
// cover the input from its start in order. put_units takes it where the
// address it would load is this one. Only the kernel's first step may take
// it (codegen.py): nothing of this call has written the input before.
struct ReadAhead {
  const char* at = nullptr;
  u64 word = 0;
  ReadAhead() = default;
  __device__ explicit ReadAhead(const abi::Header& h) {
    const i64 b = (i64(blockIdx.x) * blockDim.x + threadIdx.x) * kPacketDataBytes;
    if (b + kPacketDataBytes <= h.input_bytes && reinterpret_cast<u64>(h.input) % kPacketDataBytes == 0) {
      at = h.input + b;
      word = *reinterpret_cast<const u64*>(at);
    }
  }
};

// Packets of a unit or group of `bytes`: at least one, so that an empty unit
// (PhasePlan.empty_units) still carries the call's flag.
__device__ __forceinline__ i64 packets_of(i64 bytes) {
  return bytes > 0 ? (bytes + kPacketDataBytes - 1) / kPacketDataBytes : 1;
}

// atom.put of units [lo, hi) (a loop whose body is one put, or one put): each
// unit as packets into this rank's region of every consumer's window, one
// (unit, packet) per piece: its data loaded once and stored to every
// consumer. In place the rank is a consumer of its own input (stage_local),
// and its consume overwrites the input once it saw its own packet, so no
// consumer's packet may load the data after another consumer's was stored.
template <class K>
__device__ void put_units(const K& k, int phase, u64 lo, u64 hi, u64 half, u64 flag, Part part,
                          const ReadAhead& ahead = ReadAhead()) {
  const int ph = K::phase(phase);
  char* const base_src = k.source(ph);
  const i64 region = k.t(ph + abi::kPhBuffer) + i64(half) * k.t(ph + abi::kPhHalfBytes) +
                     k.rank() * k.t(ph + abi::kPhSlotBytes);
  auto packets = [&](int unit) { return packets_of(k.t(unit + abi::kUBytes)); };
  spread(
      lo, hi, part, [&](u64 u) { return packets(k.unit(ph, u)); },
      [&](u64 u, i64 pk) {
        const int unit = k.unit(ph, u);
        const char* src = base_src + k.t(unit + abi::kUSrc);
        const i64 bytes = k.t(unit + abi::kUBytes), b = pk * kPacketDataBytes;
        const bool whole = b + kPacketDataBytes <= bytes && reinterpret_cast<u64>(src) % kPacketDataBytes == 0;
        const u64 data = whole ? src + b == ahead.at ? ahead.word : *reinterpret_cast<const u64*>(src + b)
                               : load_bytes(src + b, bytes - b);
        const i64 at = (k.t(unit + abi::kUWindow) / kPacketDataBytes + pk) * kPacketBytes;
        const int consumers = int(k.t(unit + abi::kUConsumers)), first = int(k.t(unit + abi::kUConsumersAt));
        for (int c = 0; c < consumers; ++c) st_packet<K::system>(k.sym(k.t(first + c)) + region + at, data, flag);
        return true;
      });
}

// The region of this rank's window where source s of a group lands, as a
// packet span (data byte offsets).
template <class K>
__device__ Span window_span(const K& k, int ph, int s, u64 half) {
  return {k.half_of(ph, k.rank(), half) + k.t(s + abi::kSRank) * k.t(ph + abi::kPhSlotBytes),
          k.t(s + abi::kSOffset)};
}

// atom.wait_packets on its own: every block polls every packet of the group's
// remote sources, so that its later reads follow its own look at the flags.
template <bool Acquire, class K>
__device__ void wait_packets(K& k, int phase, u64 g, u64 epoch, Part part, int site) {
  const int ph = K::phase(phase), group = k.group(ph, g);
  const i64 packets = packets_of(k.t(group + abi::kGBytes));
  const u64 need = epoch + 1;
  bool ok = true;
  for (i64 j = 0; j < k.t(group + abi::kGSources) && ok; ++j) {
    const int s = k.source_at(group, j);
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

// Packet pk of group `group` from its n sources, combined in source order
// and stored; the remote sources are polled kBatch at a time, their loads in
// flight together. At two blocks an SM (64 registers a thread) 8 in flight
// spilled (reduce_scatter 48-244 B, all_to_all 60-220 B at worlds 3-8) and
// ran up to 2.6x longer than 2 (bench/results/1xh100-session-12-07b).
template <DType D, bool Reduce, class K>
__device__ void consume_packet(K& k, int ph, int group, i64 pk, char* own, u64 need, int op, int site) {
  constexpr int E = kPacketDataBytes / Elem<D>::bytes;
  constexpr int kBatchMost = PURLIN_BLOCKS_PER_SM > 1 ? 2 : 8;
  constexpr int kBatch = K::world < kBatchMost ? K::world : kBatchMost;
  const i64 bytes = k.t(group + abi::kGBytes), n = k.t(group + abi::kGSources);
  // nb 0: an empty group's packet, polled for its flag; nothing is loaded or stored.
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
      const int s = k.source_at(group, j0 + q);
      const i64 off = k.t(s + abi::kSOffset);
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
  const int ph = K::phase(phase);
  char* const own = k.half_of(ph, k.rank(), half);
  // A group of remote sources polls at least one packet of each (an empty
  // one its flag, and stores nothing); one of the rank's own alone, none.
  spread(
      lo, hi, part,
      [&](u64 g) {
        const int group = k.group(ph, g);
        const i64 bytes = k.t(group + abi::kGBytes);
        return bytes > 0 || k.t(group + abi::kGRemote) == 0 ? (bytes + kPacketDataBytes - 1) / kPacketDataBytes : 1;
      },
      [&](u64 g, i64 pk) {
        consume_packet<D, Reduce>(k, ph, k.group(ph, g), pk, own, epoch + 1, op, site);
        return !k.failed;
      });
}

}  // namespace purlin::cuda
