#include "cpu/workers.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <ctime>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "cpu/park.h"

namespace purlin::cpu {

void futex_wait(const std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  const auto ns = timeout.count() > 0 ? timeout.count() : 0;
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  // Shared (not FUTEX_PRIVATE): the word may sit in memory mapped by several processes.
  ::syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAIT, expected, &ts, nullptr, 0);
}

void futex_wake_all(const std::atomic<uint32_t>& word) {
  ::syscall(SYS_futex, reinterpret_cast<const uint32_t*>(&word), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
}

namespace {

// Polls before a parked thread sleeps: a few, the cores being shared.
constexpr int kSpins = 64;

template <class Ready>
void await(const std::atomic<uint32_t>& word, uint32_t busy, const Ready& ready) {
  for (int n = 0; n < kSpins; ++n) {
    if (ready()) return;
    cpu_relax();
  }
  while (!ready()) futex_wait(word, busy, std::chrono::seconds(1));
}

struct Worker;

// What the tasks of one call share: how many are still running.
struct Call {
  Batch* batch;
  std::atomic<uint32_t> running{0};
};

struct Worker {
  std::atomic<uint32_t> go{0};  // 1 while a task is handed over
  Call* call = nullptr;
  int64_t task = 0;
};

// Idle workers. Leaked on purpose: parked threads outlive static destruction.
struct Pool {
  std::mutex mutex;
  std::vector<Worker*> idle;
};

Pool* pool() {
  static Pool* p = [] {
    auto* made = new Pool;
    // A forked child has none of the parent's threads: it starts a pool of its own.
    ::pthread_atfork([] { pool()->mutex.lock(); }, [] { pool()->mutex.unlock(); },
                     [] {
                       pool()->idle.clear();
                       pool()->mutex.unlock();
                     });
    return made;
  }();
  return p;
}

// The name `top -H`, gdb and /proc/<pid>/task/*/comm show for a pool thread.
constexpr const char* kThreadName = "purlin-role";

void serve(Worker* w) {
  ::pthread_setname_np(::pthread_self(), kThreadName);
  for (;;) {
    await(w->go, 0, [w] { return w->go.load(std::memory_order_acquire) == 1; });
    Call* call = w->call;
    const int64_t task = w->task;
    call->batch->run(task);
    w->go.store(0, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(pool()->mutex);
      pool()->idle.push_back(w);
    }
    // The last of the call wakes the caller, which may have returned by then: a
    // wake of a stale address is harmless (every wait re-checks its word).
    if (call->running.fetch_sub(1, std::memory_order_acq_rel) == 1) futex_wake_all(call->running);
  }
}

Worker* take() {
  Pool* p = pool();
  {
    std::lock_guard<std::mutex> lock(p->mutex);
    if (!p->idle.empty()) {
      Worker* w = p->idle.back();
      p->idle.pop_back();
      return w;
    }
  }
  auto* w = new Worker;
  try {
    std::thread(serve, w).detach();
  } catch (...) {
    delete w;
    throw;
  }
  return w;
}

}  // namespace

void run_together(Batch& batch, int64_t count) {
  Call call{&batch};
  for (int64_t k = 1; k < count; ++k) {
    Worker* w;
    try {
      w = take();
    } catch (const std::exception& e) {
      for (; k < count; ++k) batch.unstarted(k, e.what());
      break;
    }
    call.running.fetch_add(1, std::memory_order_relaxed);
    w->call = &call;
    w->task = k;
    w->go.store(1, std::memory_order_release);
    futex_wake_all(w->go);
  }
  if (count > 0) batch.run(0);
  for (int n = 0;; ++n) {
    const uint32_t left = call.running.load(std::memory_order_acquire);
    if (left == 0) return;
    if (n < kSpins) cpu_relax();
    else futex_wait(call.running, left, std::chrono::seconds(1));
  }
}

}  // namespace purlin::cpu
