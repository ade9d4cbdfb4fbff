#include "cpu/communicator.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <sstream>
#include <tuple>

#include "cpu/dtype.h"
#include "cpu/park.h"
#include "cpu/stream.h"
#include "cpu/workers.h"

namespace purlin::cpu {

namespace {

int64_t packets_for(int64_t elems, int64_t per_packet) { return (elems + per_packet - 1) / per_packet; }
// The packets a put or wait_packets moves: at least one, so that an empty
// unit still carries the call's flag (PhasePlan.empty_units).
int64_t packets_moved(int64_t elems, int64_t per_packet) {
  return std::max<int64_t>(packets_for(elems, per_packet), 1);
}

// State shared by the threads of one call: the first failure stops them all.
struct CallState {
  std::atomic<bool> abort{false};
  std::mutex mutex;
  std::string error;
  bool timed_out = false;
  const std::atomic<uint64_t>* peer_failed = nullptr;  // RegionHeader::failed of a rank run by processes

  void fail(const std::string& message, bool timeout) {
    std::lock_guard<std::mutex> lock(mutex);
    if (error.empty()) {
      error = message;
      timed_out = timeout;
    }
    abort.store(true, std::memory_order_relaxed);
  }
};

// Thrown inside a thread to unwind once the call was stopped.
struct Stopped {};

// What RegionHeader::failed holds: which rank failed, and whether it timed out.
std::string peer_failure(uint64_t failed) {
  return "rank " + std::to_string(failed / 2 - 1) + "'s call " + (failed % 2 ? "timed out" : "failed");
}

constexpr size_t kAlign = 64;
size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Both halves of a buffer: bytes of staging, packets of a window.
size_t staging_bytes(const Buffer& b, int64_t elem_bytes) { return 2 * b.slots * b.elems * elem_bytes; }
int64_t window_packets(const Buffer& b, int64_t per_packet) { return 2 * b.slots * packets_for(b.elems, per_packet); }

}  // namespace

// The instructions of one (rank, role), run on one thread.
class RoleThread {
 public:
  RoleThread(Executor& c, CallState& state, int64_t rank, int64_t role,
             const std::vector<const void*>& inputs, const std::vector<void*>& outputs)
      : c_(c), p_(c.plan_), state_(state), rank_(rank), role_(role), inputs_(inputs), outputs_(outputs),
        epoch_(c.epoch_[rank]), prev_(c.prev_[rank]), half_(epoch_ % 2),
        eb_(p_.elem_bytes()), pe_(c.packet_elems_),
        timeout_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(c.options_.timeout_s))) {}

  void run() {
    try {
      int64_t count;
      body_ = p_.program(rank_, role_, &count);
      for (n_ = 0; n_ < count; ++n_) execute(body_[n_]);
    } catch (const Stopped&) {
    } catch (const std::exception& e) {
      fail(c_.options_.name + ": " + here() + ": " + e.what(), false);
    }
  }

 private:
  // A place in memory: plain bytes, or elements inside a packet window.
  struct Place {
    unsigned char* bytes = nullptr;
    Packet* packets = nullptr;
    int64_t first = 0;  // element index inside the window slot
    // A peer's buffer reached by cross-memory attach: its process and the address there.
    pid_t pid = 0;
    uint64_t remote = 0;
  };

  std::string here() const {
    return "rank " + std::to_string(rank_) + " role " + std::to_string(role_) + " (" +
           role_name(p_.roles[role_].kind) + ") instruction " + std::to_string(n_) + " (" + op_name(body_[n_].op) +
           ")";
  }

  Packet* window(int64_t owner, int64_t buf, int64_t slot) const {
    const Buffer& b = p_.buffers[buf];
    return c_.memory_[owner].windows[buf] + (half_ * b.slots + slot) * packets_for(b.elems, pe_);
  }

  Place place(const Ref& r) const {
    switch (r.space) {
      // A symmetric plan names other ranks' buffers (check_programs allows no other).
      case Space::Input:
        return user_place(r.rank, inputs_[r.rank], &RegionHeader::input_offset, r.offset);
      case Space::Output:
        return user_place(r.rank, outputs_[r.rank], &RegionHeader::output_offset, r.offset);
      case Space::Staging: {
        const Buffer& b = p_.buffers[r.buf];
        return {c_.memory_[r.rank].staging[r.buf] + ((half_ * b.slots + r.slot) * b.elems + r.offset) * eb_};
      }
      case Space::Window:
        return {nullptr, window(r.rank, r.buf, r.slot), r.offset};
    }
    return {};
  }

  // Element `elem` of rank `rank`'s buffer: given to this call, or (a peer in
  // another process) where that rank's header says this call's sits, in its
  // heap or its process; read after one of its signals, stored after the place.
  Place user_place(int64_t rank, const void* given, std::atomic<uint64_t> RegionHeader::*at, int64_t elem) const {
    if (given) return {static_cast<unsigned char*>(const_cast<void*>(given)) + elem * eb_};
    const RankMemory& m = c_.memory_[rank];
    const uint64_t where = (m.header->*at).load(std::memory_order_relaxed);
    if (c_.anywhere_) {
      Place p;
      p.pid = static_cast<pid_t>(m.header->pid);
      p.remote = where + uint64_t(elem * eb_);
      return p;
    }
    return {m.heap + where + elem * eb_};
  }

  // `bytes` between this process's `local` and `remote` in process `pid`: one
  // copy by the kernel, repeated where it moved less.
  void cross(pid_t pid, unsigned char* local, uint64_t remote, int64_t bytes, bool to_peer) const {
    while (bytes > 0) {
      const iovec mine{local, size_t(bytes)}, theirs{reinterpret_cast<void*>(remote), size_t(bytes)};
      const ssize_t moved = to_peer ? ::process_vm_writev(pid, &mine, 1, &theirs, 1, 0)
                                    : ::process_vm_readv(pid, &mine, 1, &theirs, 1, 0);
      if (moved <= 0)
        throw std::runtime_error(std::string("cannot ") + (to_peer ? "write into" : "read from") +
                                 " the buffer of process " + std::to_string(pid) + " by cross-memory attach: " +
                                 (moved < 0 ? std::strerror(errno) : "nothing moved"));
      local += moved;
      remote += uint64_t(moved);
      bytes -= moved;
    }
  }

  // Elements [at, at + n) of `src` into contiguous `out`: a packet's data
  // word at a time, a partial packet at either end.
  void read(const Place& src, int64_t at, int64_t n, unsigned char* out) const {
    if (src.bytes) {
      std::memcpy(out, src.bytes + at * eb_, n * eb_);
      return;
    }
    if (src.pid) {
      cross(src.pid, out, src.remote + uint64_t(at * eb_), n * eb_, false);
      return;
    }
    const int64_t e = src.first + at, within = e % pe_;
    const Packet* packet = src.packets + e / pe_;
    if (within) {
      const int64_t m = std::min(pe_ - within, n);
      const uint64_t word = packet->data.load(std::memory_order_relaxed);
      std::memcpy(out, reinterpret_cast<const unsigned char*>(&word) + within * eb_, m * eb_);
      out += m * eb_;
      n -= m;
      ++packet;
    }
    for (; n >= pe_; n -= pe_, out += kPacketDataBytes, ++packet) {
      const uint64_t word = packet->data.load(std::memory_order_relaxed);
      std::memcpy(out, &word, kPacketDataBytes);
    }
    if (n > 0) {
      const uint64_t word = packet->data.load(std::memory_order_relaxed);
      std::memcpy(out, &word, n * eb_);
    }
  }

  void write(const Place& dst, int64_t at, int64_t n, const unsigned char* in) const {
    if (dst.bytes) {
      std::memmove(dst.bytes + at * eb_, in, n * eb_);
      return;
    }
    if (dst.pid) {
      cross(dst.pid, const_cast<unsigned char*>(in), dst.remote + uint64_t(at * eb_), n * eb_, true);
      return;
    }
    const int64_t e = dst.first + at, within = e % pe_;
    Packet* packet = dst.packets + e / pe_;
    // A part of a packet keeps the rest of its word.
    const auto part = [&](int64_t first, int64_t m) {
      uint64_t word = packet->data.load(std::memory_order_relaxed);
      std::memcpy(reinterpret_cast<unsigned char*>(&word) + first * eb_, in, m * eb_);
      packet->data.store(word, std::memory_order_relaxed);
      in += m * eb_;
      n -= m;
      ++packet;
    };
    if (within) part(within, std::min(pe_ - within, n));
    for (; n >= pe_; n -= pe_, in += kPacketDataBytes, ++packet) {
      uint64_t word;
      std::memcpy(&word, in, kPacketDataBytes);
      packet->data.store(word, std::memory_order_relaxed);
    }
    if (n > 0) part(0, n);
  }

  // Where elements [at, at + n) of `p` can be read in place (plain bytes), or
  // gathered into `scratch`.
  const unsigned char* view(const Place& p, int64_t at, int64_t n, unsigned char* scratch) const {
    if (p.bytes) return p.bytes + at * eb_;
    read(p, at, n, scratch);
    return scratch;
  }

  // Wait until `a` >= target: polls first, then sleeps on this rank's
  // doorbell, which peers ring after their stores (and on a failure).
  template <class Describe>
  void spin(const std::atomic<uint64_t>& a, uint64_t target, const Describe& describe) {
    if (a.load(std::memory_order_relaxed) >= target) return;
    for (int n = 0; n < kPolls; ++n) {
      cpu_relax();
      if (a.load(std::memory_order_relaxed) >= target) return;
    }
    Doorbell& bell = c_.memory_[rank_].header->bell;
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const uint64_t have = a.load(std::memory_order_relaxed);
      if (have >= target) return;
      if (state_.abort.load(std::memory_order_relaxed)) throw Stopped{};
      if (const uint64_t failed = state_.peer_failed ? state_.peer_failed->load(std::memory_order_relaxed) : 0) {
        // The peer will not signal again: stop now rather than time out.
        fail(c_.options_.name + ": " + here() + " stopped: " + peer_failure(failed) + " (epoch " +
                 std::to_string(epoch_) + ")",
             failed % 2);
        throw Stopped{};
      }
      const auto waited = std::chrono::steady_clock::now() - start;
      if (waited > timeout_) {
        std::ostringstream msg;
        msg << c_.options_.name << ": " << here() << " timed out after " << c_.options_.timeout_s
            << " s: " << describe(have) << ", awaited >= " << target << " (epoch " << epoch_ << ")";
        fail(msg.str(), true);
        throw Stopped{};
      }
      // Bounded, so a peer that died without flagging still ends in the timeout.
      const auto slice = std::min<std::chrono::nanoseconds>(timeout_ - waited, std::chrono::milliseconds(50));
      bell.sleep_unless(
          [&] {
            return a.load(std::memory_order_relaxed) >= target || state_.abort.load(std::memory_order_relaxed) ||
                   (state_.peer_failed && state_.peer_failed->load(std::memory_order_relaxed));
          },
          slice + std::chrono::microseconds(1));
    }
  }

  // Stops the call and wakes every rank's waiters of this process to see it.
  void fail(const std::string& message, bool timeout) {
    state_.fail(message, timeout);
    c_.ring_all();
  }

  void execute(const Instr& in) {
    switch (in.op) {
      case Op::Wait: {
        const uint64_t target = (in.base == Base::Prev ? prev_ : epoch_) + in.rel;
        const auto& slot = c_.memory_[rank_].signals[in.sig][in.slot];
        spin(slot, target, [&](uint64_t have) {
          return c_.signal_name(in.sig) + " slot " + std::to_string(in.slot) + " holds " + std::to_string(have);
        });
        if (in.order == Order::Acquire) std::atomic_thread_fence(std::memory_order_acquire);
        return;
      }
      case Op::Signal: {
        const uint64_t value = (in.base == Base::Prev ? prev_ : epoch_) + in.rel;
        c_.memory_[in.peer].signals[in.sig][in.slot].store(
            value, in.order == Order::Release ? std::memory_order_release : std::memory_order_relaxed);
        c_.memory_[in.peer].header->bell.ring();
        return;
      }
      case Op::Copy: {
        const Place dst = place(p_.refs[in.dst]), src = place(p_.refs[in.src_first]);
        if (dst.bytes && src.bytes) {
          // A slice copied onto itself (the rank's input is its own output slice) is left alone.
          const size_t bytes = in.elems * eb_;
          if (dst.bytes == src.bytes) return;
          if (streams(bytes) && (dst.bytes + bytes <= src.bytes || src.bytes + bytes <= dst.bytes))
            stream_copy(dst.bytes, src.bytes, bytes);
          else
            std::memmove(dst.bytes, src.bytes, bytes);
          return;
        }
        if (dst.bytes) {
          read(src, 0, in.elems, dst.bytes);
          return;
        }
        if (src.bytes) {
          write(dst, 0, in.elems, src.bytes);
          return;
        }
        unsigned char* chunk = scratch().bytes(kChunk * eb_);
        for (int64_t at = 0; at < in.elems; at += kChunk) {
          const int64_t n = std::min(kChunk, in.elems - at);
          write(dst, at, n, view(src, at, n, chunk));
        }
        return;
      }
      case Op::Reduce: {
        with_dtype(p_.dtype, [&](auto d) {
          with_redop(in.redop, [&](auto op) { reduce<decltype(d)::value, decltype(op)::value>(in); });
        });
        return;
      }
      case Op::Put: {
        const Place src = place(p_.refs[in.src_first]);
        Packet* out = window(in.peer, in.buf, rank_) + in.offset / pe_;
        const uint64_t flag = epoch_ + 1;
        const int64_t whole = in.elems / pe_, packets = packets_moved(in.elems, pe_);
        for (int64_t k = 0; k < packets; ++k) {
          uint64_t word = 0;  // a partial last packet is zero-padded
          const int64_t n = std::min(pe_, in.elems - k * pe_);  // 0: an empty unit's packet, its flag alone
          if (!src.bytes) {
            if (n > 0) read(src, k * pe_, n, reinterpret_cast<unsigned char*>(&word));
          } else if (k < whole) std::memcpy(&word, src.bytes + k * kPacketDataBytes, kPacketDataBytes);
          else std::memcpy(&word, src.bytes + k * kPacketDataBytes, n * eb_);
          out[k].data.store(word, std::memory_order_relaxed);
          out[k].flag.store(flag, std::memory_order_release);
        }
        c_.memory_[in.peer].header->bell.ring();
        return;
      }
      case Op::WaitPackets: {
        const Packet* packets = window(rank_, in.buf, in.peer) + in.offset / pe_;
        const uint64_t flag = epoch_ + 1;
        const int64_t n = packets_moved(in.elems, pe_);
        const auto await = [&](int64_t k) {
          if (packets[k].flag.load(std::memory_order_relaxed) >= flag) return;
          spin(packets[k].flag, flag, [&](uint64_t have) {
            return "packet window " + c_.buffer_name(in.buf) + " half " + std::to_string(half_) + " from rank " +
                   std::to_string(in.peer) + ", packet " + std::to_string(in.offset / pe_ + k) + " (element " +
                   std::to_string(in.offset + k * pe_) + ") has flag " + std::to_string(have);
          });
        };
        // The last packet first: polling right behind the writer would pull
        // each line away from its core as it is written.
        await(n - 1);
        for (int64_t k = 0; k < n; ++k) await(k);
        std::atomic_thread_fence(std::memory_order_acquire);
        return;
      }
    }
  }

  // One Reduce, a chunk at a time: sources read in place where they are
  // plain bytes, gathered from packets otherwise; the result written straight
  // into plain bytes.
  template <DType D, RedOp op>
  void reduce(const Instr& in) {
    using Acc = typename Elem<D>::Acc;
    const Place dst = place(p_.refs[in.dst]);
    const int64_t count = in.src_count;
    Scratch& s = scratch();
    s.places.resize(count);
    s.from.resize(count);
    bool remote = dst.pid != 0;
    for (int64_t k = 0; k < count; ++k) {
      s.places[k] = place(p_.refs[in.src_first + k]);
      remote |= s.places[k].pid != 0;
    }
    // Chunks small enough that every source's gathered packets fit in scratch
    // at once; with peers reached by cross-memory attach, as large as that
    // allows, since each chunk of theirs is a system call.
    const int64_t chunk = std::clamp<int64_t>(kGatherBytes / (count * eb_), 64, remote ? kGatherBytes : kChunk);
    unsigned char* base = s.bytes(chunk * (sizeof(Acc) + eb_ * (1 + count)));
    Acc* acc = reinterpret_cast<Acc*>(base);
    unsigned char* result = base + chunk * sizeof(Acc);
    for (int64_t at = 0; at < in.elems; at += chunk) {
      const int64_t n = std::min(chunk, in.elems - at);
      for (int64_t k = 0; k < count; ++k) s.from[k] = view(s.places[k], at, n, result + (1 + k) * chunk * eb_);
      // Streamed, the result goes through scratch (in cache) to its place.
      const bool stream = dst.bytes && streams(n * eb_);
      reduce_run<D, op>(acc, s.from.data(), count, n, dst.bytes && !stream ? dst.bytes + at * eb_ : result);
      if (stream) stream_copy(dst.bytes + at * eb_, result, n * eb_);
      else if (!dst.bytes) write(dst, at, n, result);
    }
  }

  // Whether a copy of `bytes` into plain memory bypasses the cache: in a call
  // whose data outgrow it (Executor::streaming_), and not for a few lines.
  bool streams(size_t bytes) const { return c_.streaming_ && bytes >= kStreamBytes; }

  // Per thread, kept across calls: no allocation in a call once warm.
  struct Scratch {
    std::vector<Place> places;
    std::vector<const unsigned char*> from;
    std::unique_ptr<unsigned char[]> data;
    size_t size = 0;

    unsigned char* bytes(size_t n) {
      if (n > size) {
        data.reset(new unsigned char[n]);
        size = n;
      }
      return data.get();
    }
  };

  static Scratch& scratch() {
    thread_local Scratch s;
    return s;
  }

  static constexpr int64_t kChunk = 4096;
  static constexpr int64_t kGatherBytes = 1 << 20;
  static constexpr size_t kStreamBytes = 4096;
  // Polls of a wait before it sleeps: a few, as ranks outnumber cores here
  // more often than not (measured on 2 cores: 1000 polls cost 2x at 4 KiB).
  static constexpr int kPolls = 64;

  Executor& c_;
  const Plan& p_;
  CallState& state_;
  const int64_t rank_, role_;
  const std::vector<const void*>& inputs_;
  const std::vector<void*>& outputs_;
  const int64_t epoch_, prev_, half_, eb_, pe_;
  const std::chrono::steady_clock::duration timeout_;
  const Instr* body_ = nullptr;
  int64_t n_ = 0;  // the instruction being executed, for messages
};

Executor::Executor(Plan plan, Options options)
    : plan_(std::move(plan)), options_(std::move(options)), packet_elems_(kPacketDataBytes / plan_.elem_bytes()) {
  if (!(options_.timeout_s > 0))
    throw std::invalid_argument("timeout must be positive, got " + std::to_string(options_.timeout_s) + " s");
  check_programs(plan_);
  streaming_ = outgrows_cache(plan_);
  memory_.resize(plan_.world);
  epoch_.assign(plan_.world, 0);
  prev_.assign(plan_.world, 0);
}

void Executor::rebind(Plan plan) {
  const auto same = [](const std::vector<Buffer>& a, const std::vector<Buffer>& b) {
    if (a.size() != b.size()) return false;
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k].kind != b[k].kind || a[k].slots != b[k].slots || a[k].elems != b[k].elems) return false;
    return true;
  };
  if (plan.world != plan_.world || plan.dtype != plan_.dtype || plan.symmetric != plan_.symmetric ||
      plan.advance != plan_.advance || plan.signal_slots != plan_.signal_slots || !same(plan.buffers, plan_.buffers))
    throw std::invalid_argument(options_.name + ": the new plan's memory is not laid out as the current one's "
                                "(world, dtype, buffers, signals and epoch advance must be equal): it is not "
                                "another binding of the same kernel");
  check_programs(plan);
  streaming_ = outgrows_cache(plan);
  plan_ = std::move(plan);
}

bool Executor::outgrows_cache(const Plan& p) const {
  // Every rank's buffers and the staging its call writes share this
  // machine's cache. Streaming pays from about three quarters of it
  // (stream.h); half is the safe side.
  int64_t elems = 0;
  for (int64_t r = 0; r < p.world; ++r) elems += p.input_extent[r] + p.output_extent[r];
  // Staging as far as written, per (rank, buffer, slot): a kernel's capacity
  // (a regime's) may be far larger than what a call stages.
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> staged;
  for (const Instr& in : p.instrs) {
    if (in.dst < 0 || p.refs[in.dst].space != Space::Staging) continue;
    const Ref& r = p.refs[in.dst];
    int64_t& end = staged[{r.rank, r.buf, r.slot}];
    end = std::max(end, r.offset + in.elems);
  }
  for (const auto& [where, end] : staged) elems += end;
  const size_t bytes = size_t(elems) * p.elem_bytes();
  const int64_t from = options_.cache_bypass_bytes;
  return bytes >= (from < 0 ? last_level_cache_bytes() / 2 : size_t(from));
}

size_t Executor::region_bytes() const {
  size_t n = aligned(sizeof(RegionHeader));
  for (const Buffer& b : plan_.buffers)
    n += aligned(b.kind == BufKind::Staging ? staging_bytes(b, plan_.elem_bytes())
                                             : window_packets(b, packet_elems_) * sizeof(Packet));
  for (int64_t slots : plan_.signal_slots) n += aligned(slots * sizeof(std::atomic<uint64_t>));
  return n + aligned(heap_bytes_);
}

RankMemory Executor::region(unsigned char* base, int64_t rank, bool construct) const {
  // Shared mappings hold these atomics for several processes: only lock-free ones are address-free.
  static_assert(std::atomic<uint64_t>::is_always_lock_free, "signals need lock-free 64-bit atomics");
  RankMemory m;
  m.header = construct ? new (base) RegionHeader{RegionHeader::kMagic, uint64_t(plan_.world), uint64_t(rank),
                                                 region_bytes(), uint64_t(::getpid()), reinterpret_cast<uint64_t>(base)}
                       : reinterpret_cast<RegionHeader*>(base);
  unsigned char* at = base + aligned(sizeof(RegionHeader));
  for (const Buffer& b : plan_.buffers) {
    if (b.kind == BufKind::Staging) {
      m.staging.push_back(at);
      m.windows.push_back(nullptr);
      at += aligned(staging_bytes(b, plan_.elem_bytes()));
    } else {
      const int64_t n = window_packets(b, packet_elems_);
      m.staging.push_back(nullptr);
      m.windows.push_back(reinterpret_cast<Packet*>(at));
      if (construct)
        for (int64_t k = 0; k < n; ++k) new (at + k * sizeof(Packet)) Packet;
      at += aligned(n * sizeof(Packet));
    }
  }
  for (int64_t slots : plan_.signal_slots) {
    m.signals.push_back(reinterpret_cast<std::atomic<uint64_t>*>(at));
    if (construct)
      for (int64_t k = 0; k < slots; ++k) new (at + k * sizeof(std::atomic<uint64_t>)) std::atomic<uint64_t>(0);
    at += aligned(slots * sizeof(std::atomic<uint64_t>));
  }
  m.heap = at;
  return m;
}

void Communicator::Free::operator()(unsigned char* p) const { ::operator delete[](p, std::align_val_t(kAlign)); }

Communicator::Communicator(Plan plan, Options options) : Executor(std::move(plan), std::move(options)) {
  const size_t bytes = region_bytes();
  for (int64_t rank = 0; rank < plan_.world; ++rank) {
    regions_.emplace_back(static_cast<unsigned char*>(::operator new[](bytes, std::align_val_t(kAlign))));
    std::memset(regions_.back().get(), 0, bytes);
    memory_[rank] = region(regions_.back().get(), rank, true);
  }
}

int64_t Executor::epoch(int64_t rank) const {
  if (rank < 0 || rank >= plan_.world)
    throw std::out_of_range("rank " + std::to_string(rank) + " is outside world " + std::to_string(plan_.world));
  return epoch_[rank];
}

std::string Executor::signal_name(int64_t sig) const {
  std::string s = "signals[" + std::to_string(sig) + "]";
  if (sig < static_cast<int64_t>(options_.signal_names.size())) s += " \"" + options_.signal_names[sig] + "\"";
  return s;
}

std::string Executor::buffer_name(int64_t buf) const {
  std::string s = std::to_string(buf);
  if (buf < static_cast<int64_t>(options_.buffer_names.size())) s += " \"" + options_.buffer_names[buf] + "\"";
  return s;
}

void Communicator::run(const std::vector<const void*>& inputs, const std::vector<void*>& outputs) {
  if (static_cast<int64_t>(inputs.size()) != plan_.world || static_cast<int64_t>(outputs.size()) != plan_.world)
    throw std::invalid_argument(options_.name + ": the plan is for world " + std::to_string(plan_.world) + ", got " +
                                std::to_string(inputs.size()) + " inputs and " + std::to_string(outputs.size()) +
                                " outputs");
  std::vector<int64_t> ranks(plan_.world);
  for (int64_t rank = 0; rank < plan_.world; ++rank) ranks[rank] = rank;
  run_ranks(ranks, inputs, outputs, nullptr);
}

void Executor::ring_all() const {
  for (const RankMemory& m : memory_)
    if (m.header) m.header->bell.ring();
}

namespace {

// The roles of the call's ranks, one task each.
class RoleBatch : public Batch {
 public:
  RoleBatch(Executor& c, CallState& state, int64_t roles, const std::vector<int64_t>& ranks,
            const std::vector<const void*>& inputs, const std::vector<void*>& outputs)
      : c_(c), state_(state), roles_(roles), ranks_(ranks), inputs_(inputs), outputs_(outputs) {}

  void run(int64_t k) override {
    // Roles of a call that already failed do not start.
    if (state_.abort.load(std::memory_order_relaxed)) return;
    RoleThread(c_, state_, ranks_[k / roles_], k % roles_, inputs_, outputs_).run();
  }
  void unstarted(int64_t, const char* why) override {
    state_.fail(c_.name() + ": cannot start the threads of the call: " + why, false);
  }

 private:
  Executor& c_;
  CallState& state_;
  const int64_t roles_;
  const std::vector<int64_t>& ranks_;
  const std::vector<const void*>& inputs_;
  const std::vector<void*>& outputs_;
};

}  // namespace

void Executor::run_ranks(const std::vector<int64_t>& ranks, const std::vector<const void*>& inputs,
                         const std::vector<void*>& outputs, const std::atomic<uint64_t>* failed) {
  if (!broken_.empty()) throw std::runtime_error(options_.name + ": communicator is unusable: " + broken_);
  CallState state;
  state.peer_failed = failed;
  if (const uint64_t f = failed ? failed->load(std::memory_order_acquire) : 0)
    state.fail(options_.name + ": " + peer_failure(f) + " before this call (epoch " +
                   std::to_string(epoch_[ranks.front()]) + ")",
               f % 2);
  const int64_t roles = static_cast<int64_t>(plan_.roles.size());
  RoleBatch batch(*this, state, roles, ranks, inputs, outputs);
  if (!state.abort.load(std::memory_order_relaxed)) run_together(batch, roles * static_cast<int64_t>(ranks.size()));
  if (!state.error.empty()) {
    // Peers may have stopped half-way through the protocol: flags and
    // staging no longer agree with the epochs, so no later call is safe.
    broken_ = "a previous call failed (" + state.error + ")";
    if (state.timed_out) throw CollectiveTimeout(state.error);
    throw std::runtime_error(state.error);
  }
  for (int64_t rank : ranks) {
    prev_[rank] = epoch_[rank];
    epoch_[rank] += plan_.advance;
  }
}

void Executor::run_rank(int64_t rank, const void* input, void* output) {
  std::vector<const void*> inputs(plan_.world, nullptr);
  std::vector<void*> outputs(plan_.world, nullptr);
  inputs[rank] = input;
  outputs[rank] = output;
  try {
    run_ranks({rank}, inputs, outputs, &memory_[rank].header->failed);
  } catch (const CollectiveTimeout&) {
    flag_failure(rank, true);
    throw;
  } catch (const std::exception&) {
    flag_failure(rank, false);
    throw;
  }
}

void Executor::flag_failure(int64_t rank, bool timed_out) {
  const uint64_t flag = 2 * uint64_t(rank + 1) + (timed_out ? 1 : 0);
  for (int64_t r = 0; r < plan_.world; ++r) {
    uint64_t none = 0;
    if (r != rank && memory_[r].header) {
      memory_[r].header->failed.compare_exchange_strong(none, flag, std::memory_order_release);
      memory_[r].header->bell.ring();
    }
  }
}

}  // namespace purlin::cpu
