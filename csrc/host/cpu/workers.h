// Threads that run the roles of the CPU backend's calls, kept parked between
// calls (a thread started per role and call costs more than a small call).
// One pool per process, shared by every communicator: it holds as many
// threads as calls have needed at once, not one set per communicator.
#pragma once

#include <cstdint>

namespace purlin::cpu {

// The tasks of one call, which must all run at once (roles wait for each
// other): run(k) for k in [0, count) on distinct threads, task 0 on the
// caller's. Returns when every task has returned. A thread that cannot be
// started leaves its task unrun and is reported by `unstarted(k, why)`
// (called on the caller's thread before task 0 runs).
class Batch {
 public:
  virtual ~Batch() = default;
  virtual void run(int64_t k) = 0;
  virtual void unstarted(int64_t k, const char* why) = 0;
};

void run_together(Batch& batch, int64_t count);

}  // namespace purlin::cpu
