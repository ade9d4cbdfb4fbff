// Execution of a plan on GPUs with peer access: either one process driving
// one GPU per rank (Communicator), or one process per rank with the symmetric
// memory exchanged as CUDA IPC handles (ProcessCommunicator, as under torchrun).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "device_plan.h"
#include "purlin/plan.h"

namespace purlin::cuda {

// A wait on a signal or packet that did not arrive within the timeout.
class TimeoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA call that failed, or a device that cannot run the plan.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {

// The ranks one process drives, whichever communicator holds them: the plan
// checked against their GPUs, the symmetric layout (identical on every rank,
// so one rank's offsets hold for all), per-rank device state and pointer
// tables, launches and timeout reports.
class Executor {
 public:
  struct Rank {
    int rank = 0;
    int device = 0;
    char* symmetric = nullptr;  // buffers, packet windows and signal arrays, one allocation
    EpochState* state = nullptr;
    char* plan_blob = nullptr;  // the device tables DevPlan points to
    DevPlan dev_plan{};         // the kernel's parameter
  };

  Executor(const int64_t* plan_words, int64_t n_words, double timeout_s, std::string name);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Refuses a device that is missing, of another generation than the plan, or
  // too small to hold all of the plan's blocks at once; picks the kernel variant.
  void check_device(int device);
  // Allocates and zeroes the symmetric memory and epoch state of each
  // (rank, device), and one error record per rank.
  void allocate(const std::vector<Rank>& ranks);
  // Builds and uploads every local rank's plan; `symmetric[r]` is rank r's
  // allocation as this process addresses it.
  void upload(const std::vector<char*>& symmetric);
  // One launch per local rank, after the pointer checks; no host sync.
  void run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
           const std::vector<uintptr_t>& streams);
  // Waits for every local GPU and raises TimeoutError for recorded timeouts.
  void synchronize();
  uint64_t epoch(size_t local);
  void release();

  const Plan& plan() const { return plan_; }
  const std::string& name() const { return name_; }
  const std::vector<Rank>& ranks() const { return ranks_; }
  int64_t symmetric_bytes() const { return symmetric_bytes_; }

 private:
  void check_plan();
  void lay_out();
  void check_recorded_errors();
  void check_pointer(const Rank& r, uintptr_t ptr, int64_t bytes, const char* what) const;

  Plan plan_;
  uint64_t timeout_ns_;
  std::string name_;
  std::vector<Rank> ranks_;
  std::vector<int64_t> buffer_offsets_;  // within each rank's symmetric allocation
  std::vector<int64_t> signal_offsets_;
  int64_t symmetric_bytes_ = 0;
  int grid_ = 0;
  int smem_bytes_ = 0;
  const void* kernel_ = nullptr;  // the variant every checked device holds the grid of
  ErrorRecord* errors_ = nullptr;  // host-mapped: one record per local rank, then the abort flag
  bool failed_ = false;
};

}  // namespace detail

// One process, one GPU per rank, peer access between all of them.
class Communicator {
 public:
  Communicator(const int64_t* plan_words, int64_t n_words, std::vector<int> devices, double timeout_s,
               std::string name);
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Launches one kernel per rank on that rank's stream; no host sync, so it
  // can be captured into CUDA graphs. Pointers are device addresses.
  void run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
           const std::vector<uintptr_t>& streams);
  // Waits for every device and raises TimeoutError for recorded timeouts.
  void synchronize() { exec_.synchronize(); }
  uint64_t epoch(int rank);
  int world() const { return static_cast<int>(exec_.plan().world); }

 private:
  void enable_peer_access(const std::vector<int>& devices);

  detail::Executor exec_;
};

// One rank of a plan in this process; the other ranks live in other processes
// of the same node. ipc_handle() from every rank, gathered in rank order,
// goes to connect() before the first run().
class ProcessCommunicator {
 public:
  ProcessCommunicator(const int64_t* plan_words, int64_t n_words, int rank, int device, double timeout_s,
                      std::string name);
  // Peers must be done with this rank's memory (e.g. after a barrier).
  ~ProcessCommunicator();
  ProcessCommunicator(const ProcessCommunicator&) = delete;
  ProcessCommunicator& operator=(const ProcessCommunicator&) = delete;

  // Opaque: a format tag, the rank, world, plan fingerprint, allocation size
  // and the CUDA IPC handle of this rank's symmetric memory.
  const std::string& ipc_handle() const { return handle_; }
  // Maps every peer's symmetric memory and uploads this rank's plan.
  void connect(const std::vector<std::string>& handles);
  // Launches this rank's kernel on `stream`; no host sync (capturable).
  void run(uintptr_t input, uintptr_t output, uintptr_t stream);
  void synchronize() { exec_.synchronize(); }
  uint64_t epoch() { return exec_.epoch(0); }
  int rank() const { return rank_; }
  int world() const { return static_cast<int>(exec_.plan().world); }

 private:
  std::string export_handle() const;
  void close_peers();

  detail::Executor exec_;
  int rank_;
  int device_;
  uint64_t plan_hash_;
  std::string handle_;
  std::vector<char*> peers_;  // opened IPC mappings, by rank; null for this rank
  bool connected_ = false;
};

}  // namespace purlin::cuda
