// The prologue of a kernel whose V counts are a device tensor: the ranks
// exchange their counts as packets, then every block computes its rank's
// tables (purlin/counts_tables.h) into shared memory, after the static
// header the host uploaded. No host round trip, so a call can be captured
// in a CUDA graph with counts written by an earlier kernel.
//
// The counts window holds two halves (epoch parity) of one region per source
// rank. A rank writes half h again two calls later, after it read every
// peer's counts of the call in between, which each peer published only after
// its kernel of this call (which read half h) had finished: no handshake is
// needed, and a packet's flag (epoch + 1) tells this call's counts from
// older ones.
#pragma once

#include "purlin/counts_tables.h"
#include "purlin/kernel.cuh"
#include "purlin/packets.cuh"

namespace purlin::cuda {

// Row: counts per rank (the world for a matrix, else 1). `shared`: the
// block's tables, their room (kTableCapacity words), then the phases'
// prefix sums; `phases` the kernel's phase shapes; false when this block
// must stop (a peer's counts did not arrive, or the counts are wrong).
template <int Row, int Phases, class K>
__device__ bool device_counts(K& k, i64* shared, const counts::PhaseShape (&phases)[Phases],
                              const i64 (&buffer_elems)[Phases], i64 input_elems, i64 output_elems, int eb,
                              int site) {
  constexpr int W = K::world, N = W * Row;
  __shared__ i64 all[N];
  __shared__ int bad;
  const u64 half = k.epoch & 1, need = k.epoch + 1;
  const i64 window = k.t(abi::kCountsWindow);
  auto line = [&](i64 on, i64 from, int q) {
    return k.sym(on) + window + ((i64(half) * W + from) * Row + q) * kPacketBytes;
  };
  if (blockIdx.x == 0)
    for (int j = threadIdx.x; j < N; j += blockDim.x) {
      const int to = j / Row, q = j % Row;
      if (to != k.rank()) st_packet<K::system>(line(to, k.rank(), q), u64(k.h.counts[q]), need);
    }
  bool ok = true;
  for (int j = threadIdx.x; j < N && ok; j += blockDim.x) {
    const int from = j / Row, q = j % Row;
    if (from == k.rank()) {
      all[j] = k.h.counts[q];
      continue;
    }
    u64 data, flag;
    Deadline deadline;
    for (ld_packet<K::system>(line(k.rank(), from, q), data, flag); flag < need;
         ld_packet<K::system>(line(k.rank(), from, q), data, flag)) {
      if (deadline.expired(k)) {
        if (!*k.h.abort) record_timeout(k.h, k.epoch, site, 1, from, q, need, flag);
        ok = false;
        break;
      }
    }
    all[j] = i64(data);
  }
  if (__syncthreads_or(!ok)) {
    k.failed = true;
    return false;
  }
  // Each phase's prefix sums after the tables' room, then the checks, a rank
  // per thread; then one thread writes the records.
  const counts::Counts n{all, W, Row};
  const i64 capacity = k.t(abi::kTableCapacity);
  counts::Index index[Phases];
  for (int ph = 0; ph < Phases; ++ph) {
    index[ph] = {shared + capacity + ph * counts::index_words(W), W};
    counts::prepare(n, phases[ph], kPacketDataBytes / eb, index[ph], threadIdx.x, blockDim.x);
  }
  // The first problem, as counts::check finds it.
  __shared__ int first_negative, first_unfit;
  if (threadIdx.x == 0) first_negative = first_unfit = W;
  __syncthreads();
  for (int r = threadIdx.x; r < W; r += blockDim.x)
    if (counts::negative(n, r).code) atomicMin(&first_negative, r);
  __syncthreads();
  for (int r = threadIdx.x; r < W && first_negative == W; r += blockDim.x)
    if (counts::fits(n, phases, Phases, input_elems, output_elems, buffer_elems, index, r).code)
      atomicMin(&first_unfit, r);
  __syncthreads();
  if (threadIdx.x == 0) {
    counts::Problem p = first_negative < W ? counts::negative(n, first_negative)
                        : first_unfit < W ? counts::fits(n, phases, Phases, input_elems, output_elems, buffer_elems,
                                                         index, first_unfit)
                                          : counts::Problem{};
    i64 at = k.h.table_words;
    for (int ph = 0; ph < Phases && p.code == 0; ++ph) {
      at = counts::build_phase(n, phases[ph], index[ph], ph, k.rank(), eb, kPacketDataBytes / eb, shared, at,
                               capacity);
      if (at < 0) p = {i64(abi::CountsError::Tables), k.rank(), 0, capacity};
    }
    bad = p.code != 0;
    if (bad && blockIdx.x == 0) record_timeout(k.h, k.epoch, site, abi::kBadCounts, int(p.rank), p.code, p.have, p.need);
  }
  __syncthreads();
  if (bad) {
    k.failed = true;
    return false;
  }
  if (blockIdx.x == 0 && k.h.recv_counts)
    for (int j = threadIdx.x; j < W; j += blockDim.x)
      k.h.recv_counts[j] = Row == 1 ? all[j] : all[j * Row + k.rank()];
  return true;
}

}  // namespace purlin::cuda
