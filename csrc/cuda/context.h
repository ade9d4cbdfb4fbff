// Single-process, multi-GPU execution of a plan: one rank per device, peer
// access between all of them, symmetric memory allocated per rank.
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

class Communicator {
 public:
  Communicator(const int64_t* plan_words, int64_t n_words, std::vector<int> devices, double timeout_s,
               std::string name);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // Launches one kernel per rank on that rank's stream; no host sync, so it
  // can be captured into CUDA graphs. Pointers are device addresses.
  void run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
           const std::vector<uintptr_t>& streams);
  // Waits for every device and raises TimeoutError for recorded timeouts.
  void synchronize();
  uint64_t epoch(int rank);
  int world() const { return static_cast<int>(devices_.size()); }

 private:
  struct Rank {
    int device = 0;
    char* symmetric = nullptr;  // buffers and signal arrays, one allocation
    EpochState* state = nullptr;
    char* plan_blob = nullptr;  // DevPlan and its tables
  };

  void release();
  void check_plan_for_devices();
  void allocate();
  void upload_plans();
  void check_occupancy();
  void check_recorded_errors();
  void check_pointer(int rank, uintptr_t ptr, int64_t bytes, const char* what) const;

  Plan plan_;
  std::vector<int> devices_;
  uint64_t timeout_ns_;
  std::string name_;
  std::vector<Rank> ranks_;
  std::vector<int64_t> buffer_offsets_;  // within each rank's symmetric allocation
  std::vector<int64_t> signal_offsets_;
  int64_t symmetric_bytes_ = 0;
  int grid_ = 0;
  int smem_bytes_ = 0;
  ErrorRecord* errors_ = nullptr;  // host-mapped: world records, then the abort flag
  bool failed_ = false;
};

}  // namespace purlin::cuda
