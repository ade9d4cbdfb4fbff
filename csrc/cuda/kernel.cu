// The plan executor: one kernel per collective call per GPU. Each block finds
// its role and runs that role's instructions in order; data instructions are
// split over the role's blocks, signals store once per role, waits poll with
// a timeout that is recorded for the host.
#include "atoms_sm100.cuh"
#include "kernel.h"

namespace purlin::cuda {
namespace {

#if __CUDA_ARCH__ >= 1000
using ArchCombine = sm100::PackedCombine;
constexpr int kWidestAccess = 32;
#else
using ArchCombine = ScalarCombine;
constexpr int kWidestAccess = 16;
#endif

// Polls between looks at the clock and at the other ranks' abort flag (host
// memory: too slow to read on every poll).
constexpr int kPollsPerCheck = 256;

struct Call {
  const DevPlan& plan;  // the kernel parameter
  char* input;
  char* output;
  uint64_t epoch, prev;
  int role;
  Part part;
};

__device__ __forceinline__ Span resolve(const Call& c, const DevRef& r) {
  switch (static_cast<Space>(r.space)) {
    case Space::Input: return {c.input + r.offset, -1};
    case Space::Output: return {c.output + r.offset, -1};
    case Space::Staging: return {r.base + (c.epoch & 1) * r.half_bytes + r.offset, -1};
    default: return {r.base + (c.epoch & 1) * r.half_bytes, r.offset};
  }
}

// This call's half of a packet window region.
__device__ __forceinline__ char* region_of(const Call& c, const DevInstr& in) {
  return in.region + (c.epoch & 1) * in.region_half_bytes;
}

// Called by the one thread that gave up: the first record per rank wins, and
// every rank's waits stop at their next check.
__device__ __noinline__ void record_timeout(const Call& c, int instr, int is_packets, int array, int slot, int64_t packet,
                               uint64_t awaited, uint64_t seen) {
  const DevPlan& p = c.plan;
  if (atomicCAS(&p.state->error_claimed, 0, 1) == 0) {
    volatile ErrorRecord* e = p.error;
    e->is_packets = is_packets;
    e->rank = p.rank;
    e->role = c.role;
    e->instr = instr;
    e->array = array;
    e->slot = slot;
    e->packet = packet;
    e->awaited = awaited;
    e->seen = seen;
    e->epoch = c.epoch;
    __threadfence_system();
    e->valid = 1;
  }
  *p.abort = 1;
  __threadfence_system();
}

// Whether to give up polling: past the deadline (then recorded) or another wait gave up.
struct Deadline {
  uint64_t start = 0;
  int polls = 0;
  __device__ bool expired(const DevPlan& p) {
    if (++polls % kPollsPerCheck) return false;
    const uint64_t now = globaltimer();
    if (start == 0) start = now;
    return *p.abort || now - start > p.timeout_ns;
  }
};

__device__ __noinline__ bool wait_signal(const Call& c, const DevInstr& in, int instr) {
  __shared__ int ok;
  if (threadIdx.x == 0) {
    const DevPlan& p = c.plan;
    const uint64_t* slot = in.signal;
    const uint64_t need = (in.base == int(Base::Prev) ? c.prev : c.epoch) + in.rel;
    uint64_t seen;
    Deadline deadline;
    ok = 1;
    while ((seen = ld_relaxed_sys(slot)) < need) {
      if (deadline.expired(p)) {
        if (!*p.abort) record_timeout(c, instr, 0, in.sig, in.slot, -1, need, seen);
        ok = 0;
        break;
      }
    }
    if (ok && in.order == int(Order::Acquire)) ld_acquire_sys(slot);
  }
  __syncthreads();
  return ok;
}

// Every block polls every packet, so that the block's later reads of the
// data are ordered after the block's own observation of the flags.
__device__ __noinline__ bool wait_packets(const Call& c, const DevInstr& in, int instr) {
  const DevPlan& p = c.plan;
  const int per_packet = kPacketDataBytes / p.elem_bytes;
  const char* region = region_of(c, in);
  const int64_t first = in.offset / per_packet;
  const int64_t packets = (in.elems + per_packet - 1) / per_packet;
  const uint64_t need = c.epoch + 1;
  __shared__ volatile int gave_up;
  if (threadIdx.x == 0) gave_up = 0;
  __syncthreads();
  for (int64_t k = threadIdx.x; k < packets && !gave_up; k += blockDim.x) {
    uint64_t data, flag;
    Deadline deadline;
    for (ld_packet(region + (first + k) * kPacketBytes, data, flag); flag < need;
         ld_packet(region + (first + k) * kPacketBytes, data, flag)) {
      if (gave_up) break;
      if (deadline.expired(p)) {
        if (!*p.abort) record_timeout(c, instr, 1, in.buf, in.peer, first + k, need, flag);
        gave_up = 1;
      }
    }
  }
  // The block's threads observed the flags before the barrier; one fence
  // then orders the block's later reads of the data (L1 is per SM).
  const bool failed = __syncthreads_or(gave_up);
  if (!failed && in.order == int(Order::Acquire)) {
    if (threadIdx.x == 0) fence_acq_rel_sys();
    __syncthreads();
  }
  return !failed;
}

// After all blocks of the role finished the instructions before it, the last
// one to arrive stores the flag into the peer's slot.
__device__ void signal(const Call& c, const DevInstr& in, int counter, int blocks) {
  __syncthreads();
  if (threadIdx.x != 0) return;
  const DevPlan& p = c.plan;
  fence_acq_rel_sys();
  if (blocks > 1) {
    unsigned* arrivals = &p.state->arrivals[counter];
    if (atomicAdd(arrivals, 1u) != unsigned(blocks - 1)) return;
    *arrivals = 0;  // ready for the next call
    fence_acq_rel_sys();
  }
  uint64_t* slot = in.signal;
  const uint64_t value = (in.base == int(Base::Prev) ? c.prev : c.epoch) + in.rel;
  if (in.order == int(Order::Release))
    st_release_sys(slot, value);
  else
    st_relaxed_sys(slot, value);
}

__device__ bool all_aligned(const Span& dst, const Span* srcs, int n_srcs, int width) {
  if (!aligned(dst, width)) return false;
  for (int k = 0; k < n_srcs; ++k)
    if (!aligned(srcs[k], width)) return false;
  return true;
}

// The widest access (a power of two in [unit, widest]) at which every span is
// aligned.
__device__ int widest_access(const Span& dst, const Span* srcs, int n_srcs, int unit, int widest) {
  int w = widest;
  while (w > unit && !all_aligned(dst, srcs, n_srcs, w)) w /= 2;
  return w;
}

__device__ bool any_packets(const Span& dst, const Span* srcs, int n_srcs) {
  if (is_packets(dst)) return true;
  for (int k = 0; k < n_srcs; ++k)
    if (is_packets(srcs[k])) return true;
  return false;
}

// Whether linear sources are `width`-aligned at `byte`.
__device__ bool sources_aligned_at(const Span* srcs, int n_srcs, int64_t byte, int width) {
  for (int k = 0; k < n_srcs; ++k)
    if (reinterpret_cast<uintptr_t>(srcs[k].p + byte) % width) return false;
  return true;
}

template <DType D, int W>
__device__ void move_at(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, int64_t from,
                        int64_t chunks, Part part) {
  if constexpr (W <= kWidestAccess) {
    if (!reduce)
      copy_chunks<W>(dst, srcs[0], from, chunks, part);
    else if constexpr (W >= Elem<D>::bytes)
      reduce_chunks<D, W, ArchCombine>(dst, srcs, n_srcs, op, from, chunks, part);
  }
}

// Bytes [from, to) one element (a copy: one byte) at a time.
template <DType D>
__device__ void move_units(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, int64_t from,
                           int64_t to, Part part) {
  constexpr int elem = Elem<D>::bytes;
  if (reduce)
    move_at<D, elem>(dst, srcs, n_srcs, true, op, from, (to - from) / elem, part);
  else
    copy_bytes(dst, srcs[0], from, to, part);
}

// Linear spans, the destination element-aligned, at the widest access W: the
// head one unit at a time until the destination is W-aligned, the body W
// bytes at a time (sources aligned otherwise are shifted into place), the
// tail one unit at a time. A copy and a reduce are separate instances, so
// each holds only its own loops.
template <DType D, bool Reduce>
__device__ void move_linear(const Span& dst, const Span* srcs, int n_srcs, int op, int64_t from, int64_t bytes,
                            Part part) {
  // A reduce keeps at most 16 accumulators per thread, so fp8 chunks stay in registers.
  constexpr int W = Reduce && 16 * Elem<D>::bytes < kWidestAccess ? 16 * Elem<D>::bytes : kWidestAccess;
  const int head = (W - int(reinterpret_cast<uintptr_t>(dst.p + from) % W)) % W;
  const int64_t body = min(from + head, bytes);
  const int64_t chunks = (bytes - body) / W;
  move_units<D>(dst, srcs, n_srcs, Reduce, op, from, body, part);
  if (sources_aligned_at(srcs, Reduce ? n_srcs : 1, body, W))
    move_at<D, W>(dst, srcs, n_srcs, Reduce, op, body, chunks, part);
  else if constexpr (Reduce)
    reduce_shifted<D, W, ArchCombine>(dst.p + body, srcs, n_srcs, op, body, chunks, part);
  else
    copy_shifted<W>(dst.p + body, srcs[0].p + body, chunks, part);
  move_units<D>(dst, srcs, n_srcs, Reduce, op, body + chunks * W, bytes, part);
}

// Bytes [from, bytes) through registers. Linear spans: move_linear. With
// packets (or a destination off element alignment): the widest access at
// which every span is aligned, at most a packet's 8 data bytes, the
// remainder one unit at a time.
template <DType D>
__device__ void move_registers(const Span& dst, const Span* srcs, int n_srcs, bool reduce, int op, int64_t from,
                               int64_t bytes, Part part) {
  const int unit = reduce ? Elem<D>::bytes : 1;
  if (!any_packets(dst, srcs, n_srcs) && aligned(dst, unit)) {
    if (reduce)
      move_linear<D, true>(dst, srcs, n_srcs, op, from, bytes, part);
    else
      move_linear<D, false>(dst, srcs, n_srcs, op, from, bytes, part);
    return;
  }
  // Chunks start at `from`, so they are no wider than its alignment.
  int widest = kPacketDataBytes;
  while (from % widest) widest /= 2;
  const int w = widest_access(dst, srcs, n_srcs, unit, max(widest, unit));
  const int64_t chunks = (bytes - from) / w;
  switch (w) {
    case 8: move_at<D, 8>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    case 4: move_at<D, 4>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    case 2: move_at<D, 2>(dst, srcs, n_srcs, reduce, op, from, chunks, part); break;
    default: move_at<D, 1>(dst, srcs, n_srcs, reduce, op, from, chunks, part);
  }
  move_units<D>(dst, srcs, n_srcs, reduce, op, from + chunks * w, bytes, part);
}

template <DType D>
__device__ void copy_or_reduce(const Call& c, const DevInstr& in) {
  const DevPlan& p = c.plan;
  __shared__ Span srcs[kMaxSources];
  __shared__ Span dst;
  if (threadIdx.x < in.src_count) srcs[threadIdx.x] = resolve(c, p.refs[in.src_first + threadIdx.x]);
  if (threadIdx.x == 0) dst = resolve(c, in.dst);
  __syncthreads();
  const bool reduce = in.op == int(Op::Reduce);
  const int64_t bytes = in.elems * p.elem_bytes;
  const auto mech = static_cast<Mech>(in.mech);
  int64_t done = 0;
  if (mech == Mech::Multimem) {
    // Multicast objects are never created (the host refuses such plans); the
    // path is kept compiled so the sm_90 lowering stays checked.
    const int64_t vecs = bytes / 16;
    const DevRef& mc_ref = reduce ? p.refs[in.src_first] : in.dst;
    char* mc = p.multicast_bases[mc_ref.buf] +
               (resolve(c, mc_ref).p - p.buffer_bases[mc_ref.rank * p.n_buffers + mc_ref.buf]);
    if (reduce)
      sm90::multimem_reduce<D>(dst, mc, in.redop, vecs, c.part);
    else
      sm90::multimem_broadcast(mc, srcs[0], vecs, c.part);
    done = vecs * 16;
  } else if (mech == Mech::CpAsync || mech == Mech::Bulk) {
    const int n_staged = reduce ? in.src_count : 1;
    const int tile_bytes = p.smem_bytes / (kPipelineStages * n_staged) / 16 * 16;
    // Pipelines move whole 16-byte vectors of linear memory (packets are never 16-byte aligned spans).
    if (tile_bytes >= 16 && all_aligned(dst, srcs, in.src_count, 16)) {
      extern __shared__ __align__(128) char smem[];
      const int64_t vecs = bytes / 16;
      if (mech == Mech::Bulk)
        sm90::pipelined_bulk<D, ArchCombine>(dst, srcs, n_staged, reduce, in.redop, vecs, smem, tile_bytes, c.part);
      else
        sm80::pipelined<D, ArchCombine>(dst, srcs, n_staged, reduce, in.redop, vecs, smem, tile_bytes, c.part);
      done = vecs * 16;
    }
  }
  if (done < bytes) move_registers<D>(dst, srcs, in.src_count, reduce, in.redop, done, bytes, c.part);
  __syncthreads();  // the spans are rewritten by the next instruction
}

__device__ void put(const Call& c, const DevInstr& in) {
  const DevPlan& p = c.plan;
  const int per_packet = kPacketDataBytes / p.elem_bytes;
  const Span src = resolve(c, p.refs[in.src_first]);
  put_packets(region_of(c, in), in.offset / per_packet, src, in.elems * p.elem_bytes,
              c.epoch + 1, c.part);
}

// Instructions are copied into shared memory a window at a time: the
// acquire fences of waits invalidate L1, which would make every later
// instruction fetch a round trip to L2.
constexpr int kInstrWindow = 16;

template <DType D, int BlocksPerSm>
__global__ void __launch_bounds__(kMaxThreads, BlocksPerSm) run_plan(const __grid_constant__ DevPlan p, char* input, char* output) {
  int role = 0;
  while (role + 1 < p.n_roles && int(blockIdx.x) >= p.roles[role + 1].first_block) ++role;
  const DevRole& r = p.roles[role];
  __shared__ uint64_t epoch, prev;
  __shared__ __align__(16) DevInstr window[kInstrWindow];
  if (threadIdx.x == 0) {
    epoch = *reinterpret_cast<volatile uint64_t*>(&p.state->epoch);
    prev = *reinterpret_cast<volatile uint64_t*>(&p.state->prev);
  }
  Call c{p, input, output, 0, 0, role, Part{int(blockIdx.x) - r.first_block, r.blocks}};
  for (int k = 0; k < r.count; ++k) {
    if (k % kInstrWindow == 0) {
      const int n = min(kInstrWindow, r.count - k) * int(sizeof(DevInstr) / 16);
      const int4* from = reinterpret_cast<const int4*>(p.instrs + r.first_instr + k);
      __syncthreads();  // the previous window is done with
      for (int w = threadIdx.x; w < n; w += blockDim.x) reinterpret_cast<int4*>(window)[w] = from[w];
      __syncthreads();
      c.epoch = epoch;
      c.prev = prev;
    }
    const DevInstr& in = window[k % kInstrWindow];
    const int index = r.first_instr + k;
    switch (static_cast<Op>(in.op)) {
      case Op::Wait:
        if (!wait_signal(c, in, k)) return;
        break;
      case Op::Signal: signal(c, in, index, r.blocks); break;
      case Op::Copy:
      case Op::Reduce: copy_or_reduce<D>(c, in); break;
      case Op::Put: put(c, in); break;
      case Op::WaitPackets:
        if (!wait_packets(c, in, k)) return;
        break;
    }
  }
  // The last block to finish advances the epoch for the next call (or replay).
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&p.state->blocks_done, 1u) == gridDim.x - 1) {
      p.state->prev = epoch;
      p.state->epoch = epoch + p.advance;
      p.state->blocks_done = 0;
    }
  }
}

}  // namespace

template <int B>
const void* plan_kernel_for(DType dtype) {
  switch (dtype) {
    case DType::BF16: return reinterpret_cast<const void*>(&run_plan<DType::BF16, B>);
    case DType::F16: return reinterpret_cast<const void*>(&run_plan<DType::F16, B>);
    case DType::F32: return reinterpret_cast<const void*>(&run_plan<DType::F32, B>);
    case DType::FP8E4M3: return reinterpret_cast<const void*>(&run_plan<DType::FP8E4M3, B>);
    default: return reinterpret_cast<const void*>(&run_plan<DType::FP8E5M2, B>);
  }
}

const void* plan_kernel(DType dtype, int blocks_per_sm) {
  return blocks_per_sm == 1 ? plan_kernel_for<1>(dtype) : plan_kernel_for<2>(dtype);
}

}  // namespace purlin::cuda
