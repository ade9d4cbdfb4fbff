// What rate the collectives' traffic patterns reach on one GPU with no protocol at all (a measuring
// tool, not a source of purlin's kernels): every rank's buffers in one HBM, one fused grid over all SMs
// or one grid per rank on its own stream ("split", SMs x blocks an SM / W blocks each), in a CUDA graph
// of 20 calls. Prints us and the ratio to the least traffic at the fused copy rate measured here.
//   nvcc -O3 -arch=sm_90 bench/traffic_probe.cu -o tp && ./tp 2,4,8 16777216 [NAME]   (worlds; sizes: the larger
//   buffer of a rank; only the variants whose name holds NAME)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)

struct Ptrs { char* p[8]; };
enum Op { COPY, AG, RS, AR, A2A, READ, WRITE };

template <bool CS>
__device__ __forceinline__ void st(char* p, int4 v) {
  if (CS) __stcs(reinterpret_cast<int4*>(p), v); else *reinterpret_cast<int4*>(p) = v;
}
__device__ __forceinline__ int4 ld(const char* p) { return *reinterpret_cast<const int4*>(p); }

__device__ __forceinline__ int4 add8(int4 a, int4 b) {
  const __nv_bfloat162* x = reinterpret_cast<const __nv_bfloat162*>(&a);
  const __nv_bfloat162* y = reinterpret_cast<const __nv_bfloat162*>(&b);
  int4 r; __nv_bfloat162* z = reinterpret_cast<__nv_bfloat162*>(&r);
  for (int i = 0; i < 4; ++i) z[i] = __float22bfloat162_rn(make_float2(__low2float(x[i]) + __low2float(y[i]), __high2float(x[i]) + __high2float(y[i])));
  return r;
}

// n: per-rank buffer bytes (the larger one). Ranks [r0, r0 + rc) of W handled by this grid.
// One round of U chunks a thread from chunk i on: chunk c's rank (r0 + c / per of 16-byte chunks) and byte
// offset, and v[u] = load(rank, offset) for those below `chunks`.
template <int U, class Load>
__device__ __forceinline__ void load_round(long i, long stride, long chunks, long per, int r0, int (&r)[U],
                                           long (&off)[U], int4 (&v)[U], Load load) {
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const long c = i + u * stride;
    if (c < chunks) { r[u] = r0 + int(c / per); off[u] = (c % per) * 16; v[u] = load(r[u], off[u]); }
  }
}

template <int U, bool CS, bool DOuter, int MinBlocks = 1>
__global__ void __launch_bounds__(512, MinBlocks) k_ag(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  const long per = n / W / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 v[U]; long off[U]; int r[U];
    load_round(i, stride, chunks, per, r0, r, off, v, [&](int rr, long o) { return ld(in.p[rr] + o); });
    if (DOuter) {
      for (int d = 0; d < W; ++d)
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (i + u * stride < chunks) st<CS>(out.p[d] + long(r[u]) * (n / W) + off[u], v[u]);
    } else {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks)
          for (int d = 0; d < W; ++d) st<CS>(out.p[d] + long(r[u]) * (n / W) + off[u], v[u]);
    }
  }
}

// A round's sums stored: chunk u (of rank r[u], at off[u] in its slice) to its rank's output, or to
// every rank's (Bcast).
template <int U, bool CS, bool Bcast>
__device__ __forceinline__ void put_round(Ptrs out, int W, long n, long i, long stride, long chunks, const int (&r)[U],
                                          const long (&off)[U], const int4 (&acc)[U]) {
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (i + u * stride < chunks) {
      if (Bcast) { for (int d = 0; d < W; ++d) st<CS>(out.p[d] + long(r[u]) * (n / W) + off[u], acc[u]); }
      else st<CS>(out.p[r[u]] + off[u], acc[u]);
    }
}

// reduce_scatter: out[r] (n / W) = sum_s in[s][r * n / W ...]; all_reduce: chunk range of rank r
// reduced and written to every out[d] (Bcast).
template <int U, bool CS, bool Bcast>
__global__ void __launch_bounds__(512) k_red(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  const long per = n / W / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 acc[U]; long off[U]; int r[U];
    load_round(i, stride, chunks, per, r0, r, off, acc, [&](int rr, long o) { return ld(in.p[0] + long(rr) * (n / W) + o); });
    for (int s = 1; s < W; ++s) {
      int4 x[U];
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) x[u] = ld(in.p[s] + long(r[u]) * (n / W) + off[u]);
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) acc[u] = add8(acc[u], x[u]);
    }
    put_round<U, CS, Bcast>(out, W, n, i, stride, chunks, r, off, acc);
  }
}

// k_red with source s + 1's loads issued before source s's are summed (two sources' loads in flight, 2 x U
// a thread, for any world).
template <int U, bool CS, bool Bcast>
__global__ void __launch_bounds__(512) k_red_pipe(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  const long per = n / W / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 acc[U], next[U]; long off[U]; int r[U];
    load_round(i, stride, chunks, per, r0, r, off, acc, [&](int rr, long o) { return ld(in.p[0] + long(rr) * (n / W) + o); });
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < chunks) next[u] = ld(in.p[1] + long(r[u]) * (n / W) + off[u]);
    for (int s = 1; s < W; ++s) {
      int4 x[U];
#pragma unroll
      for (int u = 0; u < U; ++u) x[u] = next[u];
      if (s + 1 < W) {
#pragma unroll
        for (int u = 0; u < U; ++u)
          if (i + u * stride < chunks) next[u] = ld(in.p[s + 1] + long(r[u]) * (n / W) + off[u]);
      }
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) acc[u] = add8(acc[u], x[u]);
    }
    put_round<U, CS, Bcast>(out, W, n, i, stride, chunks, r, off, acc);
  }
}

// k_red with every source's loads of a round in flight together (k_red issues source s + 1's only after
// source s's arrive): M = W x U loads a thread, the world a template argument so they stay in registers.
template <int W, int U, bool CS, bool Bcast>
__device__ __forceinline__ void red_wide(Ptrs in, Ptrs out, long n, int r0, int rc) {
  const long per = n / W / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 x[W][U]; long off[U]; int r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const long c = i + u * stride;
      r[u] = r0 + int(c / per);
      off[u] = (c % per) * 16;
    }
#pragma unroll
    for (int s = 0; s < W; ++s)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) x[s][u] = ld(in.p[s] + long(r[u]) * (n / W) + off[u]);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i + u * stride >= chunks) continue;
      int4 acc = x[0][u];
#pragma unroll
      for (int s = 1; s < W; ++s) acc = add8(acc, x[s][u]);
      if (Bcast) {
#pragma unroll
        for (int d = 0; d < W; ++d) st<CS>(out.p[d] + long(r[u]) * (n / W) + off[u], acc);
      } else {
        st<CS>(out.p[r[u]] + off[u], acc);
      }
    }
  }
}
// M loads in flight a thread over all sources: U = M / W chunks each (at least one).
template <int M, bool CS, bool Bcast>
__global__ void __launch_bounds__(512) k_red_wide(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  switch (W) {
    case 2: red_wide<2, (M / 2 > 0 ? M / 2 : 1), CS, Bcast>(in, out, n, r0, rc); break;
    case 4: red_wide<4, (M / 4 > 0 ? M / 4 : 1), CS, Bcast>(in, out, n, r0, rc); break;
    case 8: red_wide<8, (M / 8 > 0 ? M / 8 : 1), CS, Bcast>(in, out, n, r0, rc); break;
    default: break;  // worlds 2, 4, 8 only
  }
}

// all_reduce as purlin's reduce_chunks_to_all computes it: f32 accumulators, each destination's store
// packing its chunk again (against k_red's bf16 sums packed once).
__device__ __forceinline__ void unpack8(int4 w, float (&f)[8]) {
  const __nv_bfloat162* x = reinterpret_cast<const __nv_bfloat162*>(&w);
  for (int i = 0; i < 4; ++i) { f[2 * i] = __low2float(x[i]); f[2 * i + 1] = __high2float(x[i]); }
}
__device__ __forceinline__ int4 pack8(const float (&f)[8]) {
  int4 r; __nv_bfloat162* z = reinterpret_cast<__nv_bfloat162*>(&r);
  for (int i = 0; i < 4; ++i) z[i] = __float22bfloat162_rn(make_float2(f[2 * i], f[2 * i + 1]));
  return r;
}
template <int U, bool CS>
__global__ void __launch_bounds__(512) k_ar_f32(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  const long per = n / W / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    float acc[U][8]; long off[U]; int r[U]; int4 raw[U];
    load_round(i, stride, chunks, per, r0, r, off, raw, [&](int rr, long o) { return ld(in.p[0] + long(rr) * (n / W) + o); });
#pragma unroll
    for (int u = 0; u < U; ++u) unpack8(raw[u], acc[u]);
    for (int s = 1; s < W; ++s) {
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) raw[u] = ld(in.p[s] + long(r[u]) * (n / W) + off[u]);
#pragma unroll
      for (int u = 0; u < U; ++u) {
        float x[8]; unpack8(raw[u], x);
        for (int e = 0; e < 8; ++e) acc[u][e] += x[e];
      }
    }
    for (int d = 0; d < W; ++d)
#pragma unroll
      for (int u = 0; u < U; ++u)
        if (i + u * stride < chunks) st<CS>(out.p[d] + long(r[u]) * (n / W) + off[u], pack8(acc[u]));
  }
}

// all_to_all: out[d][s block] = in[s][d block], grid over sources [r0, r0 + rc); copy: out[0] = in[0].
template <int U, bool CS>
__global__ void __launch_bounds__(512) k_a2a(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
  const long per = n / 16, chunks = per * rc, stride = long(gridDim.x) * blockDim.x, blk = n / W;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 v[U]; long off[U]; int r[U];
    load_round(i, stride, chunks, per, r0, r, off, v, [&](int rr, long o) { return ld(in.p[rr] + o); });
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (i + u * stride < chunks) {
        const long d = off[u] / blk;
        st<CS>(out.p[d] + r[u] * blk + off[u] % blk, v[u]);
      }
  }
}

// Reads n bytes of in.p[0] and writes nothing (READ), or writes n bytes of out.p[0] (WRITE): the HBM's
// rate for one direction alone, against the copy rate's even mix.
template <int U>
__global__ void __launch_bounds__(512) k_read(Ptrs in, Ptrs, int, long n, int, int) {
  const long chunks = n / 16, stride = long(gridDim.x) * blockDim.x;
  int4 x = make_int4(0, 0, 0, 0);
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride * U) {
    int4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = i + u * stride < chunks ? ld(in.p[0] + (i + u * stride) * 16) : make_int4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < U; ++u) { x.x ^= v[u].x; x.y ^= v[u].y; x.z ^= v[u].z; x.w ^= v[u].w; }
  }
  if (x.x == 0x7e57ab1e && x.y == x.z) *reinterpret_cast<int4*>(in.p[0]) = x;  // keeps the loads; zeros never match
}
__global__ void __launch_bounds__(512) k_write(Ptrs, Ptrs out, int, long n, int, int) {
  const long chunks = n / 16, stride = long(gridDim.x) * blockDim.x;
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < chunks; i += stride) st<true>(out.p[0] + i * 16, make_int4(0, 0, 0, 0));
}

// reduce_scatter (Bcast: all_reduce) with the sources' tiles brought into shared memory by bulk copies
// (TMA, one issuing thread, S stages of TB bytes a source, completing on an mbarrier): loads in flight
// held in shared memory instead of registers. A rank's slice goes in tiles over the grid's blocks.
#if __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned saddr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }
#endif
template <int S, int TB, bool Bcast>
__global__ void __launch_bounds__(512, 1) k_red_bulk(Ptrs in, Ptrs out, int W, long n, int r0, int rc) {
#if __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) char sm[];
  __shared__ __align__(8) unsigned long long bars[S];
  const long slice = n / W, per = slice / TB, tiles = per * rc;
  const int my = tiles > blockIdx.x ? int((tiles - blockIdx.x + gridDim.x - 1) / gridDim.x) : 0;
  auto stage = [&](int j) { return sm + (j % S) * W * TB; };
  auto tile = [&](int j) { return long(blockIdx.x) + long(j) * gridDim.x; };
  auto issue = [&](int j) {
    const long t = tile(j), off = long(r0 + t / per) * slice + (t % per) * TB;
    const unsigned bar = saddr(&bars[j % S]);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(unsigned(TB * W)) : "memory");
    for (int s = 0; s < W; ++s)
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                   ::"r"(saddr(stage(j) + s * TB)), "l"(in.p[s] + off), "r"(unsigned(TB)), "r"(bar) : "memory");
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(saddr(&bars[s])) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    for (int j = 0; j < S - 1 && j < my; ++j) issue(j);
  }
  __syncthreads();
  for (int j = 0; j < my; ++j) {
    if (threadIdx.x == 0 && j + S - 1 < my) issue(j + S - 1);
    asm volatile("{\n.reg .pred done;\nretry_%=:\nmbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra retry_%=;\n}\n" ::"r"(saddr(&bars[j % S])), "r"(unsigned((j / S) & 1)) : "memory");
    const long t = tile(j);
    const int r = r0 + int(t / per);
    const long at = (t % per) * TB;
    for (int v = threadIdx.x; v < TB / 16; v += blockDim.x) {
      int4 acc = *reinterpret_cast<const int4*>(stage(j) + v * 16);
      for (int s = 1; s < W; ++s) acc = add8(acc, *reinterpret_cast<const int4*>(stage(j) + s * TB + v * 16));
      if (Bcast) { for (int d = 0; d < W; ++d) st<true>(out.p[d] + long(r) * slice + at + v * 16, acc); }
      else st<true>(out.p[r] + at + v * 16, acc);
    }
    __syncthreads();
  }
#endif
}

// copy (W = 1) as an elementwise library kernel runs it: no grid-stride loop, a grid of small blocks
// (threads given at launch), each thread U chunks of 16 bytes, blockDim apart, then the block exits.
template <int U>
__global__ void __launch_bounds__(512) k_copy_tile(Ptrs in, Ptrs out, int, long n, int, int) {
  const long chunks = n / 16, base = long(blockIdx.x) * blockDim.x * U + threadIdx.x;
  int4 v[U];
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (base + u * blockDim.x < chunks) v[u] = ld(in.p[0] + (base + u * blockDim.x) * 16);
#pragma unroll
  for (int u = 0; u < U; ++u)
    if (base + u * blockDim.x < chunks) st<false>(out.p[0] + (base + u * blockDim.x) * 16, v[u]);
}

using Kern = void (*)(Ptrs, Ptrs, int, long, int, int);

__global__ void k_fill_one(char* p, long n) {  // bf16 1.0 everywhere
  for (long i = long(blockIdx.x) * blockDim.x + threadIdx.x; i < n / 2; i += long(gridDim.x) * blockDim.x)
    reinterpret_cast<unsigned short*>(p)[i] = 0x3f80;
}

// The bulk-tile variants (new) are checked: every input all ones, each output element they write must
// then be W (exact in bf16 at worlds 2-8).
static void fill_ones(Ptrs in, Ptrs out, int W, long n) {
  for (int r = 0; r < W; ++r) { k_fill_one<<<264, 512>>>(in.p[r], n); CK(cudaMemset(out.p[r], 0, n)); }
}
static bool check_outputs(Op op, Ptrs out, int W, long n) {
  const long slice = n / W;
  std::vector<unsigned short> h(n / 2);
  const unsigned short want = W == 2 ? 0x4000 : W == 3 ? 0x4040 : W == 4 ? 0x4080 : W == 5 ? 0x40a0 : W == 6 ? 0x40c0 : W == 7 ? 0x40e0 : W == 8 ? 0x4100 : 0;
  bool ok = want != 0;
  for (int d = 0; d < W && ok; ++d) {
    const long bytes = op == RS ? slice : n;
    CK(cudaMemcpy(h.data(), out.p[d], bytes, cudaMemcpyDeviceToHost));
    for (long i = 0; i < bytes / 2 && ok; ++i) ok = h[i] == want;
  }
  return ok;
}

// idle: blocks of each rank's grid that move no data (purlin's producer and consumer roles) run nothing here.
static double timed(Kern k, int sms, int bps, bool split, Ptrs in, Ptrs out, int W, long n, std::vector<cudaStream_t>& ss,
                    int idle = 0, int smem = 0, int threads = 512, int per_thread = 0) {
  if (smem) CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const int reps = 20;
  cudaGraph_t g; cudaGraphExec_t ge;
  std::vector<cudaEvent_t> ev(W + 1);
  for (auto& e : ev) CK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto launch = [&]() {
    if (per_thread) {  // a grid that covers n once, per_thread chunks a thread
      const long per_block = long(threads) * per_thread * 16;
      k<<<unsigned((n + per_block - 1) / per_block), threads, smem, ss[0]>>>(in, out, W, n, 0, W);
      return;
    }
    if (!split) { k<<<sms * bps, 512, smem, ss[0]>>>(in, out, W, n, 0, W); return; }
    CK(cudaEventRecord(ev[W], ss[0]));
    for (int r = 1; r < W; ++r) CK(cudaStreamWaitEvent(ss[r], ev[W]));
    const int blocks = std::max(1, sms * bps / W - idle);
    for (int r = 0; r < W; ++r) k<<<blocks, 512, smem, ss[r]>>>(in, out, W, n, r, 1);
    for (int r = 1; r < W; ++r) { CK(cudaEventRecord(ev[r], ss[r])); CK(cudaStreamWaitEvent(ss[0], ev[r])); }
  };
  launch();
  CK(cudaStreamSynchronize(ss[0]));
  CK(cudaStreamBeginCapture(ss[0], cudaStreamCaptureModeGlobal));
  for (int i = 0; i < reps; ++i) launch();
  CK(cudaStreamEndCapture(ss[0], &g));
  CK(cudaGraphInstantiate(&ge, g, 0));
  CK(cudaGraphLaunch(ge, ss[0]));
  CK(cudaStreamSynchronize(ss[0]));
  std::vector<float> t;
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  for (int s = 0; s < 7; ++s) {
    CK(cudaEventRecord(a, ss[0])); CK(cudaGraphLaunch(ge, ss[0])); CK(cudaEventRecord(b, ss[0]));
    CK(cudaEventSynchronize(b)); float ms; CK(cudaEventElapsedTime(&ms, a, b)); t.push_back(ms * 1000 / reps);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  cudaGraphExecDestroy(ge); cudaGraphDestroy(g);
  for (auto& e : ev) cudaEventDestroy(e);
  cudaEventDestroy(a); cudaEventDestroy(b);
  return t[t.size() / 2];
}

static double least(Op op, int W, long n) {
  switch (op) {
    case COPY: return 2.0 * n;
    case AG: return double(n) + double(W) * n;
    case RS: return double(W) * n + n;
    case READ: case WRITE: return double(n);
    default: return 2.0 * W * n;
  }
}

int main(int argc, char** argv) {
  std::vector<int> worlds = {2, 4, 8};
  std::vector<long> sizes = {1l << 20, 16l << 20, 256l << 20};
  if (argc > 1) { worlds.clear(); for (char* s = strtok(argv[1], ","); s; s = strtok(nullptr, ",")) worlds.push_back(atoi(s)); }
  const char* only = argc > 3 ? argv[3] : nullptr;  // only the variants whose name holds this
  if (argc > 2) { sizes.clear(); for (char* s = strtok(argv[2], ","); s; s = strtok(nullptr, ",")) sizes.push_back(atol(s)); }
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<cudaStream_t> ss(8);
  for (auto& s : ss) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const long big = 1l << 30;
  Ptrs cin{}, cout_{};
  CK(cudaMalloc(&cin.p[0], big)); CK(cudaMalloc(&cout_.p[0], big));
  CK(cudaMemset(cin.p[0], 0, big));
  const double copy_us = timed(k_a2a<4, false>, sms, 2, false, cin, cout_, 1, big, ss);
  const double rate = 2.0 * big / copy_us;  // bytes per us
  printf("copy rate %.0f GB/s (1 GiB, fused copy kernel, 512 x 2 blocks an SM, %d SMs)\n", rate / 1e3, sms);
  CK(cudaFree(cin.p[0])); CK(cudaFree(cout_.p[0]));
  struct V {
    const char* name; Op op; Kern k; int bps; bool split; int idle = 0; int tile = 0; int stages = 0;
    int threads = 512, per_thread = 0;
  };
  const V vs[] = {
      {"ag u4", AG, k_ag<4, false, true>, 2, false},
      {"ag u4 split", AG, k_ag<4, false, true>, 2, true},
      {"ag u4 cs", AG, k_ag<4, true, true>, 2, false},
      {"ag u4 u-outer", AG, k_ag<4, false, false>, 2, false},
      {"ag u8", AG, k_ag<8, false, true>, 2, false},
      {"ag u1", AG, k_ag<1, false, true>, 2, false},
      {"ag u2", AG, k_ag<2, false, true>, 2, false},
      {"ag u4 1/SM", AG, k_ag<4, false, true>, 1, false},
      {"ag u4 4/SM split", AG, k_ag<4, false, true>, 4, true},
      {"rs u4", RS, k_red<4, false, false>, 2, false},
      {"rs u4 split", RS, k_red<4, false, false>, 2, true},
      {"rs u2", RS, k_red<2, false, false>, 2, false},
      {"rs u1", RS, k_red<1, false, false>, 2, false},
      {"rs u8", RS, k_red<8, false, false>, 2, false},
      {"rs u4 1/SM", RS, k_red<4, false, false>, 1, false},
      {"ar u4", AR, k_red<4, false, true>, 2, false},
      {"ar u4 split", AR, k_red<4, false, true>, 2, true},
      {"ar u4 1/SM split", AR, k_red<4, false, true>, 1, true},
      {"ar u2 cs", AR, k_red<2, true, true>, 2, false},
      {"a2a u4", A2A, k_a2a<4, false>, 2, false},
      {"a2a u4 split", A2A, k_a2a<4, false>, 2, true},
      // Streaming stores with the other winners, one grid a rank as purlin launches them.
      {"ag u4 cs split", AG, k_ag<4, true, true>, 2, true},
      {"ag u8 cs split", AG, k_ag<8, true, true>, 2, true},
      {"ag u4 cs 1/SM split", AG, k_ag<4, true, true>, 1, true},
      {"ag u8 cs 1/SM split", AG, k_ag<8, true, true>, 1, true},
      {"rs u4 cs split", RS, k_red<4, true, false>, 2, true},
      {"rs u4 cs 1/SM split", RS, k_red<4, true, false>, 1, true},
      {"ar u2 cs split", AR, k_red<2, true, true>, 2, true},
      {"ar u4 cs 1/SM split", AR, k_red<4, true, true>, 1, true},
      {"a2a u4 cs split", A2A, k_a2a<4, true>, 2, true},
      // all_reduce as purlin runs it at 16 MiB: one block an SM, f32 sums packed per destination, and two
      // blocks of each rank's share without data.
      {"ar f32 cs 1/SM split", AR, k_ar_f32<4, true>, 1, true},
      {"ar u4 cs 1/SM split -2", AR, k_red<4, true, true>, 1, true, 2},
      {"ar f32 cs 1/SM split -2", AR, k_ar_f32<4, true>, 1, true, 2},
      // Two sources' loads in flight (pipe), or every source's (8 or 16 a thread), one block an SM as
      // purlin runs them.
      {"rs pipe u4 cs 1/SM split", RS, k_red_pipe<4, true, false>, 1, true},
      {"ar pipe u4 cs 1/SM split -2", AR, k_red_pipe<4, true, true>, 1, true, 2},
      {"rs wide8 cs 1/SM split", RS, k_red_wide<8, true, false>, 1, true},
      {"rs wide16 cs 1/SM split", RS, k_red_wide<16, true, false>, 1, true},
      {"ar wide8 cs 1/SM split -2", AR, k_red_wide<8, true, true>, 1, true, 2},
      {"ar wide16 cs 1/SM split -2", AR, k_red_wide<16, true, true>, 1, true, 2},
      // all_gather as purlin launches it: one block of each rank's share waits (consumer), and at two
      // blocks an SM ptxas holds a thread to 64 registers (u8 then spills; above it takes 128, so its
      // grids of two blocks an SM run one block an SM at a time, in two waves).
      {"ag u8 cs 1/SM split -1", AG, k_ag<8, true, true>, 1, true, 1},
      {"ag u4 cs 1/SM split -1", AG, k_ag<4, true, true>, 1, true, 1},
      {"ag u8 cs split -1 64reg", AG, k_ag<8, true, true, 2>, 2, true, 1},
      {"ag u4 cs split -1", AG, k_ag<4, true, true>, 2, true, 1},
      // One direction alone (world and size as given; ratio against n bytes at the copy rate).
      {"read u4", READ, k_read<4>, 2, false},
      {"read u8 1/SM", READ, k_read<8>, 1, false},
      {"write cs", WRITE, k_write, 2, false},
      // Bulk-copied tiles (TMA) into shared memory, one block an SM, a grid per rank.
      {"rs bulk s4 t8k split", RS, k_red_bulk<4, 8192, false>, 1, true, 0, 8192, 4},
      {"rs bulk s4 t16k split", RS, k_red_bulk<4, 16384, false>, 1, true, 0, 16384, 4},
      {"rs bulk s8 t4k split", RS, k_red_bulk<8, 4096, false>, 1, true, 0, 4096, 8},
      {"rs bulk s4 t4k split", RS, k_red_bulk<4, 4096, false>, 1, true, 0, 4096, 4},
      {"ar bulk s4 t8k split", AR, k_red_bulk<4, 8192, true>, 1, true, 0, 8192, 4},
      {"ar bulk s4 t16k split", AR, k_red_bulk<4, 16384, true>, 1, true, 0, 16384, 4},
      {"ar bulk s4 t4k split", AR, k_red_bulk<4, 4096, true>, 1, true, 0, 4096, 4},
      // One copy (world 1): persistent grids of 1, 2 and 4 blocks an SM against grids of small blocks
      // that cover the buffer once (an elementwise library kernel's shape).
      {"copy u4 1/SM", COPY, k_a2a<4, false>, 1, false},
      {"copy u8 1/SM", COPY, k_a2a<8, false>, 1, false},
      {"copy u4 2/SM", COPY, k_a2a<4, false>, 2, false},
      {"copy u2 4/SM", COPY, k_a2a<2, false>, 4, false},
      {"copy u4 4/SM", COPY, k_a2a<4, false>, 4, false},
      {"copy tile t128 u1", COPY, k_copy_tile<1>, 0, false, 0, 0, 0, 128, 1},
      {"copy tile t128 u4", COPY, k_copy_tile<4>, 0, false, 0, 0, 0, 128, 4},
      {"copy tile t256 u4", COPY, k_copy_tile<4>, 0, false, 0, 0, 0, 256, 4},
      {"copy tile t512 u4", COPY, k_copy_tile<4>, 0, false, 0, 0, 0, 512, 4},
  };
  printf("%-24s %5s %11s %10s %10s %6s\n", "variant", "world", "bytes", "us", "least us", "ratio");
  for (int W : worlds)
    for (long n : sizes) {
      Ptrs in{}, out{};
      for (int r = 0; r < W; ++r) {
        CK(cudaMalloc(&in.p[r], n)); CK(cudaMalloc(&out.p[r], n));
        CK(cudaMemset(in.p[r], 0, n));
      }
      for (const V& v : vs) {
        if (only && !strstr(v.name, only)) continue;
        const int smem = v.stages * W * v.tile;
        if (smem > 227 * 1024 || (v.tile && (n / W) % v.tile)) continue;  // beyond an SM's shared memory, or no whole tiles
        if (v.tile) fill_ones(in, out, W, n);
        const double us = timed(v.k, sms, v.bps, v.split, in, out, W, n, ss, v.idle, smem, v.threads, v.per_thread);
        if (v.tile && !check_outputs(v.op, out, W, n)) printf("%-24s WRONG results\n", v.name);
        const double l = least(v.op, W, n) / rate;
        printf("%-24s %5d %11ld %10.2f %10.2f %6.2f\n", v.name, W, n, us, l, us / l);
      }
      for (int r = 0; r < W; ++r) { cudaFree(in.p[r]); cudaFree(out.p[r]); }
    }
  return 0;
}
