#include "cpu/process.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>

namespace purlin::cpu {

namespace {

std::string os_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// Unique across processes (pid), communicators of a process (counter) and
// pid reuse after a crash left a name behind (random).
std::string unique_name(int64_t rank) {
  static std::atomic<uint64_t> counter{0};
  const uint64_t salt = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  char tail[32];
  std::snprintf(tail, sizeof(tail), "%016llx", static_cast<unsigned long long>(salt));
  return "/purlin-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1)) + "-r" +
         std::to_string(rank) + "-" + tail;
}

}  // namespace

ProcessCommunicator::ProcessCommunicator(Plan plan, int64_t rank, Options options, size_t heap_bytes,
                                         bool buffers_anywhere)
    : Executor(std::move(plan), std::move(options)), rank_(rank), maps_(plan_.world) {
  if (rank < 0 || rank >= plan_.world)
    throw std::out_of_range(options_.name + ": rank " + std::to_string(rank) + " is outside world " +
                            std::to_string(plan_.world));
  if (buffers_anywhere && !plan_.symmetric)
    throw std::invalid_argument(options_.name + ": buffers anywhere are for a symmetric plan (whose peers read and "
                                "write the ranks' buffers in place); this one stages its data");
  anywhere_ = buffers_anywhere;
  if (plan_.symmetric && !anywhere_ && heap_bytes < size_t(std::max(input_bytes(rank), output_bytes(rank))))
    throw std::invalid_argument(options_.name + ": the plan reads and writes other ranks' buffers in place "
                                "(symmetric), so rank " + std::to_string(rank) + "'s buffers must live in its "
                                "shared heap, but the heap of " + std::to_string(heap_bytes) +
                                " bytes cannot hold them");
  heap_bytes_ = heap_bytes;
  const size_t bytes = region_bytes();
  shm_name_ = unique_name(rank);
  const int fd = ::shm_open(shm_name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw std::runtime_error(os_error(options_.name + ": cannot create shared memory " + shm_name_));
  linked_ = true;
  const std::string what = std::to_string(bytes) + " bytes of shared memory " + shm_name_;
  void* addr = MAP_FAILED;
  std::string error;
  // Allocated now, not on first touch: a full /dev/shm is this error, not a SIGBUS mid-call.
  if (const int e = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes))) {
    errno = e;
    error = os_error(options_.name + ": cannot allocate " + what + " (is /dev/shm large enough?)");
  } else if ((addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED)
    error = os_error(options_.name + ": cannot map " + what);
  ::close(fd);
  if (!error.empty()) {
    unlink();
    throw std::runtime_error(error);
  }
  // The new bytes are zero; the atomics are created in them here, before any peer maps them.
  maps_[rank] = {addr, bytes};
  memory_[rank] = region(static_cast<unsigned char*>(addr), rank, true);
}

ProcessCommunicator::~ProcessCommunicator() { close(); }

void ProcessCommunicator::connect(const std::vector<std::string>& names) {
  if (!maps_[rank_].addr) throw std::runtime_error(options_.name + ": the communicator is closed");
  if (connected_) throw std::runtime_error(options_.name + ": rank " + std::to_string(rank_) + " is already connected");
  if (static_cast<int64_t>(names.size()) != plan_.world)
    throw std::invalid_argument(options_.name + ": the plan is for world " + std::to_string(plan_.world) + ", got " +
                                std::to_string(names.size()) + " shared memory names");
  if (names[rank_] != shm_name_)
    throw std::invalid_argument(options_.name + ": names[" + std::to_string(rank_) + "] is " + names[rank_] +
                                ", this rank's region is " + shm_name_);
  const size_t bytes = region_bytes();
  for (int64_t r = 0; r < plan_.world; ++r) {
    if (r == rank_) continue;
    const std::string peer = options_.name + ": rank " + std::to_string(r) + "'s shared memory " + names[r];
    const int fd = ::shm_open(names[r].c_str(), O_RDWR, 0);
    if (fd < 0) throw std::runtime_error(os_error("cannot open " + peer));
    struct stat st {};
    std::string error;
    if (::fstat(fd, &st) != 0) {
      error = os_error("cannot stat " + peer);
    } else if (static_cast<size_t>(st.st_size) != bytes) {
      error = peer + " has " + std::to_string(st.st_size) + " bytes, this plan's region has " +
              std::to_string(bytes) + " (do all ranks run the same plan, with heaps of one size?)";
    } else {
      void* addr = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (addr == MAP_FAILED) error = os_error("cannot map " + peer);
      else maps_[r] = {addr, bytes};
    }
    ::close(fd);
    if (!error.empty()) throw std::runtime_error(error);
    const RankMemory m = region(static_cast<unsigned char*>(maps_[r].addr), r, false);
    const RegionHeader& h = *m.header;
    if (h.magic != RegionHeader::kMagic || h.world != uint64_t(plan_.world) || h.rank != uint64_t(r) ||
        h.bytes != bytes)
      throw std::runtime_error(peer + " is not a purlin region of rank " + std::to_string(r) + " in world " +
                               std::to_string(plan_.world) + " (it holds world " + std::to_string(h.world) +
                               ", rank " + std::to_string(h.rank) + ")");
    memory_[r] = m;
    if (anywhere_) check_attach(r, peer);
  }
  connected_ = true;
}

void ProcessCommunicator::check_attach(int64_t r, const std::string& peer) const {
  const RegionHeader& h = *memory_[r].header;
  uint64_t magic = 0;
  const iovec mine{&magic, sizeof(magic)}, theirs{reinterpret_cast<void*>(h.self), sizeof(magic)};
  const ssize_t got = ::process_vm_readv(static_cast<pid_t>(h.pid), &mine, 1, &theirs, 1, 0);
  if (got != ssize_t(sizeof(magic)) || magic != RegionHeader::kMagic)
    throw std::runtime_error(
        (got < 0 ? os_error(peer + ": cross-memory attach to its process " + std::to_string(h.pid) + " is refused")
                 : peer + ": cross-memory attach to its process " + std::to_string(h.pid) +
                       " did not read its region") +
        "; buffers anywhere need process_vm_readv between the ranks' processes (the same user, and ptrace "
        "allowed: see /proc/sys/kernel/yama/ptrace_scope), else pass buffers from the shared heap (alloc)");
}

void ProcessCommunicator::unlink() {
  if (linked_) ::shm_unlink(shm_name_.c_str());
  linked_ = false;
}

void ProcessCommunicator::run(const void* input, void* output) {
  if (!maps_[rank_].addr) throw std::runtime_error(options_.name + ": the communicator is closed");
  if (!connected_)
    throw std::runtime_error(options_.name + ": rank " + std::to_string(rank_) +
                             " is not connected to its peers (connect first)");
  if (plan_.symmetric) {
    // Before any signal of the call: the peers read these after one of them.
    RegionHeader& h = *memory_[rank_].header;
    h.input_offset.store(anywhere_ ? reinterpret_cast<uint64_t>(input) : heap_offset(input, input_bytes(rank_), "input"),
                         std::memory_order_relaxed);
    h.output_offset.store(
        anywhere_ ? reinterpret_cast<uint64_t>(output) : heap_offset(output, output_bytes(rank_), "output"),
        std::memory_order_relaxed);
  }
  run_rank(rank_, input, output);
}

uint64_t ProcessCommunicator::heap_offset(const void* p, int64_t bytes, const char* what) const {
  const auto* at = static_cast<const unsigned char*>(p);
  const unsigned char* heap = memory_[rank_].heap;
  if (bytes == 0) return 0;
  if (at < heap || at + bytes > heap + heap_bytes_)
    throw std::invalid_argument(options_.name + ": rank " + std::to_string(rank_) + "'s " + what + " is not in its "
                                "shared heap: the plan is symmetric (its peers read and write the buffers in "
                                "place), so pass memory from the communicator's alloc()");
  return static_cast<uint64_t>(at - heap);
}

void ProcessCommunicator::close() {
  unlink();
  for (Mapping& m : maps_) {
    if (m.addr) ::munmap(m.addr, m.bytes);
    m = {};
  }
  for (RankMemory& m : memory_) m = {};
  connected_ = false;
}

}  // namespace purlin::cpu
