// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_90}' -t cuda | filecheck %s --check-prefix=LAT
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed chunk-bytes=1024 slots=2 blocks=4},convert-snac-to-atom{arch=sm_80}' -t cuda | filecheck %s --check-prefix=THR
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},convert-snac-to-atom{arch=sm_100}' -t cuda | filecheck %s --check-prefix=SIZE
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=throughput strategy=composed symmetric=true ranks-per-device=4},convert-snac-to-atom{arch=sm_90}' -t cuda | filecheck %s --check-prefix=SYM
// RUN: not purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency}' -t cuda 2>&1 | filecheck %s --check-prefix=NOKERNEL

// -t cuda: one translation unit per atom.kernel. Roles are blockIdx ranges,
// loops stay loops, each atom op is a call into purlin/kernel.cuh with its
// phase, mechanism, order and role size folded in; sizes and offsets are read
// from the rank's tables, so no count of the layouts appears in the code.

func.func @all_reduce(%in: memref<1000xbf16>, %out: memref<1000xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<1000xbf16>, memref<1000xbf16>
  func.return
}

// Latency: one fused role; the loop of puts and the loop of polls become one
// call each that spreads (item, packet) pieces over the threads.
// LAT:      // purlin: latency direct collective, world 4, sm_90, generated from the atom.kernel at {{.*}}target-cuda.mlir:{{[0-9]+}}:3
// LAT-NEXT: #define PURLIN_BLOCKS_PER_SM 1 // the headers size their loads in flight by it
// LAT-NEXT: #include <purlin/kernel.cuh>
// LAT:      constexpr int kWorld = 4;
// LAT:      constexpr bool kSystem = true;
// LAT:      using K = Kernel<kWorld, kSharedTables, kSystem>;
// LAT:      // 1 block of 512 threads, all co-resident.
// LAT-NEXT: extern "C" __global__ void __launch_bounds__(512, 1)
// LAT-NEXT: purlin_latency_direct(const __grid_constant__ abi::Header p) {
// The first put's input word is loaded beside the tables (ReadAhead): the put is the role's first step.
// LAT:        const ReadAhead ahead(p);
// LAT-NEXT:   K k(p, reinterpret_cast<i64*>(smem + kSmem));
// LAT:        const u64 [[RANK:v[0-9]+]] = k.rank();
// LAT-NEXT:   const u64 [[EPOCH:v[0-9]+]] = k.epoch, {{v[0-9]+}} = k.prev;
// LAT-NEXT:   const u64 [[HALF:v[0-9]+]] = [[EPOCH]] & 1;
// LAT-NEXT:   const u64 [[C0:v[0-9]+]] = 0ull;
// LAT-NEXT:   const u64 [[C1:v[0-9]+]] = 1ull;
// LAT-NEXT:   const u64 [[MOST:v[0-9]+]] = k.t(K::phase(0) + abi::kPhMaxUnits);
// LAT-NEXT:   const u64 [[ADV:v[0-9]+]] = [[MOST]] | [[C1]];
// LAT:        const u64 [[FLAG:v[0-9]+]] = [[EPOCH]] + [[C1]];
// LAT-NEXT:   if (blockIdx.x < 1) {  // atom.blocks fused first 0 blocks 1
// LAT-NEXT:     const Part part{int(blockIdx.x) - 0, 1};
// LAT-NEXT:     const u64 [[UNITS:v[0-9]+]] = k.t(K::phase(0) + abi::kPhUnits);
// LAT-NEXT:     put_units(k, 0, [[C0]], [[UNITS]], [[HALF]], [[FLAG]], part, ahead);  // scf.for over atom.put
// LAT-NEXT:     const u64 [[GROUPS:v[0-9]+]] = k.t(K::phase(0) + abi::kPhGroups);
// LAT-NEXT:     // scf.for over atom.wait_packets + consume
// LAT-NEXT:     poll_consume<DType::BF16, true>(k, 0, int(RedOp::Sum), [[C0]], [[GROUPS]], [[HALF]], [[EPOCH]], part, 0);
// LAT-NEXT:   }
// LAT-NEXT:   advance(k, [[ADV]]);
// LAT-NEXT: }
// LAT-NOT:  1000

// Throughput, composed: producer, reducer and consumer roles side by side;
// signals of multi-block roles name their role size; the reducer waits for
// all its blocks before it stages the output it reduced into. A phase that
// one multi-block role notifies counts its ready signals: each block adds one
// (notify<4, true, true>), and the wait knows the blocks and what a call
// advances the epoch by.
// THR:      purlin: throughput composed collective, world 4, sm_80
// THR:      // 12 blocks of 512 threads, all co-resident.
// THR-NOT:  ReadAhead
// THR:      if (blockIdx.x < 4) {  // atom.blocks producer first 0 blocks 4
// THR:        for (u64 [[U:v[0-9]+]] = {{v[0-9]+}}; [[U]] < {{v[0-9]+}}; [[U]] += {{v[0-9]+}}) {
// THR-NEXT:     wait_free<abi::Moves::Staging, true>(k, 0, [[U]],
// THR-NEXT:     stage<DType::BF16, Mech::CpAsync, 16>(k, 0, [[U]], {{v[0-9]+}}, part, smem, kSmem);
// THR:          // atom.fence: folded into the release store that follows
// THR-NEXT:     notify<4, true, true>(k, 0, [[U]],
// THR:      if (blockIdx.x >= 4 && blockIdx.x < 8) {  // atom.blocks reducer first 4 blocks 4
// THR:          wait_ready<true, 4>(k, 0, [[G:v[0-9]+]], {{.*}}, [[ADV:v[0-9]+]]);
// THR-NEXT:     consume<DType::BF16, Mech::Vector, 16, true, abi::Moves::Staging>(k, 0, int(RedOp::Sum), [[G]],
// THR-NEXT:     wait_free<abi::Moves::Staging, true>(k, 1, [[G]],
// THR-NEXT:     role_barrier<4>(k, {{[0-9]+}}, [[G]]);
// THR-NEXT:     stage<DType::BF16, Mech::CpAsync, 16>(k, 1, [[G]],
// THR:          notify<4, true, true>(k, 1, [[G]],
// THR-NEXT:     ack<4, true>(k, 0, [[G]],
// THR:        finish<4, true, abi::Moves::Staging>(k, 0,
// THR:      if (blockIdx.x >= 8 && blockIdx.x < 12) {  // atom.blocks consumer first 8 blocks 4
// THR:          consume<DType::BF16, Mech::Vector, 16, false, abi::Moves::Staging>(k, 1, int(RedOp::None),

// Every size of the same structure and block size is the same code (a test
// compiles 2, 3 and 4 KiB once); sm_100 differs from sm_90 in its header only.
// SIZE:     purlin: latency direct collective, world 4, sm_100
// SIZE:     purlin_latency_direct

// Symmetric and composed, every rank on one GPU: GPU scope, the ranks' buffers as a second
// parameter, each owner's reduce fused with the push that forwards it, and
// the consumer's loop of waits one wait over all its groups; a small call,
// one block an SM of the four ranks' share.
// SYM:      constexpr bool kSystem = false;
// SYM:      // 33 blocks of 512 threads, all co-resident.
// SYM:      purlin_throughput_composed(const __grid_constant__ abi::Header p, const __grid_constant__ abi::Peers<kWorld> peers) {
// SYM:        K k(p, reinterpret_cast<i64*>(smem + kSmem), &peers);
// SYM:          drain<true>(k, 0,
// SYM:          wait_ready<true>(k, 0, [[G:v[0-9]+]], [[G]] + 1,
// SYM-NEXT:     wait_free<abi::Moves::Push, true>(k, 1, [[G]],
// SYM-NEXT:     reduce_push<DType::BF16, Mech::Vector, 16>(k, 0, int(RedOp::Sum), [[G]], 1, part, smem, kSmem);  // atom.reduce + atom.push @forward
// SYM:          notify<31, true, true>(k, 1, [[G]],
// SYM:        finish<31, true, abi::Moves::Pull>(k, 0,
// SYM:        grant<true>(k, 1,
// SYM-NEXT:   const u64 [[N:v[0-9]+]] = k.t(K::phase(1) + abi::kPhGroups);
// SYM-NEXT:   wait_ready<true, 31>(k, 1, {{v[0-9]+}}, [[N]], {{v[0-9]+}}, {{[0-9]+}}, [[ADV:v[0-9]+]]);  // scf.for over atom.wait_ready
// SYM:        advance(k, [[ADV]]);

// NOKERNEL: error: no atom.kernel to compile; lower with convert-snac-to-atom first
