// The binary plan (format version 1), as written by purlin.plan's `Plan.encode`
// and checked there by `decode`/`validate`. The runtime re-checks what it
// relies on so a corrupt plan is an error, never an out-of-bounds access.
// tests/python/plan/test_plan_abi.py holds these values equal to purlin.plan's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

// DType, RedOp and Mech, shared with the generated kernels.
#include "purlin/abi.h"

namespace purlin {

constexpr int64_t kMagic = 0x4E4C5250;  // "PRLN"
constexpr int64_t kVersion = 1;
constexpr int kHeaderWords = 16;
// Header word 12, flags: the plan reads and writes other ranks' user buffers in place.
constexpr int64_t kFlagSymmetric = 1;
// Limits of what a plan may ask the runtimes to allocate and launch
// (purlin/snac/dialect.py's MAX_SLOTS, MAX_BUFFER_BYTES, MAX_ROLE_BLOCKS).
constexpr int64_t kMaxSlots = 1024;
constexpr int64_t kMaxBufferBytes = int64_t(1) << 34;
constexpr int64_t kMaxRoleBlocks = 4096;
// The most ranks of a plan (purlin/coll/layouts.py's MAX_WORLD).
constexpr int64_t kMaxWorld = 576;
constexpr int kInstrWords = 16;
constexpr int kRefWords = 5;

enum class Op : int64_t { Wait = 1, Signal = 2, Copy = 3, Reduce = 4, Put = 5, WaitPackets = 6 };
enum class Space : int64_t { Input = 0, Output = 1, Staging = 2, Window = 3 };
enum class Base : int64_t { Epoch = 0, Prev = 1 };
enum class Order : int64_t { Relaxed = 0, Acquire = 1, Release = 2 };
enum class BufKind : int64_t { Staging = 0, Packets = 1 };
enum class RoleKind : int64_t { Producer = 0, Consumer = 1, Reducer = 2, Local = 3, Fused = 4, Stream = 5 };
enum class Scope : int64_t { Gpu = 0, System = 1 };

// By RoleKind, for messages.
constexpr const char* kRoleKindNames[] = {"producer", "consumer", "reducer", "local", "fused", "stream"};
static_assert(sizeof(kRoleKindNames) / sizeof(kRoleKindNames[0]) ==
              static_cast<std::size_t>(RoleKind::Stream) + 1);

// The sm generations a plan or kernel may target.
constexpr int64_t kArchs[] = {80, 90, 100};

constexpr bool known_arch(int64_t arch) {
  for (int64_t a : kArchs)
    if (a == arch) return true;
  return false;
}

// Threads per block of every launch: whole warps, at most 1024.
constexpr bool valid_threads(int64_t threads) { return threads >= 32 && threads <= 1024 && threads % 32 == 0; }

// The dtypes that reduce exactly in their own width and admit and/or/xor.
constexpr bool integer_dtype(DType d) { return d >= DType::I8 && d <= DType::UI64; }

struct Ref {
  Space space;
  int64_t rank, buf, slot, offset;
};

// One instruction: the 16 words of the encoding, refs resolved to indices.
struct Instr {
  Op op;
  Mech mech;
  int64_t elems, sig, peer, slot;
  Base base;
  int64_t rel;
  Order order;
  Scope scope;
  RedOp redop;
  int64_t buf, offset;
  int64_t dst;        // index into Plan::refs, -1 for none
  int64_t src_first;  // first source in Plan::refs
  int64_t src_count;
};

struct Role {
  RoleKind kind;
  int64_t blocks;
};

struct Buffer {
  BufKind kind;
  int64_t slots, elems;
};

struct Plan {
  int64_t world, arch, input_elems, output_elems, advance, threads;
  DType dtype;
  // Refs may name other ranks' inputs and outputs: every rank's must be addressable by every rank.
  bool symmetric = false;
  std::vector<Role> roles;
  std::vector<Buffer> buffers;
  std::vector<int64_t> signal_slots;
  // directory[(rank * roles + role)] = {first instruction, count}
  std::vector<std::pair<int64_t, int64_t>> directory;
  std::vector<Instr> instrs;
  std::vector<Ref> refs;
  // Per rank: elements of its input / output that its data instructions
  // touch, at most input_elems / output_elems (smaller on some V ranks).
  std::vector<int64_t> input_extent, output_extent;

  int elem_bytes() const { return kDTypeBytes[static_cast<int>(dtype)]; }
  const Instr* program(int64_t rank, int64_t role, int64_t* count) const {
    const auto& d = directory[rank * static_cast<int64_t>(roles.size()) + role];
    *count = d.second;
    return instrs.data() + d.first;
  }
};

class PlanError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Decode and bounds-check a binary plan of `n` int64 words.
Plan decode_plan(const int64_t* words, int64_t n);

// What decode_plan leaves to the executors: the fields each op reads, refs
// to the executing rank's user buffers (any rank's in a symmetric plan) and
// to buffers of the right kind.
// std::invalid_argument names the first bad instruction.
void check_programs(const Plan& p);

const char* op_name(Op op);
const char* role_name(RoleKind kind);

}  // namespace purlin
