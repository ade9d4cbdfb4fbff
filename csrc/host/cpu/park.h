// Waiting on the CPU backend: spin briefly, then sleep in the kernel (a
// futex) until a peer rings. Ranks and roles outnumber the cores, so a waiter
// that keeps spinning takes the core from the thread it waits for.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace purlin::cpu {

// Sleep while `word` holds `expected`, at most `timeout`; returns early on a
// wake or a changed value. Works on shared mappings across processes.
void futex_wait(const std::atomic<uint32_t>& word, uint32_t expected, std::chrono::nanoseconds timeout);
void futex_wake_all(const std::atomic<uint32_t>& word);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// An event count: what a rank's waiters sleep on while a peer's store they
// wait for has not come. The notifier stores, then rings; the waiter
// announces itself, reads the count, re-checks, then sleeps on the count.
// Both sides' seq_cst fences order the announcement against the store, so a
// ring is a syscall only while someone sleeps.
struct Doorbell {
  std::atomic<uint32_t> count{0};
  std::atomic<uint32_t> sleepers{0};

  void ring() {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_relaxed) == 0) return;
    count.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(count);
  }

  // Sleeps until rung (or `timeout`) unless `ready()` holds once announced.
  template <class Ready>
  void sleep_unless(const Ready& ready, std::chrono::nanoseconds timeout) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    const uint32_t seen = count.load(std::memory_order_seq_cst);
    if (!ready()) futex_wait(count, seen, timeout);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
  }
};

}  // namespace purlin::cpu
