// Running a compiled collective (purlin/cuda: a generated kernel, NVRTC's
// cubin and per-rank tables) on GPUs: either one process driving every rank
// (Communicator; a GPU may host several ranks, each on its own stream), or
// one process per rank with the symmetric memory exchanged as CUDA IPC
// handles (ProcessCommunicator, as under torchrun).
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "purlin/abi.h"

namespace purlin::cuda {

// A wait on a signal or packet that did not arrive within the timeout.
class TimeoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Device counts that do not fit the buffers the kernel was built for.
class BadCountsError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// One rank per process, symmetric kernel: a peer's buffers of a call sit in
// another heap or at other offsets of it than this rank's.
class BadBuffersError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A CUDA call that failed, or a device that cannot run the kernel.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What purlin/cuda/program.py hands over: the kernel and what launching it needs.
struct KernelSpec {
  std::string cubin;  // for `arch`
  std::string name;   // the extern "C" kernel
  int arch = 0;       // 80, 90 or 100
  int world = 0;
  int threads = 0, grid = 0;
  int smem = 0;   // dynamic shared memory of a block: the pipelines', then the tables'
  int sites = 0;  // signal and wait sites, each with its arrival counters
  int64_t counter_stride = 1;
  int64_t symmetric_bytes = 0;
  std::vector<std::vector<int64_t>> tables;          // per rank (symmetric bases left 0)
  std::vector<int64_t> input_bytes, output_bytes;    // per rank: what its kernel touches
  std::vector<std::string> site_names;               // per site: the IR op, for timeout reports
  bool multimem = false;
  int count_words = 0;  // device counts: int64 words of counts each rank passes (0: none)
  // The kernel reads and writes every rank's input and output in place: its
  // second parameter (abi::Peers) holds them, so all ranks must be this process's.
  bool symmetric = false;
  // Signals and packets at GPU scope: every rank must run on one GPU.
  bool gpu_scope = false;
  // A stream role's steps in order (empty: one launch of `name`): k >= 0
  // launches kernel `name`_k, k < 0 copies every unit of phase -k - 1 by the
  // copy engine (cudaMemcpyAsync on the rank's stream).
  std::vector<int> stream;
};

// Per rank, the device counts of a call (see KernelSpec::count_words): its
// counts and where the counts it receives go (0: nowhere). Empty: none.
struct CallCounts {
  std::vector<uintptr_t> counts, recv;
};

namespace detail {

// The ranks one process drives, whichever communicator holds them: the
// kernel loaded and checked against their GPUs, each rank's symmetric
// memory, device state and parameter, launches and timeout reports.
class Executor {
 public:
  struct Rank {
    int rank = 0;
    int device = 0;
    char* symmetric = nullptr;  // buffers, packet windows and signal slots, one allocation
    char* state = nullptr;      // block epochs, the error claim, arrival counters
    int64_t* tables = nullptr;  // this rank's, in global memory
    abi::Header params{};       // the kernel's parameter
    // The buffers (input, output, counts, received counts) and bytes that last
    // passed check_pointer: an eager caller passes the same ones each call,
    // which then cost no driver queries.
    std::array<std::pair<uintptr_t, int64_t>, 4> checked{};
    cudaStream_t side = nullptr;  // for a rank whose caller's stream another rank uses
    cudaEvent_t fork = nullptr, join = nullptr;
  };

  Executor(KernelSpec spec, double timeout_s, std::string name);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Refuses a missing GPU, one of another generation than the kernel, or a
  // GPU that cannot hold all the grids of the ranks it hosts at once.
  void check_devices(const std::vector<int>& devices);
  // Room after each rank's symmetric memory, in the same allocation, for the
  // record of its call's buffer offsets (one rank per process, symmetric:
  // abi::Header::record_at); before allocate().
  void reserve_record();
  // Where the record sits in a rank's allocation (0: none).
  int64_t record_at() const { return record_at_; }
  // Allocates and zeroes every (rank, device)'s symmetric memory and state.
  void allocate(const std::vector<Rank>& ranks);
  // Fills every local rank's parameter; `symmetric[r]` is rank r's
  // allocation as this process addresses it.
  void upload(const std::vector<char*>& symmetric);
  // One launch per local rank, after the pointer checks; no host sync. A
  // symmetric kernel whose ranks are not all local takes every rank's input,
  // then output, as this process addresses them (`peers`), and this call's
  // keys of the buffers in their heaps (DeviceHeap::serial).
  void run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
           const std::vector<uintptr_t>& streams, const CallCounts& counts, const std::vector<char*>& peers = {},
           int64_t input_at = 0, int64_t output_at = 0);
  // The launch of local rank `local` alone, on `stream` (ranks' launches may
  // come from several threads at once, one each); no host sync.
  void launch(size_t local, uintptr_t input, uintptr_t output, uintptr_t stream);
  // Launches `name` of `cubins[i]` for local rank i from the next call on:
  // the same kernel with that rank's tables compiled in
  // (CudaProgram.specialised), so the same protocol over the same memory; one
  // kernel per rank, so that none carries the other ranks' bodies. The kernel
  // it replaces stays loaded for graphs captured with it. Loading waits for
  // the kernels running: every rank's launch of the calls before must have
  // been issued.
  void specialise(const std::vector<std::string>& cubins, const std::string& name);
  // Another binding of the kernel's counts (purlin.compile.DeviceCountsCollective.bind_collective:
  // the same code, signals and memory): every rank's tables and buffer bytes, the local
  // ranks' tables uploaded once now; returns its number (the spec's own is 0). Refused once
  // specialised (the tables it was compiled with are assumed) and beyond the shared memory
  // the kernel was checked with.
  int add_binding(const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& input_bytes,
                  const std::vector<int64_t>& output_bytes, int smem);
  // Launches with binding `id` from the next call on (graphs captured before keep theirs).
  void use_binding(int id);
  // Waits for every local GPU and raises TimeoutError for recorded timeouts.
  void synchronize();
  uint64_t epoch(size_t local);
  void release();

  const KernelSpec& spec() const { return spec_; }
  const std::string& name() const { return name_; }
  // Whether calls launch as programmatic dependents (check_devices, specialise).
  bool programmatic() const { return programmatic_; }
  // Programmatic launch allowed (the default) or not, from the next call on;
  // it takes effect where two grids of every rank fit. Returns programmatic().
  bool allow_programmatic(bool allow) {
    allow_programmatic_ = allow;
    programmatic_ = allow && fits_twice_;
    return programmatic_;
  }
  const std::vector<Rank>& ranks() const { return ranks_; }

 private:
  void check_recorded_errors();
  // Step `step` of rank `local`'s stream program (KernelSpec::stream) on `s`;
  // `peers` holds every rank's input, then every rank's output.
  void run_step(size_t local, int step, const std::vector<char*>& peers, abi::Header& h, cudaStream_t s);
  // Refuses a buffer that is not `bytes` of device memory of r's GPU, 16-byte
  // aligned; `slot` indexes Rank::checked.
  void check_pointer(Rank& r, int slot, uintptr_t ptr, int64_t bytes, const char* what) const;
  int64_t state_bytes() const;
  // Launches kernel k of the spec's shape on s, a programmatic dependent where programmatic_.
  void launch_kernel(cudaKernel_t k, void** args, cudaStream_t s, const std::string& what) const;
  // The kernel, or a stream program's step kernels, the first of them first.
  std::vector<cudaKernel_t> kernels() const;
  // The kernel local rank `local` launches: its specialised one, else the kernel.
  cudaKernel_t kernel_of(size_t local) const { return rank_kernels_.empty() ? kernel_ : rank_kernels_[local]; }

  static constexpr int64_t kRecordBytes = 256;  // an abi::BufferRecord, padded

  // One binding's tables on each local rank's GPU (binding 0's are Rank::tables) and buffer bytes.
  struct Binding {
    std::vector<int64_t*> tables;
    std::vector<int64_t> words;
    std::vector<int64_t> input_bytes, output_bytes;
  };

  KernelSpec spec_;
  std::vector<Binding> bindings_;
  std::vector<char*> symmetric_;  // every rank's allocation as this process addresses it (upload's)
  bool specialised_ = false;
  // A single kernel for sm_90 on, whose ranks' grids fit twice on each GPU:
  // each call may start while the one ahead of it on the stream still runs
  // (programmatic dependent launch), waiting on the device instead.
  bool programmatic_ = false;
  bool fits_twice_ = false, allow_programmatic_ = true;
  int64_t record_at_ = 0;
  uint64_t timeout_ns_;
  std::string name_;
  cudaLibrary_t library_ = nullptr;
  std::vector<cudaLibrary_t> replaced_;  // by specialise(), for graphs that launch their kernels
  cudaKernel_t kernel_ = nullptr;
  std::vector<cudaLibrary_t> rank_libraries_;  // specialise()'s, one per local rank
  std::vector<cudaKernel_t> rank_kernels_;
  std::map<int, cudaKernel_t> stream_kernels_;  // a stream program's, by step
  std::vector<Rank> ranks_;
  abi::ErrorRecord* errors_ = nullptr;  // host-mapped: one record per local rank, then the abort flag
  std::atomic<bool> failed_{false};
};

}  // namespace detail

// One process drives every rank; `devices[r]` is rank r's GPU, and a GPU may
// be listed several times (every pair of distinct GPUs needs peer access).
class Communicator {
 public:
  Communicator(KernelSpec spec, std::vector<int> devices, double timeout_s, std::string name);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Launches every rank's kernel: on streams[r], or, where an earlier rank
  // already uses that stream, on the rank's own stream forked from and joined
  // back into it. No host sync, so it can be captured into CUDA graphs.
  void run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
           const std::vector<uintptr_t>& streams, const CallCounts& counts = {});
  // Launches rank `rank`'s kernel alone on `stream`, for callers that drive
  // each GPU from its own thread (XLA's devices); every rank must be launched
  // once per call. A symmetric kernel, which needs every rank's buffers at
  // once, is refused.
  void run_rank(int rank, uintptr_t input, uintptr_t output, uintptr_t stream);
  void specialise(const std::vector<std::string>& cubins, const std::string& name) { exec_.specialise(cubins, name); }
  int add_binding(const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& input_bytes,
                  const std::vector<int64_t>& output_bytes, int smem) {
    return exec_.add_binding(tables, input_bytes, output_bytes, smem);
  }
  void use_binding(int id) { exec_.use_binding(id); }
  void synchronize() { exec_.synchronize(); }
  uint64_t epoch(int rank);
  int world() const { return exec_.spec().world; }
  bool programmatic() const { return exec_.programmatic(); }
  bool allow_programmatic(bool allow) { return exec_.allow_programmatic(allow); }

 private:
  void enable_peer_access(const std::vector<int>& devices);

  detail::Executor exec_;
};

// Device memory of one rank that every rank of its process group maps
// (CUDA IPC): where the buffers of symmetric kernels whose ranks are in other
// processes lie. ipc_handle() from every rank, gathered in rank order, goes
// to connect(); any number of communicators of the group may share it.
class DeviceHeap {
 public:
  // `bytes` of memory of its own, freed with it.
  DeviceHeap(int rank, int world, int device, int64_t bytes, std::string name);
  // Registered: the caller's `bytes` at `memory` (inside a cudaMalloc
  // allocation, e.g. a torch tensor's), which the caller keeps and frees.
  DeviceHeap(int rank, int world, int device, uintptr_t memory, int64_t bytes, std::string name);
  // Peers must be done with this rank's memory (e.g. after a barrier).
  ~DeviceHeap();
  DeviceHeap(const DeviceHeap&) = delete;
  DeviceHeap& operator=(const DeviceHeap&) = delete;

  const std::string& ipc_handle() const { return handle_; }
  void connect(const std::vector<std::string>& handles);
  // This rank's memory, and every rank's as this process addresses it (after connect).
  uintptr_t base() const { return reinterpret_cast<uintptr_t>(memory_); }
  const std::vector<char*>& bases() const { return bases_; }
  int64_t bytes() const { return bytes_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  int device() const { return device_; }
  const std::string& name() const { return name_; }
  bool connected() const { return !bases_.empty(); }
  bool registered() const { return !owned_; }
  // The heap's number, the same on every rank once connected and distinct
  // among the heaps of a group made in the same order on every rank: a
  // buffer's key in a kernel's record is (serial << kSerialShift) + offset.
  uint64_t serial() const { return serial_; }
  static constexpr int kSerialShift = 40;

 private:
  void export_handle(char* allocation);

  int rank_, world_, device_;
  int64_t bytes_;
  std::string name_;
  char* memory_ = nullptr;
  bool owned_ = true;
  uint64_t serial_ = 0;
  std::string handle_;
  std::vector<char*> peers_;  // opened IPC mappings, by rank; null for this rank
  std::vector<char*> bases_;
};

// One rank in this process; the other ranks live in other processes of the
// same node. ipc_handle() from every rank, gathered in rank order, goes to
// connect() before the first run(). A symmetric kernel reads and writes the
// peers' buffers in place: every rank's lie in one of its `heaps`, the same
// heap at the same offsets on every rank in each call, which the kernel
// checks before it touches them.
class ProcessCommunicator {
 public:
  ProcessCommunicator(KernelSpec spec, int rank, int device, double timeout_s, std::string name,
                      std::vector<std::shared_ptr<DeviceHeap>> heaps = {});
  // Peers must be done with this rank's memory (e.g. after a barrier).
  ~ProcessCommunicator();
  ProcessCommunicator(const ProcessCommunicator&) = delete;
  ProcessCommunicator& operator=(const ProcessCommunicator&) = delete;

  // Opaque: a format tag, the rank, world, kernel fingerprint, allocation
  // size and the CUDA IPC handle of this rank's symmetric memory.
  const std::string& ipc_handle() const { return handle_; }
  void connect(const std::vector<std::string>& handles);
  void run(uintptr_t input, uintptr_t output, uintptr_t stream, uintptr_t counts = 0, uintptr_t recv_counts = 0);
  void specialise(const std::vector<std::string>& cubins, const std::string& name) { exec_.specialise(cubins, name); }
  int add_binding(const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& input_bytes,
                  const std::vector<int64_t>& output_bytes, int smem) {
    return exec_.add_binding(tables, input_bytes, output_bytes, smem);
  }
  void use_binding(int id) { exec_.use_binding(id); }
  void synchronize() { exec_.synchronize(); }
  uint64_t epoch() { return exec_.epoch(0); }
  int rank() const { return rank_; }
  int world() const { return exec_.spec().world; }
  bool programmatic() const { return exec_.programmatic(); }
  bool allow_programmatic(bool allow) { return exec_.allow_programmatic(allow); }

 private:
  std::string export_handle() const;
  // The heap buffer `ptr` of `bytes` sits in and its key there (DeviceHeap::serial); refuses one outside them.
  std::pair<const DeviceHeap*, int64_t> heap_key(uintptr_t ptr, int64_t bytes, const char* what) const;

  detail::Executor exec_;
  int rank_;
  int device_;
  uint64_t fingerprint_;
  std::string handle_;
  std::vector<char*> peers_;  // opened IPC mappings, by rank; null for this rank
  std::vector<std::shared_ptr<DeviceHeap>> heaps_;  // symmetric kernels: where every rank's buffers lie
  bool connected_ = false;
};

}  // namespace purlin::cuda
