// What a generated kernel and the C++ runtime that launches it agree on: the
// enums of the plan format, the kernel's parameter, the per-rank tables and
// the state kept on the device across calls. Plain types only, so NVRTC
// (no host standard library) and the host compiler read the same layout;
// tests/python/cuda/test_cuda_abi.py checks it against purlin/cuda/abi.py.
#pragma once

namespace purlin {

using i64 = long long;
using u64 = unsigned long long;
using i32 = int;
using u32 = unsigned int;

enum class DType : i64 {
  BF16 = 0, F16 = 1, F32 = 2, FP8E4M3 = 3, FP8E5M2 = 4,
  I8 = 5, UI8 = 6, I32 = 7, UI32 = 8, I64 = 9, UI64 = 10, F64 = 11
};
enum class RedOp : i64 { None = 0, Sum = 1, Max = 2, Min = 3, Prod = 4, And = 5, Or = 6, Xor = 7, Avg = 8 };

// Bytes of one element of each DType, in code order.
constexpr int kDTypeBytes[] = {2, 2, 4, 1, 1, 1, 1, 4, 4, 8, 8, 8};
constexpr int kDTypeCount = 12;
enum class Mech : i64 { None = 0, Vector = 1, CpAsync = 2, Bulk = 3, Multimem = 4, CopyEngine = 5, Packet = 6 };

// A window packet: 8 data bytes and the 8-byte flag that publishes them.
constexpr int kPacketBytes = 16;
constexpr int kPacketDataBytes = 8;

namespace abi {

// The tables: int64 words, one set per rank, written by purlin/cuda/tables.py.
// Global words, then the symmetric allocation of every rank (as this rank
// addresses it; the host fills these in), then one header per phase.
constexpr int kCounterStride = 0;  // arrival counters per signal site
constexpr int kPhaseCount = 1;
constexpr int kCountsWindow = 2;   // device counts: their packet window in the symmetric allocation
constexpr int kTableCapacity = 3;  // device counts: words of room for the tables in shared memory
constexpr int kGlobalWords = 4;
// Device counts: after that room, each phase's prefix sums (counts_tables.h's
// Index), this many rows of world x (world + 1) words.
constexpr int kCountsScratchRows = 3;
// = kGlobalWords + world: where the phase headers start.

// A phase header (kPhaseWords words); offsets and sizes in bytes.
constexpr int kPhUnits = 0;      // this rank's units
constexpr int kPhGroups = 1;     // this rank's groups
constexpr int kPhStaged = 2;     // its groups that read staging (they come first)
constexpr int kPhMaxUnits = 3;   // the most units of any rank
constexpr int kPhUnitsAt = 4;    // word of the first unit record
constexpr int kPhGroupsAt = 5;   // word of the first group record
constexpr int kPhBuffer = 6;     // the buffer, from the start of the symmetric allocation
constexpr int kPhHalfBytes = 7;  // one half of the buffer
constexpr int kPhSlotBytes = 8;  // staging: one slot; packets: one source's region
constexpr int kPhSlots = 9;      // staging slots per half
constexpr int kPhReady = 10;     // the ready signal slots (one u64 per rank)
constexpr int kPhFree = 11;      // the free signal slots
constexpr int kPhSource = 12;    // 0: units come from the input, 1: from the output
constexpr int kPhMulticast = 13; // the buffer's multicast address (never bound: 0)
constexpr int kPhSendersAt = 14;   // word of the first other rank whose units this one consumes
constexpr int kPhSenders = 15;
constexpr int kPhReceiversAt = 16; // word of the first other rank that consumes this one's units
constexpr int kPhReceivers = 17;
constexpr int kPhaseWords = 18;

// A unit this rank produces.
constexpr int kUSrc = 0;           // offset in the source buffer
constexpr int kUBytes = 1;
constexpr int kUWindow = 2;        // offset in this rank's region of a consumer's window
constexpr int kUConsumersAt = 3;   // word of the first consumer rank
constexpr int kUConsumers = 4;
constexpr int kUDestsAt = 5;       // direct push: word of the first (rank, output offset) it is written to
constexpr int kUDests = 6;
constexpr int kUnitWords = 7;

// A group this rank consumes, and its sources in reduction order.
constexpr int kGDst = 0;           // offset in the output
constexpr int kGBytes = 1;
constexpr int kGSourcesAt = 2;
constexpr int kGSources = 3;
constexpr int kGRemote = 4;        // sources read from staging or the window
constexpr int kGroupWords = 5;

constexpr int kSRank = 0;
constexpr int kSUnit = 1;          // the unit on that rank, -1 when read locally
constexpr int kSOffset = 2;        // local and direct pull: offset in the source rank's buffer; window: in its region
constexpr int kSourceWords = 3;

// How a phase moves data (snac.PhaseOp.moves), folded into the code that runs it.
enum class Moves : i64 { Staging = 0, Packets = 1, Pull = 2, Push = 3 };

// The V layouts whose counts a kernel may read on the device
// (purlin/coll/layouts.py's LayoutKind, less `named`).
enum class LayoutKind : i64 { Packed = 0, Scattered = 1, Addressed = 2, Transposed = 3 };

// What a device-counts kernel found wrong with the counts it was given.
enum class CountsError : i64 { None = 0, Negative = 1, Input = 2, Output = 3, Buffer = 4, Tables = 5 };

// Each block's epochs, kept on the device so that graph replays continue them.
struct BlockState {
  u64 epoch, prev;
};

// Where a wait gave up, written by the device into host-mapped memory.
// ErrorRecord::packets of a counts error, and of a peer's buffers at other
// offsets of its heap than this rank's.
constexpr int kBadCounts = 2;
constexpr int kBadBuffers = 3;
struct ErrorRecord {
  i32 valid;
  i32 site;     // the wait's index in the kernel (purlin/cuda/codegen.py names it)
  i32 rank, block;
  i32 packets;  // 0: a signal wait, 1: a packet poll, 2: bad counts (packet: the CountsError),
                // 3: a peer's buffers at other heap offsets (packet: 0 input, 1 output)
  i32 slot;     // the signal slot, or the rank whose packets (or buffers) were awaited
  i64 packet;   // the packet's index in the group, -1 for signals
  u64 awaited, seen, epoch;
};

// The kernel's parameter. Every field is 8 bytes, so host and device lay it
// out alike.
struct Header {
  i64 rank;
  char* input;
  char* output;
  BlockState* blocks;       // one per block of the grid
  u64* arrivals;            // signal sites x kCounterStride, monotonic
  ErrorRecord* error;       // this rank's record, host-mapped
  u32* error_claim;         // device memory: the first wait to give up writes the record
  volatile i32* abort;      // set by any rank of the process that gave up, host-mapped
  u64 timeout_ns;
  const i64* tables;        // this rank's tables, in global memory
  i64 table_words;          // their length; a block copies them to shared memory when they fit
  const i64* counts;        // device counts: this rank's (a count, or a row of the matrix)
  i64* recv_counts;         // device counts: where the counts this rank receives go, or null
  // One rank per process, symmetric kernel: where every rank's record of its
  // call sits in its symmetric allocation (0: ranks of one process, no
  // record), and this call's input and output keys (the heap's serial and
  // the offset in it). Each rank publishes them there; a rank checks a
  // peer's before it touches the peer's buffers (kernel.cuh, same_offsets).
  i64 record_at;
  i64 input_at;
  i64 output_at;
  i64 input_bytes;          // this call's input (a latency kernel loads its first word ahead: ReadAhead)
  // Launched as a programmatic dependent (the host checked that two grids of
  // every rank fit at once): the kernel lets the next launch on its stream
  // start once it has waited for the work ahead of it (kernel.cuh, follow_previous).
  i64 programmatic;
};

// A rank's record (Header::record_at): its epoch + 1 once input_at and
// output_at are this call's.
struct BufferRecord {
  u64 epoch;
  i64 input_at, output_at;
};

// A symmetric kernel's second parameter: every rank's input and output of
// this call, as this rank addresses them.
template <int W>
struct Peers {
  char* input[W];
  char* output[W];
};

}  // namespace abi
}  // namespace purlin
