#include "context.h"

#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <cstdio>

#include "kernel.h"

namespace purlin::cuda {

namespace {

void check(cudaError_t e, const std::string& what) {
  if (e != cudaSuccess) throw CudaError(what + ": " + cudaGetErrorString(e));
}

// Restores the caller's current device, which run() must not change.
struct DeviceRestore {
  int device = 0;
  DeviceRestore() { cudaGetDevice(&device); }
  ~DeviceRestore() { cudaSetDevice(device); }
};

int64_t align_up(int64_t n, int64_t to) { return (n + to - 1) / to * to; }

// cuMemGetAddressRange through the runtime, so the library needs no -lcuda.
using AddressRangeFn = CUresult (*)(CUdeviceptr*, size_t*, CUdeviceptr);
AddressRangeFn address_range_fn() {
  static AddressRangeFn fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &p, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      p = nullptr;
    return reinterpret_cast<AddressRangeFn>(p);
  }();
  return fn;
}

}  // namespace


namespace detail {

Executor::Executor(const int64_t* plan_words, int64_t n_words, double timeout_s, std::string name)
    : plan_(decode_plan(plan_words, n_words)),
      timeout_ns_(static_cast<uint64_t>(timeout_s * 1e9)),
      name_(std::move(name)) {
  if (!(timeout_s > 0)) throw std::invalid_argument(name_ + ": the timeout must be positive");
  check_plan();
  lay_out();
}

Executor::~Executor() { release(); }

void Executor::release() {
  DeviceRestore restore;
  for (Rank& r : ranks_) {
    cudaSetDevice(r.device);
    cudaDeviceSynchronize();
    cudaFree(r.symmetric);
    cudaFree(r.state);
    cudaFree(r.plan_blob);
  }
  ranks_.clear();
  if (errors_) cudaFreeHost(errors_);
  errors_ = nullptr;
  cudaGetLastError();  // nothing above may leave an error behind for the caller
}

void Executor::check_plan() {
  const int eb = plan_.elem_bytes();
  const int per_packet = kPacketDataBytes / eb;
  int max_staged = 0;
  for (int64_t rank = 0; rank < plan_.world; ++rank) {
    for (size_t role = 0; role < plan_.roles.size(); ++role) {
      int64_t n = 0;
      const Instr* body = plan_.program(rank, role, &n);
      for (int64_t k = 0; k < n; ++k) {
        const Instr& in = body[k];
        auto fail = [&](const std::string& msg) {
          throw std::invalid_argument(name_ + ": rank " + std::to_string(rank) + " role " + std::to_string(role) +
                                      " instruction " + std::to_string(k) + ": " + msg);
        };
        if (in.mech == Mech::Multimem)
          fail("uses multimem, which needs an NVLink multicast object; this runtime never creates one "
               "(multicast is off on the machines it targets): lower without multimem");
        if (in.mech == Mech::CopyEngine) fail("uses copy_engine, which the kernel executor does not implement");
        if (in.src_count > kMaxSources)
          fail(std::to_string(in.src_count) + " sources, the executor takes at most " + std::to_string(kMaxSources));
        const bool data = in.op == Op::Copy || in.op == Op::Reduce;
        if (data && in.dst < 0) fail("has no destination");
        if ((in.op == Op::Copy || in.op == Op::Put) && in.src_count != 1) fail("needs exactly one source");
        if (in.op == Op::Reduce && (in.src_count < 1 || in.redop == RedOp::None)) fail("needs sources and a reduction");
        if ((in.op == Op::Put || in.op == Op::WaitPackets) && in.offset % per_packet)
          fail("window offset " + std::to_string(in.offset) + " does not start a packet");
        auto check_ref = [&](int64_t index, bool writes) {
          const Ref& r = plan_.refs[index];
          if ((r.space == Space::Input || r.space == Space::Output) && r.rank != rank)
            fail("names rank " + std::to_string(r.rank) + "'s user buffer; only the own rank's is mapped");
          if (writes && (r.space == Space::Input || r.space == Space::Window))
            fail(r.space == Space::Input ? "writes the input" : "writes a packet window other than by put");
          const bool staged = r.space == Space::Staging, windowed = r.space == Space::Window;
          if ((staged && plan_.buffers[r.buf].kind != BufKind::Staging) ||
              (windowed && plan_.buffers[r.buf].kind != BufKind::Packets))
            fail("uses buffer " + std::to_string(r.buf) + " as the wrong kind");
        };
        if (in.dst >= 0) check_ref(in.dst, true);
        for (int64_t s = 0; s < in.src_count; ++s) check_ref(in.src_first + s, false);
        if (data && (in.mech == Mech::CpAsync || in.mech == Mech::Bulk))
          max_staged = std::max<int>(max_staged, in.op == Op::Reduce ? in.src_count : 1);
      }
    }
  }
  if (plan_.roles.size() > size_t(kMaxRoles))
    throw std::invalid_argument(name_ + ": the plan has " + std::to_string(plan_.roles.size()) +
                                " roles, the executor takes at most " + std::to_string(kMaxRoles));
  if (plan_.threads > kMaxThreads)
    throw std::invalid_argument(name_ + ": the plan asks for " + std::to_string(plan_.threads) +
                                " threads per block, the executor runs at most " + std::to_string(kMaxThreads) +
                                "; lower with fewer threads");
  for (const Role& r : plan_.roles) grid_ += static_cast<int>(r.blocks);
  smem_bytes_ = static_cast<int>(
      std::min<int64_t>(int64_t(kPipelineStages) * max_staged * plan_.threads * 16, kMaxPipelineSmem));
}

void Executor::lay_out() {
  const int64_t eb = plan_.elem_bytes();
  const int64_t per_packet = kPacketDataBytes / eb;
  int64_t at = 0;
  for (const Buffer& b : plan_.buffers) {
    buffer_offsets_.push_back(at);
    const int64_t bytes = b.kind == BufKind::Staging
                              ? 2 * b.slots * b.elems * eb
                              : 2 * plan_.world * ((b.elems + per_packet - 1) / per_packet) * kPacketBytes;
    at = align_up(at + bytes, 256);
  }
  for (int64_t slots : plan_.signal_slots) {
    signal_offsets_.push_back(at);
    at = align_up(at + slots * int64_t(sizeof(uint64_t)), 256);
  }
  symmetric_bytes_ = std::max<int64_t>(at, 256);
}

void Executor::check_device(int device) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  if (device < 0 || device >= count)
    throw std::invalid_argument(name_ + ": device " + std::to_string(device) + " does not exist (" +
                                std::to_string(count) + " GPUs visible)");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  // A plan uses its generation's mechanisms: it runs on that generation only.
  if (prop.major != plan_.arch / 10)
    throw CudaError(name_ + ": the plan is for sm_" + std::to_string(plan_.arch) + ", GPU " + std::to_string(device) +
                    " (" + prop.name + ") is sm_" + std::to_string(prop.major * 10 + prop.minor) +
                    "; lower the collective for this GPU's arch");
  check(cudaSetDevice(device), "cudaSetDevice");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  // Producers and consumers spin on each other inside the kernel: every
  // block must be resident. The variant with more registers when it fits.
  int per_sm = 0;
  for (int variant : {1, 2}) {
    kernel_ = plan_kernel(plan_.dtype, variant);
    check(cudaFuncSetAttribute(kernel_, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_),
          "setting the executor's shared memory");
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel_, static_cast<int>(plan_.threads),
                                                        smem_bytes_),
          "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    if (int64_t(per_sm) * sms >= grid_) break;
  }
  if (int64_t(per_sm) * sms < grid_)
    throw CudaError(name_ + ": the plan needs " + std::to_string(grid_) + " co-resident blocks of " +
                    std::to_string(plan_.threads) + " threads (" + std::to_string(smem_bytes_) +
                    " bytes of shared memory each); GPU " + std::to_string(device) + " holds only " +
                    std::to_string(per_sm) + " per SM x " + std::to_string(sms) + " SMs");
}

void Executor::allocate(const std::vector<Rank>& ranks) {
  const size_t error_bytes = ranks.size() * sizeof(ErrorRecord) + sizeof(int32_t);
  check(cudaHostAlloc(reinterpret_cast<void**>(&errors_), error_bytes, cudaHostAllocMapped | cudaHostAllocPortable),
        "allocating the error records");
  std::memset(errors_, 0, error_bytes);
  for (const Rank& r : ranks) {
    ranks_.push_back({r.rank, r.device});
    Rank& mine = ranks_.back();
    check(cudaSetDevice(mine.device), "cudaSetDevice");
    check(cudaMalloc(&mine.symmetric, symmetric_bytes_), "allocating symmetric memory");
    check(cudaMemset(mine.symmetric, 0, symmetric_bytes_), "zeroing symmetric memory");
    int64_t n_instrs = 0;
    for (size_t role = 0; role < plan_.roles.size(); ++role)
      n_instrs += plan_.directory[mine.rank * plan_.roles.size() + role].second;
    const size_t state_bytes = sizeof(EpochState) + n_instrs * sizeof(uint32_t);
    check(cudaMalloc(&mine.state, state_bytes), "allocating the epoch state");
    check(cudaMemset(mine.state, 0, state_bytes), "zeroing the epoch state");
    // Peers may signal into this memory as soon as they can address it.
    check(cudaDeviceSynchronize(), "zeroing symmetric memory");
  }
}

void Executor::upload(const std::vector<char*>& symmetric) {
  const int n_roles = static_cast<int>(plan_.roles.size());
  const int n_buffers = static_cast<int>(plan_.buffers.size());
  const int world = static_cast<int>(plan_.world);
  const int64_t eb = plan_.elem_bytes();
  const int64_t per_packet = kPacketDataBytes / eb;
  // Per buffer: bytes of one half (staging: all slots; windows: every source's region).
  std::vector<int64_t> half_bytes, region_bytes;
  for (const Buffer& b : plan_.buffers) {
    region_bytes.push_back((b.elems + per_packet - 1) / per_packet * kPacketBytes);
    half_bytes.push_back(b.kind == BufKind::Staging ? b.slots * b.elems * eb : world * region_bytes.back());
  }
  auto buffer_at = [&](int64_t rank, int64_t buf) { return symmetric[rank] + buffer_offsets_[buf]; };
  auto signal_at = [&](int64_t rank, int64_t sig, int64_t slot) {
    return reinterpret_cast<uint64_t*>(symmetric[rank] + signal_offsets_[sig]) + slot;
  };
  auto dev_ref = [&](const Ref& r) {
    DevRef d{int32_t(r.space), int32_t(r.rank), int32_t(r.buf), int32_t(r.slot), nullptr, 0, r.offset * eb};
    if (r.space == Space::Staging) {
      d.base = buffer_at(r.rank, r.buf) + (r.slot * plan_.buffers[r.buf].elems + r.offset) * eb;
      d.half_bytes = half_bytes[r.buf];
      d.offset = 0;
    } else if (r.space == Space::Window) {
      d.base = buffer_at(r.rank, r.buf) + r.slot * region_bytes[r.buf];
      d.half_bytes = half_bytes[r.buf];
    }
    return d;
  };
  for (size_t local = 0; local < ranks_.size(); ++local) {
    Rank& mine = ranks_[local];
    const int rank = mine.rank;
    DevPlan p{};
    std::vector<DevInstr> instrs;
    std::vector<DevRef> refs;
    int first_block = 0;
    for (int role = 0; role < n_roles; ++role) {
      int64_t n = 0;
      const Instr* body = plan_.program(rank, role, &n);
      p.roles[role] = {first_block, int32_t(plan_.roles[role].blocks), int32_t(instrs.size()), int32_t(n)};
      first_block += static_cast<int>(plan_.roles[role].blocks);
      for (int64_t k = 0; k < n; ++k) {
        const Instr& in = body[k];
        DevInstr d{};
        d.op = int32_t(in.op);
        d.mech = int32_t(in.mech);
        d.order = int32_t(in.order);
        d.redop = int32_t(in.redop);
        d.elems = in.elems;
        d.sig = int32_t(in.sig);
        d.peer = int32_t(in.peer);
        d.slot = int32_t(in.slot);
        d.base = int32_t(in.base);
        d.rel = in.rel;
        if (in.op == Op::Wait) d.signal = signal_at(rank, in.sig, in.slot);
        if (in.op == Op::Signal) d.signal = signal_at(in.peer, in.sig, in.slot);
        if (in.op == Op::Put || in.op == Op::WaitPackets) {
          // Put writes our region of the peer's window; WaitPackets reads the peer's region of ours.
          const int64_t owner = in.op == Op::Put ? in.peer : rank, source = in.op == Op::Put ? rank : in.peer;
          d.region = buffer_at(owner, in.buf) + source * region_bytes[in.buf];
          d.region_half_bytes = half_bytes[in.buf];
        }
        d.buf = int32_t(in.buf);
        d.offset = in.offset;
        d.src_count = int32_t(in.src_count);
        d.src_first = int32_t(refs.size());
        for (int64_t s = 0; s < in.src_count; ++s) refs.push_back(dev_ref(plan_.refs[in.src_first + s]));
        if (in.dst >= 0) d.dst = dev_ref(plan_.refs[in.dst]);
        instrs.push_back(d);
      }
    }
    std::vector<char*> bases, multicast(n_buffers, nullptr);
    for (int r = 0; r < world; ++r)
      for (int b = 0; b < n_buffers; ++b) bases.push_back(buffer_at(r, b));

    // One blob for the tables, each 16-byte aligned.
    std::vector<std::pair<const void*, size_t>> tables = {
        {instrs.data(), instrs.size() * sizeof(DevInstr)},
        {refs.data(), refs.size() * sizeof(DevRef)},
        {bases.data(), bases.size() * sizeof(char*)},
        {multicast.data(), multicast.size() * sizeof(char*)},
    };
    std::vector<size_t> offsets;
    size_t at = 0;
    for (const auto& t : tables) {
      offsets.push_back(at);
      at = align_up(at + t.second, 16);
    }
    check(cudaSetDevice(mine.device), "cudaSetDevice");
    check(cudaMalloc(&mine.plan_blob, std::max<size_t>(at, 16)), "allocating the device plan");
    std::vector<char> blob(at, 0);
    for (size_t i = 0; i < tables.size(); ++i)
      if (tables[i].second) std::memcpy(blob.data() + offsets[i], tables[i].first, tables[i].second);
    p.rank = rank;
    p.elem_bytes = plan_.elem_bytes();
    p.n_roles = n_roles;
    p.n_buffers = n_buffers;
    p.smem_bytes = smem_bytes_;
    p.advance = plan_.advance;
    p.timeout_ns = timeout_ns_;
    p.instrs = reinterpret_cast<const DevInstr*>(mine.plan_blob + offsets[0]);
    p.refs = reinterpret_cast<const DevRef*>(mine.plan_blob + offsets[1]);
    p.buffer_bases = reinterpret_cast<char* const*>(mine.plan_blob + offsets[2]);
    p.multicast_bases = reinterpret_cast<char* const*>(mine.plan_blob + offsets[3]);
    p.state = mine.state;
    void* error = nullptr;
    check(cudaHostGetDevicePointer(&error, errors_ + local, 0), "mapping the error records");
    p.error = static_cast<ErrorRecord*>(error);
    // Shared by the ranks of this process only: ranks in other processes
    // stop at their own deadline.
    void* abort = nullptr;
    check(cudaHostGetDevicePointer(&abort, errors_ + ranks_.size(), 0), "mapping the abort flag");
    p.abort = static_cast<volatile int32_t*>(abort);
    if (at) check(cudaMemcpy(mine.plan_blob, blob.data(), at, cudaMemcpyHostToDevice), "uploading the device plan");
    mine.dev_plan = p;
  }
}

void Executor::check_pointer(const Rank& r, uintptr_t ptr, int64_t bytes, const char* what) const {
  if (bytes == 0) return;
  const std::string where = name_ + ": rank " + std::to_string(r.rank) + " " + what;
  if (ptr % 16) throw std::invalid_argument(where + " is not 16-byte aligned");
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(ptr)) != cudaSuccess) {
    cudaGetLastError();
    throw std::invalid_argument(where + " is not a CUDA pointer");
  }
  if ((a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) || a.device != r.device)
    throw std::invalid_argument(where + " is not memory of GPU " + std::to_string(r.device));
  if (AddressRangeFn range = address_range_fn()) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (range(&base, &size, static_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS && ptr + bytes > base + size)
      throw std::invalid_argument(where + " holds " + std::to_string(base + size - ptr) + " bytes, the plan needs " +
                                  std::to_string(bytes));
  }
}

void Executor::run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
                   const std::vector<uintptr_t>& streams) {
  if (failed_)
    throw CudaError(name_ + ": this communicator timed out earlier and its epochs are inconsistent; create a new one");
  check_recorded_errors();
  const int64_t eb = plan_.elem_bytes();
  DeviceRestore restore;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    // Each rank's own extent: a V collective's smaller ranks pass smaller buffers.
    check_pointer(ranks_[i], inputs[i], plan_.input_extent[ranks_[i].rank] * eb, "input");
    check_pointer(ranks_[i], outputs[i], plan_.output_extent[ranks_[i].rank] * eb, "output");
  }
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    DevPlan plan = ranks_[i].dev_plan;
    char* in = reinterpret_cast<char*>(inputs[i]);
    char* out = reinterpret_cast<char*>(outputs[i]);
    void* args[] = {&plan, &in, &out};
    check(cudaLaunchKernel(kernel_, dim3(grid_), dim3(static_cast<unsigned>(plan_.threads)), args, smem_bytes_,
                           reinterpret_cast<cudaStream_t>(streams[i])),
          name_ + ": launching rank " + std::to_string(ranks_[i].rank));
  }
}

void Executor::synchronize() {
  DeviceRestore restore;
  std::string cuda_error;
  for (const Rank& r : ranks_) {
    cudaSetDevice(r.device);
    const cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess && cuda_error.empty())
      cuda_error = name_ + ": GPU " + std::to_string(r.device) + ": " + cudaGetErrorString(e);
  }
  check_recorded_errors();
  if (!cuda_error.empty()) throw CudaError(cuda_error);
}

void Executor::check_recorded_errors() {
  // Plain string building: iostreams in this nvcc-compiled unit crashed on
  // the GPU machine (inside ostream's integer insertion).
  using std::to_string;
  std::string msg;
  int found = 0;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const volatile ErrorRecord& e = errors_[i];
    if (!e.valid) continue;
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", timeout_ns_ / 1e9);
    msg += (found++ ? "\n" : "") + name_ + ": rank " + to_string(int(e.rank)) + " (GPU " +
           to_string(ranks_[i].device) + ") timed out after " + seconds + " s in role " + to_string(int(e.role)) +
           " instruction " + to_string(int(e.instr)) + ": ";
    if (e.is_packets)
      msg += "packet " + to_string(int64_t(e.packet)) + " from rank " + to_string(int(e.slot)) +
             " in window buffer " + to_string(int(e.array)) + " has flag " + to_string(uint64_t(e.seen)) +
             ", expected >= " + to_string(uint64_t(e.awaited));
    else
      msg += "signals[" + to_string(int(e.array)) + "][" + to_string(int(e.slot)) + "] is " +
             to_string(uint64_t(e.seen)) + ", expected >= " + to_string(uint64_t(e.awaited));
    msg += " (epoch " + to_string(uint64_t(e.epoch)) + ")";
  }
  failed_ |= found > 0;
  if (found)
    throw TimeoutError(msg +
                       "\nthe peer never signalled: it hung, was not launched, ran another plan or call sequence, "
                       "or the plan is wrong");
}

uint64_t Executor::epoch(size_t local) {
  const Rank& r = ranks_.at(local);
  DeviceRestore restore;
  check(cudaSetDevice(r.device), "cudaSetDevice");
  check(cudaDeviceSynchronize(), name_ + ": synchronizing GPU " + std::to_string(r.device));
  uint64_t e = 0;
  check(cudaMemcpy(&e, &r.state->epoch, sizeof(e), cudaMemcpyDeviceToHost), "reading the epoch");
  return e;
}

}  // namespace detail

// -- one process, every rank --------------------------------------------------

Communicator::Communicator(const int64_t* plan_words, int64_t n_words, std::vector<int> devices, double timeout_s,
                           std::string name)
    : exec_(plan_words, n_words, timeout_s, std::move(name)) {
  const std::string& who = exec_.name();
  if (static_cast<int64_t>(devices.size()) != exec_.plan().world)
    throw std::invalid_argument(who + ": the plan is for " + std::to_string(exec_.plan().world) + " ranks, got " +
                                std::to_string(devices.size()) + " devices");
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    throw std::invalid_argument(who + ": each rank needs its own GPU (a device is listed twice)");
  DeviceRestore restore;
  try {
    std::vector<detail::Executor::Rank> ranks;
    for (size_t rank = 0; rank < devices.size(); ++rank) {
      exec_.check_device(devices[rank]);
      ranks.push_back({static_cast<int>(rank), devices[rank]});
    }
    enable_peer_access(devices);
    exec_.allocate(ranks);
    std::vector<char*> symmetric;
    for (const auto& r : exec_.ranks()) symmetric.push_back(r.symmetric);
    exec_.upload(symmetric);
  } catch (...) {
    exec_.release();
    throw;
  }
}

void Communicator::enable_peer_access(const std::vector<int>& devices) {
  for (int i : devices) {
    for (int j : devices) {
      if (i == j) continue;
      int ok = 0;
      check(cudaDeviceCanAccessPeer(&ok, i, j), "cudaDeviceCanAccessPeer");
      if (!ok)
        throw CudaError(exec_.name() + ": GPU " + std::to_string(i) + " cannot access GPU " + std::to_string(j) +
                        "'s memory (no peer access); this backend needs every pair of GPUs peer-connected");
      check(cudaSetDevice(i), "cudaSetDevice");
      const cudaError_t e = cudaDeviceEnablePeerAccess(j, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled)
        cudaGetLastError();
      else
        check(e, "cudaDeviceEnablePeerAccess");
    }
  }
}

void Communicator::run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
                       const std::vector<uintptr_t>& streams) {
  const size_t w = exec_.ranks().size();
  if (inputs.size() != w || outputs.size() != w || streams.size() != w)
    throw std::invalid_argument(exec_.name() + ": run needs one input, output and stream per rank (" +
                                std::to_string(w) + ")");
  exec_.run(inputs, outputs, streams);
}

uint64_t Communicator::epoch(int rank) {
  if (rank < 0 || rank >= world())
    throw std::invalid_argument(exec_.name() + ": rank " + std::to_string(rank) + " is outside world " +
                                std::to_string(world()));
  return exec_.epoch(static_cast<size_t>(rank));
}

// -- one process per rank -----------------------------------------------------

namespace {

constexpr char kIpcTag[16] = "purlin.ipc.v1";

// What ipc_handle() returns, byte for byte.
struct IpcBlob {
  char tag[16];
  int32_t rank, world;
  int64_t bytes;        // of the symmetric allocation
  uint64_t plan_hash;   // ranks must run the same plan
  cudaIpcMemHandle_t memory;
};

// FNV-1a over the plan's words.
uint64_t plan_hash(const int64_t* words, int64_t n) {
  uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(words);
  for (int64_t i = 0; i < n * int64_t(sizeof(int64_t)); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

}  // namespace

ProcessCommunicator::ProcessCommunicator(const int64_t* plan_words, int64_t n_words, int rank, int device,
                                         double timeout_s, std::string name)
    : exec_(plan_words, n_words, timeout_s, std::move(name)),
      rank_(rank),
      device_(device),
      plan_hash_(plan_hash(plan_words, n_words)) {
  if (rank < 0 || rank >= world())
    throw std::invalid_argument(exec_.name() + ": rank " + std::to_string(rank) + " is outside the plan's world " +
                                std::to_string(world()));
  DeviceRestore restore;
  try {
    exec_.check_device(device);
    exec_.allocate({{rank, device}});
    handle_ = export_handle();
  } catch (...) {
    exec_.release();
    throw;
  }
}

ProcessCommunicator::~ProcessCommunicator() { close_peers(); }

void ProcessCommunicator::close_peers() {
  DeviceRestore restore;
  cudaSetDevice(device_);
  cudaDeviceSynchronize();  // this rank's kernels may still read the peers' memory
  for (char* p : peers_)
    if (p) cudaIpcCloseMemHandle(p);
  peers_.clear();
  cudaGetLastError();
}

std::string ProcessCommunicator::export_handle() const {
  IpcBlob blob{};
  std::memcpy(blob.tag, kIpcTag, sizeof(kIpcTag));
  blob.rank = rank_;
  blob.world = world();
  blob.bytes = exec_.symmetric_bytes();
  blob.plan_hash = plan_hash_;
  check(cudaIpcGetMemHandle(&blob.memory, exec_.ranks()[0].symmetric),
        exec_.name() + ": exporting rank " + std::to_string(rank_) + "'s symmetric memory");
  return std::string(reinterpret_cast<const char*>(&blob), sizeof(blob));
}

void ProcessCommunicator::connect(const std::vector<std::string>& handles) {
  const std::string& who = exec_.name();
  if (connected_) throw std::logic_error(who + ": rank " + std::to_string(rank_) + " is already connected");
  if (static_cast<int>(handles.size()) != world())
    throw std::invalid_argument(who + ": connect needs one handle per rank (" + std::to_string(world()) + "), got " +
                                std::to_string(handles.size()));
  std::vector<IpcBlob> blobs(handles.size());
  for (size_t r = 0; r < handles.size(); ++r) {
    const std::string where = who + ": handle " + std::to_string(r);
    if (handles[r].size() != sizeof(IpcBlob) || std::memcmp(handles[r].data(), kIpcTag, sizeof(kIpcTag)) != 0)
      throw std::invalid_argument(where + " is not a purlin IPC handle (" + kIpcTag + ", " +
                                  std::to_string(sizeof(IpcBlob)) + " bytes); pass ipc_handle() of every rank");
    IpcBlob& b = blobs[r];
    std::memcpy(&b, handles[r].data(), sizeof(b));
    if (b.world != world())
      throw std::invalid_argument(where + " is from a communicator of world " + std::to_string(b.world) +
                                  ", this one's is " + std::to_string(world()));
    if (b.rank != static_cast<int>(r))
      throw std::invalid_argument(where + " is rank " + std::to_string(b.rank) + "'s; handles go in rank order");
    if (b.plan_hash != plan_hash_ || b.bytes != exec_.symmetric_bytes())
      throw std::invalid_argument(where + " is for another plan (" + std::to_string(b.bytes) +
                                  " bytes of symmetric memory, this rank has " +
                                  std::to_string(exec_.symmetric_bytes()) + "); every rank must run the same plan");
  }
  if (handles[rank_] != handle_)
    throw std::invalid_argument(who + ": handle " + std::to_string(rank_) + " is not this communicator's own");
  DeviceRestore restore;
  check(cudaSetDevice(device_), "cudaSetDevice");
  peers_.assign(handles.size(), nullptr);
  std::vector<char*> symmetric(handles.size());
  try {
    for (size_t r = 0; r < handles.size(); ++r) {
      if (static_cast<int>(r) == rank_) {
        symmetric[r] = exec_.ranks()[0].symmetric;
        continue;
      }
      void* p = nullptr;
      check(cudaIpcOpenMemHandle(&p, blobs[r].memory, cudaIpcMemLazyEnablePeerAccess),
            who + ": rank " + std::to_string(rank_) + " (GPU " + std::to_string(device_) + ") opening rank " +
                std::to_string(r) + "'s memory (ranks must share a node, with peer access between their GPUs)");
      symmetric[r] = peers_[r] = static_cast<char*>(p);
    }
    exec_.upload(symmetric);
  } catch (...) {
    close_peers();
    throw;
  }
  connected_ = true;
}

void ProcessCommunicator::run(uintptr_t input, uintptr_t output, uintptr_t stream) {
  if (!connected_)
    throw std::logic_error(exec_.name() + ": rank " + std::to_string(rank_) +
                           " is not connected: call connect() with every rank's ipc_handle() first");
  exec_.run({input}, {output}, {stream});
}

}  // namespace purlin::cuda
