#include "cuda/context.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "purlin/plan.h"

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

// What a device-counts kernel found wrong (abi::CountsError), in words.
std::string counts_problem(int code, int rank, int64_t need, int64_t have) {
  using std::to_string;
  const std::string who = "rank " + to_string(rank) + "'s counts ";
  switch (abi::CountsError(code)) {
    case abi::CountsError::Negative: return who + "hold a negative count, " + to_string(need);
    case abi::CountsError::Input:
      return who + "need " + to_string(need) + " input elements, the kernel was built for " + to_string(have);
    case abi::CountsError::Output:
      return who + "need " + to_string(need) + " output elements, the kernel was built for " + to_string(have);
    case abi::CountsError::Buffer:
      return who + "need " + to_string(need) + " elements of a staging slot or packet window, it holds " +
             to_string(have);
    case abi::CountsError::Tables:
      return "the tables of these counts need more than the " + to_string(have) + " words of shared memory";
    default: return "counts error " + to_string(code);
  }
}

// Dynamic shared memory a kernel gets without opting in.
constexpr int kDefaultSmem = 48 * 1024;
// Kernel parameters every launch takes (a symmetric kernel's abi::Peers among them).
constexpr int64_t kMaxParamBytes = 4096;
// The error claim word sits after the block epochs, padded to 16 bytes.
constexpr int64_t kClaimBytes = 16;

}  // namespace

namespace detail {

Executor::Executor(KernelSpec spec, double timeout_s, std::string name)
    : spec_(std::move(spec)), timeout_ns_(static_cast<uint64_t>(timeout_s * 1e9)), name_(std::move(name)) {
  auto fail = [&](const std::string& msg) { throw std::invalid_argument(name_ + ": " + msg); };
  if (!(timeout_s > 0)) fail("the timeout must be positive");
  const KernelSpec& s = spec_;
  if (!known_arch(s.arch)) fail("unknown arch sm_" + std::to_string(s.arch));
  if (s.world < 1) fail("world must be at least 1, got " + std::to_string(s.world));
  if (!valid_threads(s.threads))
    fail("threads per block must be a multiple of 32 in [32, 1024], got " + std::to_string(s.threads));
  if (s.grid < 1) fail("the kernel needs at least one block");
  if (s.smem < 0 || s.sites < 0 || s.counter_stride < 1 || s.symmetric_bytes < 0)
    fail("negative sizes in the kernel description");
  if (static_cast<int>(s.tables.size()) != s.world || static_cast<int>(s.input_bytes.size()) != s.world ||
      static_cast<int>(s.output_bytes.size()) != s.world)
    fail("the kernel description needs tables and extents for each of its " + std::to_string(s.world) + " ranks");
  if (static_cast<int>(s.site_names.size()) != s.sites) fail("one name per site expected");
  for (int r = 0; r < s.world; ++r) {
    const auto& t = s.tables[r];
    if (static_cast<int64_t>(t.size()) < abi::kGlobalWords + s.world)
      fail("rank " + std::to_string(r) + "'s tables are shorter than their header");
  }
  if (!s.stream.empty()) {
    if (!s.symmetric)
      fail("copy-engine steps (a stream role) need a symmetric kernel: they copy between the ranks' own buffers");
    int kernels = 0;
    for (int k : s.stream) kernels += k >= 0;
    if (kernels == 0) fail("a stream program needs at least one kernel step");
  }
  if (s.multimem)
    fail("the kernel uses multimem, which needs an NVLink multicast object; this runtime never creates one "
         "(multicast is off on the machines it targets): lower without multimem");
  if (s.symmetric && int64_t(sizeof(abi::Header)) + 2 * int64_t(sizeof(char*)) * s.world > kMaxParamBytes)
    fail("a symmetric kernel of world " + std::to_string(s.world) + " needs more than the " +
         std::to_string(kMaxParamBytes) + " bytes of kernel parameters a launch takes");
}

Executor::~Executor() {
  release();
  if (library_) cudaLibraryUnload(library_);
  for (cudaLibrary_t lib : replaced_) cudaLibraryUnload(lib);
  for (cudaLibrary_t lib : rank_libraries_) cudaLibraryUnload(lib);
  cudaGetLastError();
}

void Executor::release() {
  DeviceRestore restore;
  for (Rank& r : ranks_) {
    cudaSetDevice(r.device);
    cudaDeviceSynchronize();
    cudaFree(r.symmetric);
    cudaFree(r.state);
    cudaFree(r.tables);
    if (r.side) cudaStreamDestroy(r.side);
    if (r.fork) cudaEventDestroy(r.fork);
    if (r.join) cudaEventDestroy(r.join);
  }
  // Binding 0's tables are the ranks' own, freed above.
  for (size_t k = 1; k < bindings_.size(); ++k)
    for (size_t local = 0; local < bindings_[k].tables.size(); ++local) {
      cudaSetDevice(ranks_[local].device);
      cudaFree(bindings_[k].tables[local]);
    }
  bindings_.clear();
  ranks_.clear();
  if (errors_) cudaFreeHost(errors_);
  errors_ = nullptr;
  cudaGetLastError();  // nothing above may leave an error behind for the caller
}

int64_t Executor::state_bytes() const {
  return int64_t(spec_.grid) * int64_t(sizeof(abi::BlockState)) + kClaimBytes +
         int64_t(spec_.sites) * spec_.counter_stride * int64_t(sizeof(uint64_t));
}

void Executor::check_devices(const std::vector<int>& devices) {
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  std::map<int, int> ranks_on;
  for (int d : devices) ++ranks_on[d];
  if (spec_.gpu_scope && ranks_on.size() > 1)
    throw std::invalid_argument(name_ + ": the kernel signals at GPU scope, so all its ranks must run on one GPU; "
                                "they are on " + std::to_string(ranks_on.size()) +
                                " (lower with scope=system, or ranks-per-device below the world)");
  std::map<int, cudaDeviceProp> props;
  for (const auto& [device, n] : ranks_on) {
    if (device < 0 || device >= count)
      throw std::invalid_argument(name_ + ": device " + std::to_string(device) + " does not exist (" +
                                  std::to_string(count) + " GPUs visible)");
    cudaDeviceProp& prop = props[device];
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    // A kernel uses its generation's mechanisms: it runs on that generation only.
    if (prop.major != spec_.arch / 10)
      throw CudaError(name_ + ": the kernel is for sm_" + std::to_string(spec_.arch) + ", GPU " +
                      std::to_string(device) + " (" + prop.name + ") is sm_" +
                      std::to_string(prop.major * 10 + prop.minor) + "; lower the collective for this GPU's arch");
  }
  if (!library_) {
    check(cudaLibraryLoadData(&library_, spec_.cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
          name_ + ": loading the compiled kernel");
    for (int k : spec_.stream) {
      if (k < 0 || stream_kernels_.count(k)) continue;
      const std::string step = spec_.name + "_" + std::to_string(k);
      check(cudaLibraryGetKernel(&stream_kernels_[k], library_, step.c_str()), name_ + ": finding kernel " + step);
    }
    if (spec_.stream.empty())
      check(cudaLibraryGetKernel(&kernel_, library_, spec_.name.c_str()), name_ + ": finding kernel " + spec_.name);
    else
      kernel_ = stream_kernels_.begin()->second;
  }
  fits_twice_ = spec_.arch >= 90 && spec_.stream.empty();
  for (const auto& [device, n] : ranks_on) {
    const cudaDeviceProp& prop = props[device];
    check(cudaSetDevice(device), "cudaSetDevice");
    // Every kernel is loaded on the device here, not lazily at its first
    // launch: loading waits for the kernels running, and a stream role's
    // first kernel spins until every rank's has run (a later step's first
    // launch would wait for it while the ranks after it were not launched).
    int per_sm = 0;
    for (cudaKernel_t k : kernels()) {
      if (spec_.smem > kDefaultSmem)
        check(cudaKernelSetAttributeForDevice(k, cudaFuncAttributeMaxDynamicSharedMemorySize, spec_.smem, device),
              name_ + ": granting the kernel's shared memory");
      int fits = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, reinterpret_cast<const void*>(k), spec_.threads,
                                                          spec_.smem),
            name_ + ": cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      per_sm = k == kernel_ ? fits : std::min(per_sm, fits);
    }
    // Producers and consumers spin on each other, in one rank's grid and
    // across the ranks sharing a GPU: every block must be resident.
    const int64_t need = int64_t(spec_.grid) * n;
    if (int64_t(per_sm) * prop.multiProcessorCount < need)
      throw CudaError(name_ + ": " + (n == 1 ? "the rank on GPU " : std::to_string(n) + " ranks on GPU ") +
                      std::to_string(device) + " need " + std::to_string(need) + " co-resident blocks of " +
                      std::to_string(spec_.threads) + " threads (" + std::to_string(spec_.smem) +
                      " bytes of shared memory each); the GPU holds " + std::to_string(per_sm) + " per SM x " +
                      std::to_string(prop.multiProcessorCount) +
                      " SMs; use fewer blocks per role (blocks=N) or fewer ranks per GPU");
    // A call that starts early holds its blocks while the one ahead of it runs.
    fits_twice_ = fits_twice_ && int64_t(per_sm) * prop.multiProcessorCount >= 2 * need;
  }
  programmatic_ = allow_programmatic_ && fits_twice_;
}

void Executor::specialise(const std::vector<std::string>& cubins, const std::string& name) {
  if (!spec_.stream.empty())
    throw std::invalid_argument(name_ + ": a stream program (copy-engine steps) launches several kernels; only a "
                                "single kernel is specialised");
  if (spec_.count_words > 0)
    throw std::invalid_argument(name_ + ": the kernel reads its counts on the device; its tables cannot be "
                                "compiled in");
  if (failed_) throw CudaError(name_ + ": this communicator failed earlier (a wait timed out); create a new one");
  if (bindings_.size() > 1)
    throw std::invalid_argument(name_ + ": the kernel runs several bindings of its counts; compiling one's tables in "
                                "would run the others wrong");
  if (cubins.size() != ranks_.size())
    throw std::invalid_argument(name_ + ": specialise takes one kernel per local rank (" +
                                std::to_string(ranks_.size()) + "), got " + std::to_string(cubins.size()));
  DeviceRestore restore;
  std::vector<cudaLibrary_t> libs;
  std::vector<cudaKernel_t> kernels;
  try {
    for (size_t i = 0; i < cubins.size(); ++i) {
      const std::string whose = name_ + ": rank " + std::to_string(ranks_[i].rank) + "'s specialised kernel";
      libs.push_back(nullptr);
      check(cudaLibraryLoadData(&libs.back(), cubins[i].data(), nullptr, nullptr, 0, nullptr, nullptr, 0),
            whose + ": loading it");
      kernels.push_back(nullptr);
      check(cudaLibraryGetKernel(&kernels.back(), libs.back(), name.c_str()), whose + ": finding kernel " + name);
    }
    // Loaded on each rank's device now, and held to the residency the generic kernel was checked for.
    bool early = fits_twice_;
    std::map<int, int> ranks_on, fits_on;
    for (size_t i = 0; i < ranks_.size(); ++i) {
      const int device = ranks_[i].device;
      check(cudaSetDevice(device), "cudaSetDevice");
      if (spec_.smem > kDefaultSmem)
        check(cudaKernelSetAttributeForDevice(kernels[i], cudaFuncAttributeMaxDynamicSharedMemorySize, spec_.smem,
                                              device),
              name_ + ": granting the specialised kernel's shared memory");
      int fits = 0;
      check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fits, reinterpret_cast<const void*>(kernels[i]),
                                                          spec_.threads, spec_.smem),
            name_ + ": cudaOccupancyMaxActiveBlocksPerMultiprocessor");
      fits_on[device] = ranks_on[device]++ ? std::min(fits_on[device], fits) : fits;
    }
    for (const auto& [device, n] : ranks_on) {
      int sms = 0;
      check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
      const int64_t fits = fits_on[device];
      if (fits * sms < int64_t(spec_.grid) * n)
        throw CudaError(name_ + ": the specialised kernels fit " + std::to_string(fits) + " blocks per SM on GPU " +
                        std::to_string(device) + ", its " + std::to_string(n) + " rank(s) need " +
                        std::to_string(int64_t(spec_.grid) * n) + " co-resident blocks");
      early = early && fits * sms >= 2 * int64_t(spec_.grid) * n;
    }
    replaced_.insert(replaced_.end(), rank_libraries_.begin(), rank_libraries_.end());
    rank_libraries_ = libs;
    rank_kernels_ = kernels;
    specialised_ = true;
    fits_twice_ = early;
    programmatic_ = allow_programmatic_ && early;
  } catch (...) {
    for (cudaLibrary_t lib : libs)
      if (lib) cudaLibraryUnload(lib);
    throw;
  }
}

std::vector<cudaKernel_t> Executor::kernels() const {
  std::vector<cudaKernel_t> all{kernel_};
  for (const auto& [step, k] : stream_kernels_)
    if (k != kernel_) all.push_back(k);
  return all;
}

void Executor::reserve_record() {
  if (!ranks_.empty()) throw std::logic_error(name_ + ": the record is reserved before the memory is allocated");
  record_at_ = (std::max<int64_t>(spec_.symmetric_bytes, 256) + 255) / 256 * 256;
}

void Executor::allocate(const std::vector<Rank>& ranks) {
  const size_t error_bytes = ranks.size() * sizeof(abi::ErrorRecord) + sizeof(int32_t);
  check(cudaHostAlloc(reinterpret_cast<void**>(&errors_), error_bytes, cudaHostAllocMapped | cudaHostAllocPortable),
        "allocating the error records");
  std::memset(static_cast<void*>(errors_), 0, error_bytes);
  for (const Rank& r : ranks) {
    ranks_.push_back({});
    Rank& mine = ranks_.back();
    mine.rank = r.rank;
    mine.device = r.device;
    check(cudaSetDevice(mine.device), "cudaSetDevice");
    const int64_t sym = record_at_ ? record_at_ + kRecordBytes : std::max<int64_t>(spec_.symmetric_bytes, 256);
    check(cudaMalloc(&mine.symmetric, sym), "allocating symmetric memory");
    check(cudaMemset(mine.symmetric, 0, sym), "zeroing symmetric memory");
    check(cudaMalloc(&mine.state, state_bytes()), "allocating the device state");
    check(cudaMemset(mine.state, 0, state_bytes()), "zeroing the device state");
    check(cudaMalloc(&mine.tables, spec_.tables[mine.rank].size() * sizeof(int64_t)), "allocating the tables");
    check(cudaStreamCreateWithFlags(&mine.side, cudaStreamNonBlocking), "creating a rank's stream");
    check(cudaEventCreateWithFlags(&mine.fork, cudaEventDisableTiming), "creating an event");
    check(cudaEventCreateWithFlags(&mine.join, cudaEventDisableTiming), "creating an event");
    // Peers may signal into this memory as soon as they can address it.
    check(cudaDeviceSynchronize(), "zeroing symmetric memory");
  }
}

// Rank `rank`'s `tables` as its kernel reads them: every rank's symmetric allocation filled in.
static std::vector<int64_t> with_symmetric(std::vector<int64_t> tables, const std::vector<char*>& symmetric) {
  for (size_t r = 0; r < symmetric.size(); ++r)
    tables[abi::kGlobalWords + r] = reinterpret_cast<int64_t>(symmetric[r]);
  return tables;
}

void Executor::upload(const std::vector<char*>& symmetric) {
  symmetric_ = symmetric;
  Binding own{{}, {}, spec_.input_bytes, spec_.output_bytes};
  for (size_t local = 0; local < ranks_.size(); ++local) {
    Rank& mine = ranks_[local];
    const std::vector<int64_t> tables = with_symmetric(spec_.tables[mine.rank], symmetric);
    own.tables.push_back(mine.tables);
    own.words.push_back(int64_t(tables.size()));
    abi::Header h{};
    h.rank = mine.rank;
    h.blocks = reinterpret_cast<abi::BlockState*>(mine.state);
    h.error_claim = reinterpret_cast<u32*>(mine.state + int64_t(spec_.grid) * int64_t(sizeof(abi::BlockState)));
    h.arrivals = reinterpret_cast<u64*>(mine.state + int64_t(spec_.grid) * int64_t(sizeof(abi::BlockState)) +
                                        kClaimBytes);
    void* error = nullptr;
    check(cudaHostGetDevicePointer(&error, errors_ + local, 0), "mapping the error records");
    h.error = static_cast<abi::ErrorRecord*>(error);
    // Shared by the ranks of this process only: ranks in other processes
    // stop at their own deadline.
    void* abort = nullptr;
    check(cudaHostGetDevicePointer(&abort, errors_ + ranks_.size(), 0), "mapping the abort flag");
    h.abort = static_cast<volatile i32*>(abort);
    h.timeout_ns = timeout_ns_;
    check(cudaSetDevice(mine.device), "cudaSetDevice");
    check(cudaMemcpy(mine.tables, tables.data(), tables.size() * sizeof(int64_t), cudaMemcpyHostToDevice),
          "uploading the tables");
    h.tables = reinterpret_cast<const i64*>(mine.tables);
    h.table_words = static_cast<i64>(tables.size());
    h.record_at = record_at();
    mine.params = h;
  }
  bindings_ = {own};
}

int Executor::add_binding(const std::vector<std::vector<int64_t>>& tables, const std::vector<int64_t>& input_bytes,
                          const std::vector<int64_t>& output_bytes, int smem) {
  if (specialised_)
    throw std::invalid_argument(name_ + ": the kernel has its tables compiled in (specialise): it takes no other "
                                "binding of its counts");
  if (!spec_.stream.empty() || spec_.count_words > 0)
    throw std::invalid_argument(name_ + ": a stream program or a kernel reading its counts on the device takes no "
                                "other binding of its counts");
  const size_t world = size_t(spec_.world);
  if (tables.size() != world || input_bytes.size() != world || output_bytes.size() != world)
    throw std::invalid_argument(name_ + ": a binding takes every rank's tables and buffer bytes (" +
                                std::to_string(world) + " each)");
  if (smem > spec_.smem)
    throw std::invalid_argument(name_ + ": the binding's tables need " + std::to_string(smem) +
                                " bytes of shared memory a block, the kernel was checked with " +
                                std::to_string(spec_.smem));
  if (bindings_.empty()) throw std::logic_error(name_ + ": a binding is added after the tables are uploaded");
  for (const auto& t : tables)
    if (int64_t(t.size()) < abi::kGlobalWords + spec_.world)
      throw std::invalid_argument(name_ + ": a binding's tables are shorter than their header");
  DeviceRestore restore;
  Binding b{{}, {}, input_bytes, output_bytes};
  try {
    for (const Rank& r : ranks_) {
      const std::vector<int64_t> t = with_symmetric(tables[size_t(r.rank)], symmetric_);
      int64_t* device = nullptr;
      check(cudaSetDevice(r.device), "cudaSetDevice");
      check(cudaMalloc(&device, t.size() * sizeof(int64_t)), name_ + ": allocating a binding's tables");
      b.tables.push_back(device);
      b.words.push_back(int64_t(t.size()));
      check(cudaMemcpy(device, t.data(), t.size() * sizeof(int64_t), cudaMemcpyHostToDevice),
            name_ + ": uploading a binding's tables");
    }
  } catch (...) {
    for (int64_t* device : b.tables) cudaFree(device);
    throw;
  }
  bindings_.push_back(std::move(b));
  return int(bindings_.size()) - 1;
}

void Executor::use_binding(int id) {
  if (id < 0 || id >= int(bindings_.size()))
    throw std::invalid_argument(name_ + ": no binding " + std::to_string(id) + " (" +
                                std::to_string(bindings_.size()) + " added)");
  const Binding& b = bindings_[size_t(id)];
  for (size_t local = 0; local < ranks_.size(); ++local) {
    ranks_[local].params.tables = reinterpret_cast<const i64*>(b.tables[local]);
    ranks_[local].params.table_words = static_cast<i64>(b.words[local]);
  }
  spec_.input_bytes = b.input_bytes;
  spec_.output_bytes = b.output_bytes;
}

void Executor::check_pointer(Rank& r, int slot, uintptr_t ptr, int64_t bytes, const char* what) const {
  if (bytes == 0) return;
  std::pair<uintptr_t, int64_t>& last = r.checked[size_t(slot)];
  if (last.first == ptr && last.second >= bytes) return;
  auto where = [&] { return name_ + ": rank " + std::to_string(r.rank) + " " + what; };
  if (ptr % 16) throw std::invalid_argument(where() + " is not 16-byte aligned");
  cudaPointerAttributes a;
  if (cudaPointerGetAttributes(&a, reinterpret_cast<const void*>(ptr)) != cudaSuccess) {
    cudaGetLastError();
    throw std::invalid_argument(where() + " is not a CUDA pointer");
  }
  if ((a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) || a.device != r.device)
    throw std::invalid_argument(where() + " is not memory of GPU " + std::to_string(r.device));
  if (AddressRangeFn range = address_range_fn()) {
    CUdeviceptr base = 0;
    size_t size = 0;
    if (range(&base, &size, static_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS && ptr + bytes > base + size)
      throw std::invalid_argument(where() + " holds " + std::to_string(base + size - ptr) +
                                  " bytes, the kernel needs " + std::to_string(bytes));
  }
  last = {ptr, bytes};
}

void Executor::run(const std::vector<uintptr_t>& inputs, const std::vector<uintptr_t>& outputs,
                   const std::vector<uintptr_t>& streams, const CallCounts& counts,
                   const std::vector<char*>& given_peers, int64_t input_at, int64_t output_at) {
  if (failed_)
    throw CudaError(name_ + ": this communicator failed earlier (a wait timed out, or counts did not fit) and its "
                    "epochs are inconsistent; create a new one");
  check_recorded_errors();
  const bool device_counts = spec_.count_words > 0;
  if (!device_counts && !(counts.counts.empty() && counts.recv.empty()))
    throw std::invalid_argument(name_ + ": this kernel's counts are fixed; it takes no device counts");
  if (device_counts && (counts.counts.size() != ranks_.size() || counts.recv.size() != ranks_.size()))
    throw std::invalid_argument(name_ + ": this kernel reads its counts on the device: one counts tensor (and one "
                                "for the received counts, or none) per rank expected");
  DeviceRestore restore;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    // Each rank's own extent: a V collective's smaller ranks pass smaller buffers.
    check_pointer(ranks_[i], 0, inputs[i], spec_.input_bytes[ranks_[i].rank], "input");
    check_pointer(ranks_[i], 1, outputs[i], spec_.output_bytes[ranks_[i].rank], "output");
    if (!device_counts) continue;
    if (!counts.counts[i])
      throw std::invalid_argument(name_ + ": rank " + std::to_string(ranks_[i].rank) + " passed no counts");
    check_pointer(ranks_[i], 2, counts.counts[i], int64_t(spec_.count_words) * 8, "counts");
    if (counts.recv[i])
      check_pointer(ranks_[i], 3, counts.recv[i], int64_t(spec_.world) * 8, "received counts");
  }
  // A rank whose (device, stream) an earlier rank uses runs on its own stream,
  // forked before any launch (the earlier rank's kernel waits for it) and
  // joined after all of them.
  std::vector<bool> forked(ranks_.size());
  for (size_t i = 0; i < ranks_.size(); ++i) {
    for (size_t j = 0; j < i && !forked[i]; ++j)
      forked[i] = ranks_[j].device == ranks_[i].device && streams[j] == streams[i];
    if (!forked[i]) continue;
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    check(cudaEventRecord(ranks_[i].fork, reinterpret_cast<cudaStream_t>(streams[i])), "forking a rank's stream");
    check(cudaStreamWaitEvent(ranks_[i].side, ranks_[i].fork, 0), "forking a rank's stream");
  }
  // A symmetric kernel's abi::Peers: every rank's input, then every rank's output.
  std::vector<char*> peers = given_peers;
  if (spec_.symmetric && peers.empty()) {
    if (static_cast<int>(ranks_.size()) != spec_.world)
      throw std::invalid_argument(name_ + ": the kernel reads and writes every rank's buffers in place "
                                  "(symmetric), so one process must run all its ranks");
    peers.assign(2 * size_t(spec_.world), nullptr);
    for (size_t i = 0; i < ranks_.size(); ++i) {
      peers[ranks_[i].rank] = reinterpret_cast<char*>(inputs[i]);
      peers[spec_.world + ranks_[i].rank] = reinterpret_cast<char*>(outputs[i]);
    }
  }
  std::vector<abi::Header> headers(ranks_.size());
  for (size_t i = 0; i < ranks_.size(); ++i) {
    abi::Header& h = headers[i] = ranks_[i].params;
    h.input = reinterpret_cast<char*>(inputs[i]);
    h.input_bytes = spec_.input_bytes[size_t(ranks_[i].rank)];
    h.output = reinterpret_cast<char*>(outputs[i]);
    h.input_at = input_at;
    h.output_at = output_at;
    h.programmatic = programmatic_;
    if (device_counts) {
      h.counts = reinterpret_cast<const i64*>(counts.counts[i]);
      h.recv_counts = reinterpret_cast<i64*>(counts.recv[i]);
    }
  }
  auto stream_of = [&](size_t i) { return forked[i] ? ranks_[i].side : reinterpret_cast<cudaStream_t>(streams[i]); };
  // A stream program's steps go out step by step, every rank's in turn: a
  // rank's first kernel waits for every rank's, so all of those are issued
  // before anything the host might wait on.
  for (size_t step = 0; step < spec_.stream.size(); ++step)
    for (size_t i = 0; i < ranks_.size(); ++i) {
      check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
      run_step(i, spec_.stream[step], peers, headers[i], stream_of(i));
    }
  for (size_t i = 0; i < ranks_.size() && spec_.stream.empty(); ++i) {
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    void* args[] = {&headers[i], peers.data()};
    launch_kernel(kernel_of(i), args, stream_of(i), name_ + ": launching rank " + std::to_string(ranks_[i].rank));
  }
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!forked[i]) continue;
    check(cudaSetDevice(ranks_[i].device), "cudaSetDevice");
    check(cudaEventRecord(ranks_[i].join, ranks_[i].side), "joining a rank's stream");
    check(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(streams[i]), ranks_[i].join, 0),
          "joining a rank's stream");
  }
}

void Executor::run_step(size_t local, int step, const std::vector<char*>& peers, abi::Header& h, cudaStream_t s) {
  const Rank& r = ranks_[local];
  if (step >= 0) {
    void* args[] = {&h, const_cast<char**>(peers.data())};
    launch_kernel(stream_kernels_.at(step), args, s,
                  name_ + ": launching rank " + std::to_string(r.rank) + "'s step kernel " + std::to_string(step));
    return;
  }
  // Every unit of the phase, from the rank's source buffer to each destination's output.
  const std::vector<int64_t>& t = spec_.tables[r.rank];
  const int64_t ph = abi::kGlobalWords + spec_.world + int64_t(-step - 1) * abi::kPhaseWords;
  const char* base = t[ph + abi::kPhSource] ? h.output : h.input;
  for (int64_t u = 0; u < t[ph + abi::kPhUnits]; ++u) {
    const int64_t unit = t[ph + abi::kPhUnitsAt] + u * abi::kUnitWords;
    const char* src = base + t[unit + abi::kUSrc];
    const int64_t bytes = t[unit + abi::kUBytes], at = t[unit + abi::kUDestsAt];
    for (int64_t c = 0; c < t[unit + abi::kUDests] && bytes > 0; ++c) {
      char* dst = peers[size_t(spec_.world + t[at + 2 * c])] + t[at + 2 * c + 1];
      if (dst == src) continue;  // the rank's input is that slice of its own output
      check(cudaMemcpyAsync(dst, src, size_t(bytes), cudaMemcpyDeviceToDevice, s),
            name_ + ": rank " + std::to_string(r.rank) + "'s copy-engine copy");
    }
  }
}

void Executor::launch(size_t local, uintptr_t input, uintptr_t output, uintptr_t stream) {
  if (failed_)
    throw CudaError(name_ + ": this communicator failed earlier (a wait timed out) and its epochs are "
                    "inconsistent; create a new one");
  check_recorded_errors();
  if (spec_.symmetric)
    throw std::invalid_argument(name_ + ": the kernel reads and writes every rank's buffers in place (symmetric), "
                                "so its ranks cannot be launched one by one; lower it without symmetric=true");
  if (spec_.count_words > 0)
    throw std::invalid_argument(name_ + ": this kernel reads its counts on the device; launch it with run()");
  Rank& r = ranks_.at(local);
  DeviceRestore restore;
  check(cudaSetDevice(r.device), "cudaSetDevice");
  check_pointer(r, 0, input, spec_.input_bytes[r.rank], "input");
  check_pointer(r, 1, output, spec_.output_bytes[r.rank], "output");
  abi::Header h = r.params;
  h.input = reinterpret_cast<char*>(input);
  h.input_bytes = spec_.input_bytes[r.rank];
  h.output = reinterpret_cast<char*>(output);
  h.programmatic = programmatic_;
  void* args[] = {&h, nullptr};
  launch_kernel(kernel_of(local), args, reinterpret_cast<cudaStream_t>(stream), name_ + ": launching rank " +
                std::to_string(r.rank));
}

void Executor::launch_kernel(cudaKernel_t k, void** args, cudaStream_t s, const std::string& what) const {
  cudaLaunchAttribute early{};
  early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  early.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(spec_.grid);
  config.blockDim = dim3(static_cast<unsigned>(spec_.threads));
  config.dynamicSmemBytes = static_cast<size_t>(spec_.smem);
  config.stream = s;
  config.attrs = &early;
  config.numAttrs = programmatic_ ? 1 : 0;
  check(cudaLaunchKernelExC(&config, reinterpret_cast<const void*>(k), args), what);
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
  // Plain string building: iostreams in nvcc-compiled units crashed on the
  // GPU machine (inside ostream's integer insertion).
  using std::to_string;
  std::string msg;
  int found = 0;
  std::string counts_msg, buffers_msg;
  for (size_t i = 0; i < ranks_.size(); ++i) {
    const volatile abi::ErrorRecord& e = errors_[i];
    if (!e.valid) continue;
    if (e.packets == abi::kBadBuffers) {
      const char* what = e.packet ? "output" : "input";
      // The records hold keys: (heap serial << kSerialShift) + offset.
      auto where = [](uint64_t key) {
        return "offset " + std::to_string(key & ((uint64_t(1) << DeviceHeap::kSerialShift) - 1)) + " of heap " +
               std::to_string(key >> DeviceHeap::kSerialShift);
      };
      buffers_msg += (buffers_msg.empty() ? "" : "\n") + name_ + ": rank " + to_string(int(e.rank)) + "'s " + what +
                     " is at " + where(e.awaited) + ", rank " + to_string(int(e.slot)) + "'s at " + where(e.seen) +
                     " (epoch " + to_string(uint64_t(e.epoch)) + ")";
      continue;
    }
    if (e.packets == abi::kBadCounts) {
      counts_msg += (counts_msg.empty() ? "" : "\n") + name_ + ": rank " + to_string(int(e.rank)) + ": " +
                    counts_problem(int(e.packet), int(e.slot), int64_t(e.seen), int64_t(e.awaited));
      continue;
    }
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", timeout_ns_ / 1e9);
    const int site = e.site;
    const std::string what = site >= 0 && site < spec_.sites ? spec_.site_names[site]
                             : site == -1 ? "the check of rank " + to_string(int(e.slot)) + "'s buffer offsets"
                                          : "site " + to_string(site);
    msg += (found++ ? "\n" : "") + name_ + ": rank " + to_string(int(e.rank)) + " (GPU " +
           to_string(ranks_[i].device) + ") timed out after " + seconds + " s in block " + to_string(int(e.block)) +
           " at " + what + ": ";
    if (e.packets)
      msg += "packet " + to_string(int64_t(e.packet)) + " from rank " + to_string(int(e.slot)) + " has flag " +
             to_string(uint64_t(e.seen)) + ", expected >= " + to_string(uint64_t(e.awaited));
    else if (e.slot < 0)
      msg += "the role's blocks reached " + to_string(uint64_t(e.seen)) + " arrivals, expected " +
             to_string(uint64_t(e.awaited));
    else
      msg += "signal slot [" + to_string(int(e.slot)) + "] is " + to_string(uint64_t(e.seen)) + ", expected >= " +
             to_string(uint64_t(e.awaited));
    msg += " (epoch " + to_string(uint64_t(e.epoch)) + ")";
  }
  if (found > 0 || !counts_msg.empty() || !buffers_msg.empty()) failed_ = true;
  if (!buffers_msg.empty())
    throw BadBuffersError(buffers_msg +
                          "\nevery rank must pass buffers in the same heap, at the same offsets, in each call "
                          "(allocate them alike, in the same order, with alloc(), or register alike memory); no "
                          "rank wrote into a peer whose buffers differ; this communicator cannot be used again");
  if (!counts_msg.empty() && !found)
    throw BadCountsError(counts_msg + "\nno rank moved any data; this communicator cannot be used again");
  if (found)
    throw TimeoutError(msg +
                       "\nthe peer never signalled: it hung, was not launched, ran another kernel or call sequence, "
                       "or the protocol is wrong");
}

uint64_t Executor::epoch(size_t local) {
  const Rank& r = ranks_.at(local);
  DeviceRestore restore;
  check(cudaSetDevice(r.device), "cudaSetDevice");
  check(cudaDeviceSynchronize(), name_ + ": synchronizing GPU " + std::to_string(r.device));
  abi::BlockState s{};
  check(cudaMemcpy(&s, r.state, sizeof(s), cudaMemcpyDeviceToHost), "reading the epoch");
  return s.epoch;
}

}  // namespace detail

// -- one process, every rank --------------------------------------------------

Communicator::Communicator(KernelSpec spec, std::vector<int> devices, double timeout_s, std::string name)
    : exec_(std::move(spec), timeout_s, std::move(name)) {
  const std::string& who = exec_.name();
  if (static_cast<int>(devices.size()) != exec_.spec().world)
    throw std::invalid_argument(who + ": the kernel is for " + std::to_string(exec_.spec().world) + " ranks, got " +
                                std::to_string(devices.size()) + " devices");
  DeviceRestore restore;
  try {
    exec_.check_devices(devices);
    enable_peer_access(devices);
    std::vector<detail::Executor::Rank> ranks;
    for (size_t rank = 0; rank < devices.size(); ++rank) {
      ranks.push_back({});
      ranks.back().rank = static_cast<int>(rank);
      ranks.back().device = devices[rank];
    }
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
  const std::set<int> distinct(devices.begin(), devices.end());
  for (int i : distinct) {
    for (int j : distinct) {
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
                       const std::vector<uintptr_t>& streams, const CallCounts& counts) {
  const size_t w = exec_.ranks().size();
  if (inputs.size() != w || outputs.size() != w || streams.size() != w)
    throw std::invalid_argument(exec_.name() + ": run needs one input, output and stream per rank (" +
                                std::to_string(w) + ")");
  exec_.run(inputs, outputs, streams, counts);
}

void Communicator::run_rank(int rank, uintptr_t input, uintptr_t output, uintptr_t stream) {
  if (rank < 0 || rank >= world())
    throw std::invalid_argument(exec_.name() + ": rank " + std::to_string(rank) + " is outside world " +
                                std::to_string(world()));
  exec_.launch(static_cast<size_t>(rank), input, output, stream);
}

uint64_t Communicator::epoch(int rank) {
  if (rank < 0 || rank >= world())
    throw std::invalid_argument(exec_.name() + ": rank " + std::to_string(rank) + " is outside world " +
                                std::to_string(world()));
  return exec_.epoch(static_cast<size_t>(rank));
}

// -- one process per rank -----------------------------------------------------

namespace {

constexpr char kIpcTag[16] = "purlin.ipc.v3";
constexpr char kHeapTag[16] = "purlin.heap.v1";

// What ipc_handle() returns, byte for byte.
struct IpcBlob {
  char tag[16];
  int32_t rank, world;
  int64_t bytes;         // of the symmetric allocation
  uint64_t fingerprint;  // ranks must run the same kernel
  cudaIpcMemHandle_t memory;
};

// What DeviceHeap::ipc_handle() returns.
struct HeapBlob {
  char tag[16];
  int32_t rank, world;
  int64_t bytes;
  int64_t offset;   // of the heap in the allocation `memory` exports (registered memory)
  uint64_t serial;  // this rank's proposal: the heap's serial is the largest
  cudaIpcMemHandle_t memory;
};

// Proposals for DeviceHeap serials: increasing in the order a process makes
// its heaps, so the largest over the ranks is too, for heaps every rank makes
// in the same order.
std::atomic<uint64_t> next_serial{1};

void check_heap_rank(const std::string& name, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument(name + ": rank " + std::to_string(rank) + " is outside a world of " +
                                std::to_string(world));
}

// FNV-1a over what every rank's kernel must agree on.
uint64_t fingerprint(const KernelSpec& s) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  };
  mix(s.cubin.data(), s.cubin.size());
  mix(s.name.data(), s.name.size());
  mix(&s.world, sizeof(s.world));
  mix(&s.symmetric_bytes, sizeof(s.symmetric_bytes));
  for (const auto& t : s.tables) mix(t.data() + abi::kGlobalWords + s.world,
                                     (t.size() - abi::kGlobalWords - s.world) * sizeof(int64_t));
  return h;
}

// The blobs of `handles` (every rank's, in rank order) checked for their tag,
// size, rank and world; `T` has tag, rank and world first.
template <class T>
std::vector<T> read_blobs(const std::vector<std::string>& handles, const char* tag, int world,
                          const std::string& who) {
  if (static_cast<int>(handles.size()) != world)
    throw std::invalid_argument(who + ": connect needs one handle per rank (" + std::to_string(world) + "), got " +
                                std::to_string(handles.size()));
  std::vector<T> blobs(handles.size());
  for (size_t r = 0; r < handles.size(); ++r) {
    const std::string where = who + ": handle " + std::to_string(r);
    if (handles[r].size() != sizeof(T) || std::memcmp(handles[r].data(), tag, std::strlen(tag) + 1) != 0)
      throw std::invalid_argument(where + " is not a purlin IPC handle (" + tag + ", " + std::to_string(sizeof(T)) +
                                  " bytes); pass ipc_handle() of every rank");
    T& b = blobs[r];
    std::memcpy(&b, handles[r].data(), sizeof(b));
    if (b.world != world)
      throw std::invalid_argument(where + " is from a world of " + std::to_string(b.world) + ", this one's is " +
                                  std::to_string(world));
    if (b.rank != static_cast<int>(r))
      throw std::invalid_argument(where + " is rank " + std::to_string(b.rank) + "'s; handles go in rank order");
  }
  return blobs;
}

// Every rank's memory as this process addresses it: `mine` for `rank`, the
// others' IPC handles opened on `device` (into `opened`, by rank).
template <class T>
std::vector<char*> open_blobs(const std::vector<T>& blobs, int rank, int device, char* mine,
                              std::vector<char*>& opened, const std::string& who) {
  check(cudaSetDevice(device), "cudaSetDevice");
  opened.assign(blobs.size(), nullptr);
  std::vector<char*> all(blobs.size());
  for (size_t r = 0; r < blobs.size(); ++r) {
    if (static_cast<int>(r) == rank) {
      all[r] = mine;
      continue;
    }
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, blobs[r].memory, cudaIpcMemLazyEnablePeerAccess),
          who + ": rank " + std::to_string(rank) + " (GPU " + std::to_string(device) + ") opening rank " +
              std::to_string(r) + "'s memory (ranks must share a node, with peer access between their GPUs)");
    all[r] = opened[r] = static_cast<char*>(p);
  }
  return all;
}

// Closes the mappings `opened` on `device`, once its kernels are done with them.
void close_opened(std::vector<char*>& opened, int device) {
  DeviceRestore restore;
  cudaSetDevice(device);
  cudaDeviceSynchronize();
  for (char* p : opened)
    if (p) cudaIpcCloseMemHandle(p);
  opened.clear();
  cudaGetLastError();
}

}  // namespace

// -- a heap every rank maps ---------------------------------------------------

DeviceHeap::DeviceHeap(int rank, int world, int device, int64_t bytes, std::string name)
    : rank_(rank), world_(world), device_(device), bytes_(bytes), name_(std::move(name)) {
  check_heap_rank(name_, rank, world);
  if (bytes <= 0) throw std::invalid_argument(name_ + ": a heap needs a positive size, got " + std::to_string(bytes));
  DeviceRestore restore;
  check(cudaSetDevice(device), "cudaSetDevice");
  check(cudaMalloc(&memory_, size_t(bytes)), name_ + ": allocating " + std::to_string(bytes) + " bytes of heap");
  try {
    export_handle(memory_);
  } catch (...) {
    cudaFree(memory_);
    throw;
  }
}

DeviceHeap::DeviceHeap(int rank, int world, int device, uintptr_t memory, int64_t bytes, std::string name)
    : rank_(rank), world_(world), device_(device), bytes_(bytes), name_(std::move(name)),
      memory_(reinterpret_cast<char*>(memory)), owned_(false) {
  check_heap_rank(name_, rank, world);
  if (bytes <= 0)
    throw std::invalid_argument(name_ + ": registered memory needs a positive size, got " + std::to_string(bytes));
  DeviceRestore restore;
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaPointerAttributes attrs{};
  if (cudaPointerGetAttributes(&attrs, memory_) != cudaSuccess || attrs.type != cudaMemoryTypeDevice ||
      attrs.device != device) {
    cudaGetLastError();
    throw std::invalid_argument(name_ + ": rank " + std::to_string(rank) + "'s memory at " + std::to_string(memory) +
                                " is not device memory of GPU " + std::to_string(device));
  }
  AddressRangeFn range = address_range_fn();
  CUdeviceptr base = 0;
  size_t size = 0;
  if (!range || range(&base, &size, CUdeviceptr(memory)) != CUDA_SUCCESS)
    throw std::invalid_argument(name_ + ": the allocation holding rank " + std::to_string(rank) +
                                "'s memory could not be found (cuMemGetAddressRange)");
  if (memory + uintptr_t(bytes) > base + size)
    throw std::invalid_argument(name_ + ": rank " + std::to_string(rank) + "'s " + std::to_string(bytes) +
                                " bytes run past the end of their allocation (" +
                                std::to_string(base + size - memory) + " bytes left there)");
  export_handle(reinterpret_cast<char*>(base));
}

void DeviceHeap::export_handle(char* allocation) {
  HeapBlob blob{};
  std::memcpy(blob.tag, kHeapTag, sizeof(kHeapTag));
  blob.rank = rank_;
  blob.world = world_;
  blob.bytes = bytes_;
  blob.offset = memory_ - allocation;
  blob.serial = next_serial.fetch_add(1);
  const cudaError_t e = cudaIpcGetMemHandle(&blob.memory, allocation);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::invalid_argument(name_ + ": exporting rank " + std::to_string(rank_) + "'s " +
                                (owned_ ? "heap" : "registered memory") + " failed (" + cudaGetErrorString(e) +
                                "); CUDA IPC exports memory of cudaMalloc, which a torch tensor has unless "
                                "PYTORCH_CUDA_ALLOC_CONF sets expandable_segments");
  }
  handle_.assign(reinterpret_cast<const char*>(&blob), sizeof(blob));
}

DeviceHeap::~DeviceHeap() {
  close_opened(peers_, device_);
  if (!owned_) return;
  DeviceRestore restore;
  cudaSetDevice(device_);
  cudaFree(memory_);
  cudaGetLastError();
}

void DeviceHeap::connect(const std::vector<std::string>& handles) {
  if (connected()) throw std::logic_error(name_ + ": rank " + std::to_string(rank_) + " is already connected");
  const std::vector<HeapBlob> blobs = read_blobs<HeapBlob>(handles, kHeapTag, world_, name_);
  for (size_t r = 0; r < blobs.size(); ++r)
    if (blobs[r].bytes != bytes_)
      throw std::invalid_argument(name_ + ": handle " + std::to_string(r) + " is a heap of " +
                                  std::to_string(blobs[r].bytes) + " bytes, this rank's has " +
                                  std::to_string(bytes_) + "; every rank's heap must be one size");
  if (handles[rank_] != handle_)
    throw std::invalid_argument(name_ + ": handle " + std::to_string(rank_) + " is not this heap's own");
  DeviceRestore restore;
  std::vector<char*> bases;
  try {
    bases = open_blobs(blobs, rank_, device_, memory_, peers_, name_);
  } catch (...) {
    close_opened(peers_, device_);
    throw;
  }
  for (size_t r = 0; r < blobs.size(); ++r) {
    if (int(r) != rank_) bases[r] += blobs[r].offset;
    serial_ = std::max(serial_, blobs[r].serial);
  }
  bases_ = std::move(bases);
}

// -- one process per rank -----------------------------------------------------

ProcessCommunicator::ProcessCommunicator(KernelSpec spec, int rank, int device, double timeout_s, std::string name,
                                         std::vector<std::shared_ptr<DeviceHeap>> heaps)
    : exec_(std::move(spec), timeout_s, std::move(name)), rank_(rank), device_(device),
      fingerprint_(fingerprint(exec_.spec())), heaps_(std::move(heaps)) {
  const std::string& who = exec_.name();
  if (rank < 0 || rank >= world())
    throw std::invalid_argument(who + ": rank " + std::to_string(rank) + " is outside the kernel's world " +
                                std::to_string(world()));
  if (exec_.spec().symmetric && heaps_.empty())
    throw std::invalid_argument(who + ": the kernel reads and writes the peers' buffers in place (symmetric): "
                                "another process reaches them only in a heap every rank maps; give it a "
                                "DeviceHeap and buffers from it, or register the buffers' memory");
  if (!exec_.spec().symmetric && !heaps_.empty())
    throw std::invalid_argument(who + ": a heap is for a symmetric kernel; this one stages the data in its own "
                                "memory, and its buffers may be anywhere on the rank's GPU");
  for (const auto& heap : heaps_) {
    if (!heap) throw std::invalid_argument(who + ": a heap is None");
    if (heap->rank() != rank || heap->world() != world() || heap->device() != device)
      throw std::invalid_argument(who + ": the heap is rank " + std::to_string(heap->rank()) + "'s of a world of " +
                                  std::to_string(heap->world()) + " on GPU " + std::to_string(heap->device()) +
                                  ", this communicator is rank " + std::to_string(rank) + " of " +
                                  std::to_string(world()) + " on GPU " + std::to_string(device));
    if (!heap->connected())
      throw std::invalid_argument(who + ": the heap is not connected: call its connect() with every rank's handle "
                                  "first");
  }
  if (!exec_.spec().stream.empty())
    throw std::invalid_argument(who + ": the kernel has copy-engine steps (a stream role), whose copies into the "
                                "peers' buffers no device check orders across processes; lower it without "
                                "mech=ce");
  // A world of one has no other process to order anything for.
  if (exec_.spec().gpu_scope && world() > 1)
    throw std::invalid_argument(who + ": the kernel signals at GPU scope, which orders nothing for ranks of other "
                                "processes on other GPUs; lower it with scope=system");
  DeviceRestore restore;
  try {
    exec_.check_devices({device});
    if (!heaps_.empty()) exec_.reserve_record();
    detail::Executor::Rank r;
    r.rank = rank;
    r.device = device;
    exec_.allocate({r});
    handle_ = export_handle();
  } catch (...) {
    exec_.release();
    throw;
  }
}

ProcessCommunicator::~ProcessCommunicator() { close_opened(peers_, device_); }

std::string ProcessCommunicator::export_handle() const {
  IpcBlob blob{};
  std::memcpy(blob.tag, kIpcTag, sizeof(kIpcTag));
  blob.rank = rank_;
  blob.world = world();
  blob.bytes = exec_.spec().symmetric_bytes;
  blob.fingerprint = fingerprint_;
  check(cudaIpcGetMemHandle(&blob.memory, exec_.ranks()[0].symmetric),
        exec_.name() + ": exporting rank " + std::to_string(rank_) + "'s symmetric memory");
  return std::string(reinterpret_cast<const char*>(&blob), sizeof(blob));
}

void ProcessCommunicator::connect(const std::vector<std::string>& handles) {
  const std::string& who = exec_.name();
  if (connected_) throw std::logic_error(who + ": rank " + std::to_string(rank_) + " is already connected");
  const std::vector<IpcBlob> blobs = read_blobs<IpcBlob>(handles, kIpcTag, world(), who);
  for (size_t r = 0; r < blobs.size(); ++r)
    if (blobs[r].fingerprint != fingerprint_ || blobs[r].bytes != exec_.spec().symmetric_bytes)
      throw std::invalid_argument(who + ": handle " + std::to_string(r) + " is for another kernel (" +
                                  std::to_string(blobs[r].bytes) + " bytes of symmetric memory, this rank has " +
                                  std::to_string(exec_.spec().symmetric_bytes) +
                                  "); every rank must run the same collective");
  if (handles[rank_] != handle_)
    throw std::invalid_argument(who + ": handle " + std::to_string(rank_) + " is not this communicator's own");
  DeviceRestore restore;
  try {
    exec_.upload(open_blobs(blobs, rank_, device_, exec_.ranks()[0].symmetric, peers_, who));
  } catch (...) {
    close_opened(peers_, device_);
    throw;
  }
  connected_ = true;
}

void ProcessCommunicator::run(uintptr_t input, uintptr_t output, uintptr_t stream, uintptr_t counts,
                              uintptr_t recv_counts) {
  if (!connected_)
    throw std::logic_error(exec_.name() + ": rank " + std::to_string(rank_) +
                           " is not connected: call connect() with every rank's ipc_handle() first");
  const CallCounts call =
      exec_.spec().count_words > 0 || counts || recv_counts ? CallCounts{{counts}, {recv_counts}} : CallCounts{};
  if (heaps_.empty()) {
    exec_.run({input}, {output}, {stream}, call);
    return;
  }
  const auto [in_heap, input_key] = heap_key(input, exec_.spec().input_bytes[rank_], "input");
  const auto [out_heap, output_key] = heap_key(output, exec_.spec().output_bytes[rank_], "output");
  // Every rank's buffers in the same heaps at this rank's offsets: the kernel
  // checks the peers' records before it touches theirs.
  const int64_t mask = (int64_t(1) << DeviceHeap::kSerialShift) - 1;
  const size_t w = size_t(world());
  std::vector<char*> peers(2 * w);
  for (size_t r = 0; r < w; ++r) {
    peers[r] = in_heap->bases()[r] + (input_key & mask);
    peers[w + r] = out_heap->bases()[r] + (output_key & mask);
  }
  exec_.run({input}, {output}, {stream}, call, peers, input_key, output_key);
}

std::pair<const DeviceHeap*, int64_t> ProcessCommunicator::heap_key(uintptr_t ptr, int64_t bytes,
                                                                    const char* what) const {
  for (const auto& heap : heaps_)
    if (ptr >= heap->base() && int64_t(ptr - heap->base()) + bytes <= heap->bytes())
      return {heap.get(), int64_t(heap->serial() << DeviceHeap::kSerialShift) + int64_t(ptr - heap->base())};
  std::string sizes;
  for (const auto& heap : heaps_) sizes += (sizes.empty() ? "" : ", ") + std::to_string(heap->bytes());
  throw std::invalid_argument(exec_.name() + ": rank " + std::to_string(rank_) + "'s " + what + " (" +
                              std::to_string(bytes) + " bytes) is not in its heap" +
                              (heaps_.size() > 1 ? "s" : "") + " of " + sizes +
                              " bytes: a symmetric kernel's buffers come from a heap or registered memory, at the "
                              "same offsets on every rank");
}

}  // namespace purlin::cuda
