// Every rank of a plan in this process, each rank called on its own by a
// thread of the caller's (one thread per device, as XLA runs the devices of a
// program): a call runs that rank's role threads, which meet the peers' in
// host memory that every rank of the communicator shares.
//
//   RankCommunicator c(plan, options);
//   // on rank r's thread, call after call:
//   c.run(r, input, output);     // blocks until rank r's part is done
//
// Epochs, halves and timeouts are those of the threaded Communicator; a
// rank's calls are made one at a time, and every rank makes the same calls in
// the same order. A rank whose call fails flags it in every peer's region (as
// ProcessCommunicator does), so peers waiting on it stop at once.
#pragma once

#include <memory>
#include <vector>

#include "cpu/communicator.h"

namespace purlin::cpu {

class RankCommunicator {
 public:
  // Refuses (std::invalid_argument) a symmetric plan: its peers would address
  // the ranks' buffers through a shared heap, and callers' buffers are their own.
  RankCommunicator(Plan plan, Options options);
  ~RankCommunicator();
  RankCommunicator(const RankCommunicator&) = delete;
  RankCommunicator& operator=(const RankCommunicator&) = delete;

  // One call of rank `rank`: `input` / `output` hold at least input_bytes(rank)
  // / output_bytes(rank) bytes. Safe to call for different ranks at once.
  // Throws CollectiveTimeout when a spin times out; the communicator is then unusable.
  void run(int64_t rank, const void* input, void* output);

  int64_t world() const;
  int64_t input_bytes(int64_t rank) const;
  int64_t output_bytes(int64_t rank) const;
  int64_t epoch(int64_t rank) const;

 private:
  class Rank;
  struct Free {
    void operator()(unsigned char* p) const;
  };
  Rank& rank(int64_t r) const;

  std::vector<std::unique_ptr<unsigned char[], Free>> regions_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

}  // namespace purlin::cpu
