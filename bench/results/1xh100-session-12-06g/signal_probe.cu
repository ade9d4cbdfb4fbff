// How long a counted ready signal takes on one GPU: G groups of B producer
// blocks each tell G consumer blocks they are done; the consumers poll.
// mode 0: red.add to slot [c][g], the G slots of a consumer in one line (purlin's notify<Counted>)
// mode 1: the same, every slot on its own 128-byte line
// mode 2: every producer block stores a flag of its own (no atomics), the consumer polls G*B flags
// data: each producer block first writes `data` bytes (the push before the notify).
// Then grants (the other direction): G blocks grant every rank, P blocks a rank poll (1 or 15).
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
typedef unsigned long long u64;

__device__ __forceinline__ u64 gt() { u64 t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t; }
__device__ __forceinline__ u64 ldr(const u64* p) { u64 v; asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory"); return v; }

// Every block starts at one time: 20 us after the first block's arrival, which sets it.
__device__ u64 start_together(u64* go) {
  __shared__ u64 start;
  if (threadIdx.x == 0) {
    const u64 now = gt(), first = atomicCAS(go, 0ull, now + 20000);
    start = first ? first : now + 20000;
    while (gt() < start) {}
  }
  __syncthreads();
  return start;
}

__global__ void probe(int mode, int G, int B, u64* slots, u64* go, u64* stamps, char* data, long data_bytes, u64 epoch) {
  const u64 start = start_together(go);
  const int id = blockIdx.x;
  if (id < G * B) {
    const int g = id / B, b = id % B;
    if (data_bytes) {
      uint4* d = reinterpret_cast<uint4*>(data + long(id) * data_bytes);
      for (long i = threadIdx.x; i < data_bytes / 16; i += blockDim.x) d[i] = make_uint4(i, g, b, 1);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      for (int c = 0; c < G; ++c) {
        if (mode == 0) asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(slots + c * 8 + g) : "memory");
        if (mode == 1) asm volatile("red.relaxed.gpu.global.add.u64 [%0], 1;" ::"l"(slots + (c * G + g) * 16) : "memory");
        if (mode == 2) asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(slots + (c * G * B + id) * 2), "l"(epoch) : "memory");
      }
      stamps[id] = gt();
    }
  } else {
    const int c = id - G * B;
    const int n = mode == 2 ? G * B : G;
    for (int j = threadIdx.x; j < n; j += blockDim.x) {
      const u64* s = mode == 0 ? slots + c * 8 + j : mode == 1 ? slots + (c * G + j) * 16 : slots + (c * G * B + j) * 2;
      const u64 need = mode == 2 ? epoch : u64(B) * epoch;
      while (ldr(s) < need) {}
    }
    __syncthreads();
    if (threadIdx.x == 0) stamps[id] = gt();
  }
  if (threadIdx.x == 0 && id == 0) stamps[G * B + G] = start;
}


// Grants: G blocks each store a grant into slot [g] of every rank's line; P blocks of each rank poll
// all G slots of their rank's line (G threads a block), napping as purlin's polls do when `naps`.
__global__ void grants(int G, int P, int naps, u64* slots, u64* go, u64* stamps, u64 epoch) {
  const u64 start = start_together(go);
  const int id = blockIdx.x;
  if (id < G) {
    if (threadIdx.x == 0) {
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
      for (int r = 0; r < G; ++r)
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(slots + r * 16 + id), "l"(epoch) : "memory");
      stamps[id] = gt();
    }
  } else {
    const int r = (id - G) / P;
    if (threadIdx.x < G) {
      int polls = 0;
      unsigned nap = 32;
      while (ldr(slots + r * 16 + threadIdx.x) < epoch) {
        if (naps && ++polls > 16) { __nanosleep(nap); nap = nap < 256 ? 2 * nap : 256; }
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) stamps[id] = gt();
  }
  if (threadIdx.x == 0 && id == 0) stamps[G + G * P] = start;
}

int main() {
  const int G = 8, B = 15, threads = 512;
  u64 *slots, *go, *stamps;
  char* data;
  cudaMalloc(&slots, 1 << 20);
  cudaMalloc(&go, 8);
  cudaMalloc(&stamps, 8 * 1024);
  const long data_max = 70 << 10;
  cudaMalloc(&data, data_max * G * B);
  std::vector<u64> h(G * B + G + 1);
  for (long data_bytes : {0L, data_max}) {
    for (int mode = 0; mode < 3; ++mode) {
      cudaMemset(slots, 0, 1 << 20);
      std::vector<double> issue_to_seen, go_to_seen, go_to_issue;
      for (u64 e = 1; e <= 30; ++e) {
        cudaMemset(go, 0, 8);
        probe<<<G * B + G, threads>>>(mode, G, B, slots, go, stamps, data, data_bytes, e);
        cudaMemcpy(h.data(), stamps, h.size() * 8, cudaMemcpyDeviceToHost);
        u64 issue = *std::max_element(h.begin(), h.begin() + G * B);
        u64 seen = *std::max_element(h.begin() + G * B, h.begin() + G * B + G);
        u64 st = h[G * B + G];
        if (e > 5) {
          issue_to_seen.push_back((double(seen) - double(issue)) / 1e3);
          go_to_seen.push_back((double(seen) - double(st)) / 1e3);
          go_to_issue.push_back((double(issue) - double(st)) / 1e3);
        }
      }
      auto med = [](std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      printf("mode %d data %6ld B/block: go->last issue %6.2f us, last issue->last seen %6.2f us, go->seen %6.2f us\n",
             mode, data_bytes, med(go_to_issue), med(issue_to_seen), med(go_to_seen));
    }
  }
  for (int P : {1, 15}) {
    for (int naps : {0, 1}) {
      cudaMemset(slots, 0, 1 << 20);
      std::vector<u64> hg(G + G * P + 1);
      std::vector<double> seen_after;
      for (u64 e = 1; e <= 30; ++e) {
        cudaMemset(go, 0, 8);
        grants<<<G + G * P, threads>>>(G, P, naps, slots, go, stamps, e);
        cudaMemcpy(hg.data(), stamps, hg.size() * 8, cudaMemcpyDeviceToHost);
        u64 issue = *std::max_element(hg.begin(), hg.begin() + G);
        u64 seen = *std::max_element(hg.begin() + G, hg.begin() + G + G * P);
        if (e > 5) seen_after.push_back((double(seen) - double(issue)) / 1e3);
      }
      std::sort(seen_after.begin(), seen_after.end());
      printf("grants: %2d polling blocks a rank, naps %d: last grant issued -> last poller saw all %6.2f us\n", P, naps,
             seen_after[seen_after.size() / 2]);
    }
  }
  cudaError_t err = cudaDeviceSynchronize();
  printf("%s\n", cudaGetErrorString(err));
  return 0;
}
