// The plan as one rank's kernel reads it: decoded, bounds-checked and
// resolved on the host (context.cu), uploaded once per communicator.
#pragma once

#include <cstdint>

namespace purlin::cuda {

// Roles, sources per reduce and pipeline stages are small in every plan the
// compiler emits; fixed bounds keep per-block state in shared memory.
constexpr int kMaxSources = 32;
constexpr int kMaxRoles = 8;
// Registers per thread are sized for this many threads (__launch_bounds__).
constexpr int kMaxThreads = 512;
constexpr int kPipelineStages = 3;
constexpr int kMaxPipelineSmem = 64 * 1024;
constexpr int kPacketBytes = 16;
constexpr int kPacketDataBytes = 8;

// Addresses are resolved on the host, so the kernel needs no table lookups:
// a staging or window ref is `base` (half 0) plus `half_bytes` on odd epochs.
struct DevRef {
  int32_t space, rank, buf, slot;  // rank/buf locate multimem offsets
  char* base;                      // null for input and output
  int64_t half_bytes;
  int64_t offset;  // bytes into the user buffer or base; windows: byte inside the packet data
};

struct alignas(16) DevInstr {  // copied to shared memory as 16-byte words
  int32_t op, mech, order, redop;
  int64_t elems;
  int32_t sig, peer, slot, base;  // sig/slot/peer name the signal in timeout reports
  int64_t rel;
  uint64_t* signal;  // wait: this rank's slot; signal: the peer's slot
  char* region;      // put: the peer's window region for this rank; wait_packets: ours for the peer
  int64_t region_half_bytes;
  int32_t buf, src_count;
  int64_t offset;
  int32_t src_first;  // into DevPlan::refs
  int32_t pad;
  DevRef dst;
};

struct DevRole {
  int32_t first_block, blocks, first_instr, count;
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

// Passed by value as the kernel's parameter (constant memory): the fields
// and role table cost no global loads, which acquire fences would make slow.
struct DevPlan {
  int32_t rank, elem_bytes, n_roles, n_buffers;
  int32_t smem_bytes, pad;
  int64_t advance;
  uint64_t timeout_ns;
  DevRole roles[kMaxRoles];
  const DevInstr* instrs;
  const DevRef* refs;
  char* const* buffer_bases;     // [rank * n_buffers + buf], for multimem offsets
  char* const* multicast_bases;  // [buf]; never set: multicast is refused on the host
  EpochState* state;
  ErrorRecord* error;        // this rank's record, host-mapped
  volatile int32_t* abort;   // one flag for all ranks, host-mapped
};

}  // namespace purlin::cuda
