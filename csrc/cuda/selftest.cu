// Standalone check of the CUDA executor on 1 or 2 GPUs, without Python:
// hand-built plans (all_gather through staging and through packets,
// all_reduce direct), several calls per plan so both staging halves are used,
// a CUDA graph replay, and a timeout that must surface as TimeoutError.
// Every rank also sends to itself, so one GPU exercises every instruction.
#include <cuda_runtime.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "context.h"

using namespace purlin;

namespace {

struct R {  // a ref
  Space space;
  int64_t rank, buf = 0, slot = 0, offset = 0;
};
struct I {  // an instruction, with the plan format's defaults
  Op op;
  Mech mech = Mech::None;
  int64_t elems = 0, sig = 0, peer = 0, slot = 0;
  Base base = Base::Epoch;
  int64_t rel = 0;
  Order order = Order::Relaxed;
  RedOp redop = RedOp::None;
  int64_t buf = 0, offset = 0;
  std::vector<R> refs;  // destination first, when there is one
  bool has_dst = false;
};

struct PlanSpec {
  int64_t world, arch, dtype, input_elems, output_elems, threads = 256;
  std::vector<int64_t> role_blocks;
  std::vector<std::array<int64_t, 3>> buffers;  // kind, slots, elems
  int64_t signals = 0;
  std::vector<std::vector<std::vector<I>>> programs;  // [rank][role]

  // The binary form of purlin/plan.py Plan.encode.
  std::vector<int64_t> encode() const {
    std::vector<int64_t> w = {kMagic, kVersion, world, arch, dtype, input_elems, output_elems, 1, threads,
                              int64_t(role_blocks.size()), int64_t(buffers.size()), signals, 0, 0, 0, 0};
    for (int64_t b : role_blocks) w.insert(w.end(), {1, b});
    for (const auto& b : buffers) w.insert(w.end(), b.begin(), b.end());
    for (int64_t s = 0; s < signals; ++s) w.push_back(world);
    const size_t dir = w.size();
    w.resize(w.size() + world * role_blocks.size() * 2);
    std::vector<int64_t> instrs, refs;
    int64_t n_instrs = 0, n_refs = 0;
    for (int64_t r = 0; r < world; ++r)
      for (size_t k = 0; k < role_blocks.size(); ++k) {
        w[dir + 2 * (r * role_blocks.size() + k)] = n_instrs;
        w[dir + 2 * (r * role_blocks.size() + k) + 1] = int64_t(programs[r][k].size());
        for (const I& i : programs[r][k]) {
          const int64_t first = n_refs;
          for (const R& x : i.refs) refs.insert(refs.end(), {int64_t(x.space), x.rank, x.buf, x.slot, x.offset});
          n_refs += int64_t(i.refs.size());
          const int64_t srcs = int64_t(i.refs.size()) - (i.has_dst ? 1 : 0);
          instrs.insert(instrs.end(), {int64_t(i.op), int64_t(i.mech), i.elems, i.sig, i.peer, i.slot,
                                       int64_t(i.base), i.rel, int64_t(i.order), 1, int64_t(i.redop), i.buf,
                                       i.offset, i.has_dst ? first : -1, i.has_dst ? first + 1 : first, srcs});
          ++n_instrs;
        }
      }
    w.insert(w.end(), {n_instrs, n_refs});
    w.insert(w.end(), instrs.begin(), instrs.end());
    w.insert(w.end(), refs.begin(), refs.end());
    return w;
  }
};

PlanSpec make_spec(int64_t world, int64_t arch, DType dtype, int64_t input_elems, int64_t output_elems) {
  PlanSpec p;
  p.world = world;
  p.arch = arch;
  p.dtype = int64_t(dtype);
  p.input_elems = input_elems;
  p.output_elems = output_elems;
  return p;
}

I copy(int64_t n, R dst, R src, Mech m) {
  I i{Op::Copy, m, n};
  i.refs = {dst, src};
  i.has_dst = true;
  return i;
}
I reduce_sum(int64_t n, R dst, Mech m) {
  I i{Op::Reduce, m, n};
  i.redop = RedOp::Sum;
  i.refs = {dst};
  i.has_dst = true;
  return i;
}
I signal(int64_t peer, int64_t slot) { return I{Op::Signal, Mech::None, 0, 0, peer, slot, Base::Epoch, 1, Order::Release}; }
I wait(int64_t slot) { return I{Op::Wait, Mech::None, 0, 0, 0, slot, Base::Epoch, 1, Order::Acquire}; }
I put(int64_t n, int64_t peer, R src) {
  I i{Op::Put, Mech::Packet, n, 0, peer};
  i.refs = {src};
  return i;
}
I wait_packets(int64_t n, int64_t source) {
  I i{Op::WaitPackets, Mech::Packet, n, 0, source};
  i.order = Order::Acquire;
  return i;
}

// all_gather of n elements per rank; staged (signals) or pushed as packets.
PlanSpec all_gather(int world, int arch, DType dtype, int64_t n, Mech mech, bool packets) {
  const int64_t eb = dtype == DType::F32 ? 4 : dtype == DType::BF16 || dtype == DType::F16 ? 2 : 1;
  const int64_t per_packet = 8 / eb, padded = (n + per_packet - 1) / per_packet * per_packet;
  PlanSpec p = make_spec(world, arch, dtype, n, world * n);
  p.role_blocks = {2, 3};
  if (packets)
    p.buffers.push_back({1, world, padded});
  else
    p.buffers.push_back({0, 1, n});
  p.signals = packets ? 0 : 1;
  p.programs.resize(world);
  for (int me = 0; me < world; ++me) {
    std::vector<I> produce, consume;
    if (!packets) produce.push_back(copy(n, {Space::Staging, me}, {Space::Input, me}, mech));
    for (int peer = 0; peer < world; ++peer) {
      if (packets)
        produce.push_back(put(n, peer, {Space::Input, me}));
      else
        produce.push_back(signal(peer, me));
      const R out{Space::Output, me, 0, 0, peer * n};
      if (packets) {
        consume.push_back(wait_packets(n, peer));
        consume.push_back(copy(n, out, {Space::Window, me, 0, peer}, mech));
      } else {
        consume.push_back(wait(peer));
        consume.push_back(copy(n, out, {Space::Staging, peer}, mech));
      }
    }
    p.programs[me] = {produce, consume};
  }
  return p;
}

// all_reduce (sum) of n elements, direct: every rank reduces all staged inputs in rank order.
PlanSpec all_reduce(int world, int arch, DType dtype, int64_t n, Mech mech) {
  PlanSpec p = make_spec(world, arch, dtype, n, n);
  p.role_blocks = {2, 2};
  p.buffers = {{0, 1, n}};
  p.signals = 1;
  p.programs.resize(world);
  for (int me = 0; me < world; ++me) {
    std::vector<I> produce{copy(n, {Space::Staging, me}, {Space::Input, me}, mech)}, consume;
    I reduce = reduce_sum(n, {Space::Output, me}, mech);
    for (int peer = 0; peer < world; ++peer) {
      produce.push_back(signal(peer, me));
      consume.push_back(wait(peer));
      reduce.refs.push_back({Space::Staging, peer});
    }
    consume.push_back(reduce);
    p.programs[me] = {produce, consume};
  }
  return p;
}

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

uint16_t bf16_bits(float x) {  // exact for the small integers used here
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t(u >> 16);
}

struct Buffers {
  std::vector<char*> in, out;
  std::vector<cudaStream_t> streams;
  std::vector<int> devices;
  Buffers(const std::vector<int>& devs, int64_t in_bytes, int64_t out_bytes) : devices(devs) {
    for (int d : devs) {
      cuda_check(cudaSetDevice(d), "cudaSetDevice");
      char *i, *o;
      cudaStream_t s;
      cuda_check(cudaMalloc(&i, in_bytes + 16), "cudaMalloc");
      cuda_check(cudaMalloc(&o, out_bytes + 16), "cudaMalloc");
      cuda_check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      in.push_back(i);
      out.push_back(o);
      streams.push_back(s);
    }
  }
  ~Buffers() {
    for (size_t r = 0; r < devices.size(); ++r) {
      cudaSetDevice(devices[r]);
      cudaFree(in[r]);
      cudaFree(out[r]);
      cudaStreamDestroy(streams[r]);
    }
  }
  static std::vector<uintptr_t> ptrs(const std::vector<char*>& v) {
    std::vector<uintptr_t> p;
    for (char* x : v) p.push_back(reinterpret_cast<uintptr_t>(x));
    return p;
  }
  std::vector<uintptr_t> handles() const {
    std::vector<uintptr_t> h;
    for (cudaStream_t s : streams) h.push_back(reinterpret_cast<uintptr_t>(s));
    return h;
  }
};

// Input element k of `rank` at call `call`, as raw bytes of the dtype.
std::vector<char> input_bytes(DType dtype, int rank, int call, int64_t n) {
  std::vector<char> b;
  for (int64_t k = 0; k < n; ++k) {
    const float v = float((k * 7 + rank * 3 + call * 5) % 17 - 8);
    if (dtype == DType::F32) {
      b.insert(b.end(), reinterpret_cast<const char*>(&v), reinterpret_cast<const char*>(&v) + 4);
    } else {
      const uint16_t h = bf16_bits(v);
      b.insert(b.end(), reinterpret_cast<const char*>(&h), reinterpret_cast<const char*>(&h) + 2);
    }
  }
  return b;
}

// Runs `calls` calls of the plan and compares every rank's output with `expect`.
std::string run_and_check(const PlanSpec& spec, const std::vector<int>& devices, int calls, bool reduce,
                          bool graph) {
  const DType dtype = DType(spec.dtype);
  const int64_t eb = dtype == DType::F32 ? 4 : 2, n = spec.input_elems;
  const int world = int(devices.size());
  const auto words = spec.encode();
  cuda::Communicator comm(words.data(), int64_t(words.size()), devices, 5.0, "selftest");
  Buffers bufs(devices, n * eb, spec.output_elems * eb);
  std::vector<cudaGraphExec_t> execs(world);
  if (graph) {  // one capture per rank, replayed `calls` times on fixed inputs
    for (int r = 0; r < world; ++r) {
      cuda_check(cudaSetDevice(devices[r]), "cudaSetDevice");
      const auto in = input_bytes(dtype, r, 0, n);
      cuda_check(cudaMemcpy(bufs.in[r], in.data(), in.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
      cuda_check(cudaStreamBeginCapture(bufs.streams[r], cudaStreamCaptureModeRelaxed), "begin capture");
    }
    comm.run(bufs.ptrs(bufs.in), bufs.ptrs(bufs.out), bufs.handles());
    for (int r = 0; r < world; ++r) {
      cudaGraph_t g;
      cuda_check(cudaSetDevice(devices[r]), "cudaSetDevice");
      cuda_check(cudaStreamEndCapture(bufs.streams[r], &g), "end capture");
      cuda_check(cudaGraphInstantiate(&execs[r], g, 0), "instantiate");
      cudaGraphDestroy(g);
    }
  }
  for (int call = 0; call < calls; ++call) {
    const int data_call = graph ? 0 : call;
    if (graph) {
      for (int r = 0; r < world; ++r) {
        cuda_check(cudaSetDevice(devices[r]), "cudaSetDevice");
        cuda_check(cudaGraphLaunch(execs[r], bufs.streams[r]), "graph launch");
      }
    } else {
      for (int r = 0; r < world; ++r) {
        cuda_check(cudaSetDevice(devices[r]), "cudaSetDevice");
        const auto in = input_bytes(dtype, r, call, n);
        cuda_check(cudaMemcpy(bufs.in[r], in.data(), in.size(), cudaMemcpyHostToDevice), "cudaMemcpy");
        cuda_check(cudaMemset(bufs.out[r], 0x7f, spec.output_elems * eb), "cudaMemset");
      }
      comm.run(bufs.ptrs(bufs.in), bufs.ptrs(bufs.out), bufs.handles());
    }
    comm.synchronize();
    std::vector<char> expect;
    if (reduce) {
      for (int64_t k = 0; k < n; ++k) {
        float sum = 0;
        for (int r = 0; r < world; ++r) sum += float((k * 7 + r * 3 + data_call * 5) % 17 - 8);
        const uint16_t h = bf16_bits(sum);
        expect.insert(expect.end(), reinterpret_cast<const char*>(&h), reinterpret_cast<const char*>(&h) + 2);
      }
    } else {
      for (int r = 0; r < world; ++r) {
        const auto in = input_bytes(dtype, r, data_call, n);
        expect.insert(expect.end(), in.begin(), in.end());
      }
    }
    for (int r = 0; r < world; ++r) {
      std::vector<char> got(expect.size());
      cuda_check(cudaSetDevice(devices[r]), "cudaSetDevice");
      cuda_check(cudaMemcpy(got.data(), bufs.out[r], got.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (size_t b = 0; b < got.size(); ++b)
        if (got[b] != expect[b])
          return "call " + std::to_string(call) + " rank " + std::to_string(r) + ": byte " + std::to_string(b) +
                 " is " + std::to_string(uint8_t(got[b])) + ", expected " + std::to_string(uint8_t(expect[b]));
    }
  }
  for (int r = 0; r < world; ++r) {
    if (comm.epoch(r) != uint64_t(calls))
      return "rank " + std::to_string(r) + " epoch " + std::to_string(comm.epoch(r)) + " after " +
             std::to_string(calls) + " calls";
    if (graph) cudaGraphExecDestroy(execs[r]);
  }
  return "";
}

std::string timeout_is_reported(int device, int arch) {
  PlanSpec p = make_spec(1, arch, DType::F32, 0, 0);
  p.role_blocks = {1};
  p.signals = 1;
  p.programs = {{{wait(0)}}};
  const auto words = p.encode();
  cuda::Communicator comm(words.data(), int64_t(words.size()), {device}, 0.2, "selftest");
  cudaStream_t s;
  cuda_check(cudaSetDevice(device), "cudaSetDevice");
  cuda_check(cudaStreamCreate(&s), "cudaStreamCreate");
  comm.run({0}, {0}, {reinterpret_cast<uintptr_t>(s)});
  std::string result = "no TimeoutError";
  try {
    comm.synchronize();
  } catch (const cuda::TimeoutError& e) {
    const std::string msg = e.what();
    result = msg.find("signals[0][0] is 0, expected >= 1") != std::string::npos ? "" : "message: " + msg;
    std::printf("  (reported: %s)\n", msg.substr(0, msg.find('\n')).c_str());
  }
  cudaStreamDestroy(s);
  return result;
}

}  // namespace

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no GPU\n");
    return 1;
  }
  std::vector<int> devices = count >= 2 ? std::vector<int>{0, 1} : std::vector<int>{0};
  cudaDeviceProp prop;
  cuda_check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const int arch = prop.major * 10, world = int(devices.size());
  std::printf("selftest: %d rank(s) on %s (sm_%d%d)\n", world, prop.name, prop.major, prop.minor);
  enum Kind { kGatherStaged, kGatherStagedBf16, kReduce, kGatherPackets, kGraph, kTimeout };
  struct Test {
    std::string name;
    Kind kind;
    Mech mech;
    int64_t n;
  };
  std::vector<Test> tests;
  std::vector<std::pair<std::string, Mech>> mechs = {{"vector", Mech::Vector}, {"cp_async", Mech::CpAsync}};
  if (arch >= 90) mechs.push_back({"bulk", Mech::Bulk});
  for (const auto& m : mechs) {
    for (int64_t n : {int64_t(1) << 20, int64_t(1003)}) {
      tests.push_back({"all_gather staged f32 " + m.first + " n=" + std::to_string(n), kGatherStaged, m.second, n});
      tests.push_back({"all_reduce direct bf16 " + m.first + " n=" + std::to_string(n), kReduce, m.second, n});
    }
    // Rank 1's block starts 6 bytes past 16-byte alignment: a peeled head, then shifted copies.
    const int64_t odd = (int64_t(1) << 20) + 3;
    tests.push_back({"all_gather staged bf16 " + m.first + " n=" + std::to_string(odd), kGatherStagedBf16, m.second, odd});
  }
  for (int64_t n : {int64_t(4096), int64_t(37)})
    tests.push_back({"all_gather packets bf16 n=" + std::to_string(n), kGatherPackets, Mech::Vector, n});
  tests.push_back({"all_gather staged f32, CUDA graph replayed 4 times", kGraph, Mech::Vector, 4096});
  tests.push_back({"timeout is reported", kTimeout, Mech::None, 0});
  int passed = 0, failed = 0;
  for (const Test& t : tests) {
    std::string error;
    try {
      switch (t.kind) {
        case kGatherStaged:
          error = run_and_check(all_gather(world, arch, DType::F32, t.n, t.mech, false), devices, 5, false, false);
          break;
        case kGatherStagedBf16:
          error = run_and_check(all_gather(world, arch, DType::BF16, t.n, t.mech, false), devices, 5, false, false);
          break;
        case kReduce:
          error = run_and_check(all_reduce(world, arch, DType::BF16, t.n, t.mech), devices, 5, true, false);
          break;
        case kGatherPackets:
          error = run_and_check(all_gather(world, arch, DType::BF16, t.n, t.mech, true), devices, 5, false, false);
          break;
        case kGraph:
          error = run_and_check(all_gather(world, arch, DType::F32, t.n, t.mech, false), devices, 4, false, true);
          break;
        case kTimeout: error = timeout_is_reported(devices[0], arch); break;
      }
    } catch (const std::exception& e) {
      error = std::string("exception: ") + e.what();
    }
    std::printf("%s %s%s%s\n", error.empty() ? "PASS" : "FAIL", t.name.c_str(), error.empty() ? "" : ": ",
                error.c_str());
    (error.empty() ? passed : failed)++;
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
