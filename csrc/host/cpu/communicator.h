// The CPU backend: a plan executed by one thread per (rank, role) over
// symmetric memory that is host memory: the heap when all ranks are threads
// of one process (Communicator), POSIX shared memory when each rank is a
// process (ProcessCommunicator, cpu/process.h). Signals
// and packet flags are std::atomic<uint64_t> with the release/acquire orders
// the plan names, so the protocol's races show up here as they would on GPUs.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cpu/park.h"
#include "purlin/plan.h"

namespace purlin::cpu {

// A spin ran past the timeout; the message names the collective, rank, role,
// what was awaited and the epoch.
class CollectiveTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  double timeout_s = 10.0;
  std::string name = "collective";
  std::vector<std::string> signal_names;  // optional, by signal array index
  std::vector<std::string> buffer_names;  // optional, by buffer index
  // A call whose buffers and staging, every rank's together, reach this many
  // bytes copies around the cache (cpu/stream.h); -1: half the last-level cache.
  int64_t cache_bypass_bytes = -1;
};

// One packet of a window: 8 data bytes and the flag that publishes them.
// The writer stores the data, then the flag with release; a reader acquires
// the flag before it reads the data. That pair orders the two 8-byte halves
// without a 16-byte atomic (not lock-free everywhere on x86-64/aarch64).
struct alignas(kPacketBytes) Packet {
  std::atomic<uint64_t> data{0};
  std::atomic<uint64_t> flag{0};
};
static_assert(sizeof(Packet) == kPacketBytes && sizeof(uint64_t) == kPacketDataBytes);

// The first bytes of a rank's region: what a peer checks when it maps it,
// and where peers flag a failed call so this rank stops waiting for them.
struct RegionHeader {
  static constexpr uint64_t kMagic = 0x7075726c696e3031;  // "purlin01"
  uint64_t magic, world, rank, bytes;
  // The process that made the region and the region's address in it: where a
  // peer reaches this rank's buffers by cross-memory attach (buffers anywhere).
  uint64_t pid, self;
  std::atomic<uint64_t> failed{0};  // 2 * (failing rank + 1) + (1 if it timed out), 0 while none failed
  // A symmetric plan's call: where this rank's input and output sit, as
  // offsets in its heap or (buffers anywhere) addresses in its process,
  // stored before the call's first signal (peers read them after one).
  std::atomic<uint64_t> input_offset{0}, output_offset{0};
  // What this rank's waiters sleep on: rung by whoever stores a signal or
  // packets into this region, or flags a failure in it. A line of its own:
  // waiters write it.
  alignas(64) Doorbell bell{};
};

// Symmetric memory of one rank, pointers into one region laid out by
// Executor::region: staging buffers and packet windows of 2 halves x slots x
// elems elements, and signal arrays of `world` slots.
struct RankMemory {
  RegionHeader* header = nullptr;
  std::vector<unsigned char*> staging;  // null for windows
  std::vector<Packet*> windows;         // null for staging
  std::vector<std::atomic<uint64_t>*> signals;
  unsigned char* heap = nullptr;  // the rank's own buffers of a symmetric plan (ProcessCommunicator)
};

// What both communicators share: the plan, the layout of each rank's memory
// (wherever it lives), the epochs, and the role threads of one call (parked
// workers of a process-wide pool, cpu/workers.h; the caller runs one role).
class Executor {
 public:
  int64_t world() const { return plan_.world; }
  // What rank `rank`'s buffers must hold: its own extent, not the largest rank's.
  int64_t input_bytes(int64_t rank) const { return plan_.input_extent.at(rank) * plan_.elem_bytes(); }
  int64_t output_bytes(int64_t rank) const { return plan_.output_extent.at(rank) * plan_.elem_bytes(); }
  int64_t epoch(int64_t rank) const;
  // Whether the current plan's large copies bypass the cache.
  bool bypasses_cache() const { return streaming_; }
  const std::string& name() const { return options_.name; }
  // Wakes the waiters of every rank whose memory this executor maps.
  void ring_all() const;
  // Runs `plan` from the next call on: another binding of the plan's kernel
  // (its sizes given at run time), whose memory is laid out as the current
  // one's (world, dtype, buffers, signals, epoch advance); refused with
  // std::invalid_argument otherwise. Every rank rebinds at the same call.
  void rebind(Plan plan);

 protected:
  // Refuses (std::invalid_argument) a plan the CPU executor cannot run safely.
  Executor(Plan plan, Options options);

  // Bytes of one rank's region.
  size_t region_bytes() const;
  // The pointers into the region at `base` of rank `rank`; `construct` creates
  // its header and atomics in zeroed bytes (done once, by the owner).
  RankMemory region(unsigned char* base, int64_t rank, bool construct) const;

  // One call of the roles of `ranks`, each rank on its own buffers (indexed by
  // rank); `failed`, where set, is polled for a peer's failure while spinning.
  // Throws CollectiveTimeout when a spin times out; nothing can run after a failure.
  void run_ranks(const std::vector<int64_t>& ranks, const std::vector<const void*>& inputs,
                 const std::vector<void*>& outputs, const std::atomic<uint64_t>* failed);
  // One call of rank `rank` alone, its peers run by other executors: a call
  // that fails is flagged in every peer's region (flag_failure) before it throws.
  void run_rank(int64_t rank, const void* input, void* output);
  // Marks in every mapped peer's region that rank `rank` failed (timed out or
  // not) and wakes it, so that a peer waiting on it stops at once.
  void flag_failure(int64_t rank, bool timed_out);

  Plan plan_;
  Options options_;
  size_t heap_bytes_ = 0;  // after the signals, where a ProcessCommunicator's buffers may live
  // A symmetric plan's buffers anywhere in each rank's process, the peers'
  // read and written with process_vm_readv / process_vm_writev (one copy).
  bool anywhere_ = false;
  // The call's buffers outgrow the cache: large copies bypass it (cpu/stream.h).
  bool streaming_ = false;
  int64_t packet_elems_;  // elements per 8-byte packet
  std::vector<RankMemory> memory_;
  std::vector<int64_t> epoch_, prev_;
  std::string broken_;  // why the communicator cannot run again, or empty

 private:
  friend class RoleThread;
  bool outgrows_cache(const Plan& p) const;
  std::string signal_name(int64_t sig) const;
  std::string buffer_name(int64_t buf) const;
};

// Every rank of a plan as threads of this process, over heap memory.
class Communicator : public Executor {
 public:
  Communicator(Plan plan, Options options);

  // One call of the collective on all ranks. inputs[r] / outputs[r] hold at
  // least input_bytes(r) / output_bytes(r) bytes. Throws CollectiveTimeout
  // when a spin times out; the communicator is then unusable.
  void run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);

 private:
  struct Free {
    void operator()(unsigned char* p) const;
  };
  std::vector<std::unique_ptr<unsigned char[], Free>> regions_;
};

}  // namespace purlin::cpu
