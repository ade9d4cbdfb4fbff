// The binary plan (format version 1), as written by purlin/plan.py `Plan.encode`
// and checked there by `decode`/`validate`. The runtime re-checks what it
// relies on so a corrupt plan is an error, never an out-of-bounds access.
#pragma once

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
constexpr int kInstrWords = 16;
constexpr int kRefWords = 5;

enum class Op : int64_t { Wait = 1, Signal = 2, Copy = 3, Reduce = 4, Put = 5, WaitPackets = 6 };
enum class Space : int64_t { Input = 0, Output = 1, Staging = 2, Window = 3 };
enum class Base : int64_t { Epoch = 0, Prev = 1 };
enum class Order : int64_t { Relaxed = 0, Acquire = 1, Release = 2 };
enum class BufKind : int64_t { Staging = 0, Packets = 1 };

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
  int64_t scope;
  RedOp redop;
  int64_t buf, offset;
  int64_t dst;        // index into Plan::refs, -1 for none
  int64_t src_first;  // first source in Plan::refs
  int64_t src_count;
};

struct Role {
  int64_t kind, blocks;
};

struct Buffer {
  BufKind kind;
  int64_t slots, elems;
};

struct Plan {
  int64_t world, arch, input_elems, output_elems, advance, threads;
  DType dtype;
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

}  // namespace purlin
