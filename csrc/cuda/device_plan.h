// The plan as one rank's kernel reads it: decoded, bounds-checked and
// resolved on the host (context.cu), uploaded once per communicator.
#pragma once

#include <cstdint>

namespace purlin::cuda {

// Roles, sources per reduce and pipeline stages are small in every plan the
// compiler emits; fixed bounds keep per-block state in shared memory.
constexpr int kMaxSources = 32;
constexpr int kPipelineStages = 3;
constexpr int kMaxPipelineSmem = 64 * 1024;
constexpr int kPacketBytes = 16;
constexpr int kPacketDataBytes = 8;

struct DevRef {
  int32_t space, rank, buf, slot;
  int64_t offset;  // elements
};

struct DevInstr {
  int32_t op, mech, order, redop;
  int64_t elems;
  int32_t sig, peer, slot, base;
  int64_t rel;
  int32_t buf, src_count;
  int64_t offset;
  int32_t src_first;  // into DevPlan::refs
  int32_t has_dst;
  DevRef dst;
};

struct DevRole {
  int32_t first_block, blocks, first_instr, count;
};

struct DevBuffer {
  int32_t kind;
  int32_t pad;
  int64_t slots, elems;
  int64_t packets_per_region;  // packet windows: ceil(elems / elements per packet)
};

// Where a wait gave up, written by the device into host-mapped memory.
struct ErrorRecord {
  int32_t valid;
  int32_t is_packets;  // 0: signal wait, 1: wait_packets
  int32_t rank, role, instr;
  int32_t array;  // signal array, or packet window buffer
  int32_t slot;   // signal slot, or source rank of the packets
  int32_t pad;
  int64_t packet;  // packet index inside the source region, -1 for signals
  uint64_t awaited, seen, epoch;
};

// Per-rank device state kept across calls, so CUDA graph replays see the
// epoch the previous replay left.
struct EpochState {
  uint64_t epoch, prev;
  uint32_t blocks_done;
  int32_t error_claimed;
  uint32_t arrivals[1];  // one counter per (role, instruction), sized at allocation
};

struct DevPlan {
  int32_t rank, world, elem_bytes, threads;
  int32_t n_roles, n_buffers, n_signals, smem_bytes;
  int64_t advance;
  uint64_t timeout_ns;
  const DevRole* roles;
  const DevInstr* instrs;
  const DevRef* refs;
  const DevBuffer* buffers;
  char* const* buffer_bases;    // [rank * n_buffers + buf]
  uint64_t* const* signal_bases;  // [rank * n_signals + sig]
  char* const* multicast_bases;   // [buf]; never set: multicast is refused on the host
  EpochState* state;
  ErrorRecord* error;        // this rank's record, host-mapped
  volatile int32_t* abort;   // one flag for all ranks, host-mapped
};

}  // namespace purlin::cuda
