// One rank of a plan per process: this rank's role threads over its own
// region of POSIX shared memory and its peers' regions, mapped by name.
//
//   ProcessCommunicator c(plan, rank, options);  // creates this rank's region
//   ... exchange c.shm_name() with the peers ...
//   c.connect(names);                            // maps every rank's region
//   ... once every rank has connected: c.unlink() ...
//   c.run(input, output);                        // blocks until this rank is done
//
// Epochs, halves and timeouts are those of the threaded Communicator. A rank
// whose call fails flags it in every peer's region, so peers waiting on it
// stop at once instead of timing out.
#pragma once

#include <string>
#include <vector>

#include "cpu/communicator.h"

namespace purlin::cpu {

class ProcessCommunicator : public Executor {
 public:
  // `heap_bytes`: room after this rank's region for the buffers of a
  // symmetric plan, whose peers read and write them in place (every rank's
  // the same size). `buffers_anywhere`: a symmetric plan's buffers are any
  // memory of each rank's process instead, which its peers reach by
  // cross-memory attach (process_vm_readv / process_vm_writev: one copy, by
  // the kernel); connect checks that the system lets them.
  ProcessCommunicator(Plan plan, int64_t rank, Options options, size_t heap_bytes = 0,
                      bool buffers_anywhere = false);
  ~ProcessCommunicator();
  ProcessCommunicator(const ProcessCommunicator&) = delete;
  ProcessCommunicator& operator=(const ProcessCommunicator&) = delete;

  // The shared memory name of this rank's region, unique per communicator.
  const std::string& shm_name() const { return shm_name_; }
  // Maps names[r], rank r's region, for every peer; names[rank] is this one's.
  void connect(const std::vector<std::string>& names);
  // Removes this region's name: mappings outlive it, and no crash leaks it afterwards.
  void unlink();
  // One call of this rank: `input` / `output` hold at least input_bytes(rank) /
  // output_bytes(rank) bytes, inside the heap for a symmetric plan (unless its
  // buffers are anywhere). Throws
  // CollectiveTimeout as Communicator::run does.
  void run(const void* input, void* output);
  // This rank's heap, where a symmetric plan's buffers go.
  unsigned char* heap() const { return memory_[rank_].heap; }
  size_t heap_bytes() const { return heap_bytes_; }
  // Flags a failed call of this rank in every peer's region, so that a peer
  // waiting in a call of this communicator stops at once (as when this rank's
  // own call fails): how a rank that finds its peers made another call stops them.
  void stop() { flag_failure(rank_, false); }
  // Unmaps every region (and unlinks this one); run refuses afterwards.
  void close();

  int64_t rank() const { return rank_; }

 private:
  struct Mapping {
    void* addr = nullptr;
    size_t bytes = 0;
  };
  // Buffers anywhere: that this process may read rank r's (`peer` names it in errors).
  void check_attach(int64_t r, const std::string& peer) const;
  // Where `p` (bytes of it) sits in this rank's heap; invalid_argument naming `what` when outside.
  uint64_t heap_offset(const void* p, int64_t bytes, const char* what) const;

  int64_t rank_;
  std::string shm_name_;
  bool linked_ = false, connected_ = false;
  std::vector<Mapping> maps_;  // by rank
};

}  // namespace purlin::cpu
