// HBM rate of a copy that reads R bytes and writes k*R (k destinations), and of one that reads k*R and
// writes R, against k = 1: is a write-heavy (all_gather) or read-heavy (reduce_scatter) pattern slower
// per byte moved than a 1:1 copy? Timed as graph replays (20 kernels a graph, median of 7).
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
typedef unsigned long long u64;

// Each 16-byte vector of src to every one of k outputs (fan-out), or the sum of k sources to one output (fan-in).
__global__ void __launch_bounds__(512) fan_out(const uint4* __restrict__ src, uint4* __restrict__ dst, long n, int k) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    const uint4 v = src[i];
    for (int j = 0; j < k; ++j) dst[j * n + i] = v;
  }
}
__global__ void __launch_bounds__(512) fan_in(const uint4* __restrict__ src, uint4* __restrict__ dst, long n, int k) {
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)gridDim.x * blockDim.x) {
    uint4 a = src[i];
    for (int j = 1; j < k; ++j) { const uint4 b = src[j * n + i]; a.x ^= b.x; a.y ^= b.y; a.z ^= b.z; a.w ^= b.w; }
    dst[i] = a;
  }
}

int main() {
  const long total = 2304l << 20;  // bytes moved (read + written) per kernel, as all_gather 256 MiB at world 8
  uint4 *a, *b;
  CK(cudaMalloc(&a, total));
  CK(cudaMalloc(&b, total));
  CK(cudaMemset(a, 1, total));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  int sms;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int in : {0, 1}) {
    for (int k : {1, 2, 4, 8}) {
      for (int bps : {1, 2, 4}) {
        const long n = total / 16 / (k + 1);  // vectors of the single side
        cudaGraph_t g;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int r = 0; r < 20; ++r) {
          if (in) fan_in<<<sms * bps, 512, 0, s>>>(a, b, n, k);
          else fan_out<<<sms * bps, 512, 0, s>>>(a, b, n, k);
        }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ge, g, 0));
        cudaEvent_t e0, e1;
        cudaEventCreate(&e0);
        cudaEventCreate(&e1);
        std::vector<float> t;
        for (int i = 0; i < 9; ++i) {
          cudaEventRecord(e0, s);
          cudaGraphLaunch(ge, s);
          cudaEventRecord(e1, s);
          CK(cudaEventSynchronize(e1));
          float ms;
          cudaEventElapsedTime(&ms, e0, e1);
          if (i >= 2) t.push_back(ms / 20);
        }
        std::sort(t.begin(), t.end());
        const double bytes = double(n) * 16 * (k + 1);
        printf("%s k=%d blocks/SM=%d: %.1f us, %.0f GB/s (read+written)\n", in ? "fan-in " : "fan-out", k, bps,
               t[t.size() / 2] * 1e3, bytes / (t[t.size() / 2] * 1e-3) / 1e9);
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
      }
    }
  }
  CK(cudaDeviceSynchronize());
  return 0;
}
