// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true ranks-per-device=4},snac-verify' | filecheck %s
// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true ranks-per-device=4},snac-verify,convert-snac-to-atom{arch=sm_90}' | filecheck %s --check-prefix=ATOM
// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true copy-engine=true ranks-per-device=4},convert-snac-to-atom{arch=sm_100}' -t cuda | filecheck %s --check-prefix=CUDA

// copy-engine=true: a symmetric copy collective as one stream role, its
// steps in order on the rank's stream: grant the rank's output, wait for
// every destination's grant, push every unit (the copy engine's copies),
// announce them, wait for every group. snac-verify proves it as it is.

func.func @all_gather(%in: memref<256xbf16>, %out: memref<1024xbf16>) {
  coll.all_gather %in, %out world 4 : memref<256xbf16>, memref<1024xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_gather
// CHECK:       snac.program %in, %out world 4 regime throughput strategy copy symmetric
// CHECK-NOT:   snac.buffer
// CHECK:       snac.phase @exchange {{.*}} consume <copy> chunk 0 direct push
// CHECK:       snac.role stream blocks 1 {
// CHECK-NEXT:    snac.grant @exchange of %{{.*}} release gpu
// CHECK-NEXT:    %[[UNITS:.*]] = snac.units @exchange
// CHECK-NEXT:    scf.for %[[U:.*]] = %{{.*}} to %[[UNITS]]
// CHECK-NEXT:      snac.reclaim @exchange unit %[[U]] {{.*}} acquire gpu
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[P:.*]] = %{{.*}} to %[[UNITS]]
// CHECK-NEXT:      snac.push @exchange unit %[[P]]
// CHECK-NEXT:    }
// CHECK-NEXT:    scf.for %[[N:.*]] = %{{.*}} to %[[UNITS]]
// CHECK:           snac.notify @exchange unit %[[N]] {{.*}} release gpu
// CHECK:         %[[GROUPS:.*]] = snac.groups @exchange
// CHECK-NEXT:    scf.for %[[G:.*]] = %{{.*}} to %[[GROUPS]]
// CHECK-NEXT:      snac.wait @exchange group %[[G]] {{.*}} acquire gpu
// CHECK-NOT:   snac.role

// The pushes are the copy engine's; the one block only signals: one warp.
// ATOM-LABEL: func.func @all_gather
// ATOM:       atom.kernel {{.*}} target sm_90 threads 32 smem 0
// ATOM:       atom.blocks stream first 0 blocks 1 {
// ATOM:         atom.wait_free @exchange
// ATOM:         atom.push @exchange unit %{{.*}} mech copy_engine width 16
// ATOM:         atom.notify @exchange

// -t cuda: a kernel per signal step, NAME_0 before the copies and NAME_1
// after them, which alone advances the epochs.
// CUDA-LABEL: // purlin: throughput copy collective, world 4, sm_100
// CUDA:       // Step 0 of a stream role: one block of 32 threads.
// CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(32, 1)
// CUDA-NEXT:  purlin_throughput_copy_0(const __grid_constant__ abi::Header p, const __grid_constant__ abi::Peers<kWorld> peers) {
// CUDA:         grant<true>(k, 0,
// CUDA:         wait_free<abi::Moves::Push, true>(k, 0,
// CUDA-NOT:     push<
// CUDA-NOT:     advance(
// CUDA:       // Step 2 of a stream role: one block of 32 threads.
// CUDA-NEXT:  extern "C" __global__ void __launch_bounds__(32, 1)
// CUDA-NEXT:  purlin_throughput_copy_1(
// CUDA-NOT:     push<
// CUDA:         notify<1, true>(k, 0,
// CUDA:         wait_ready<true>(k, 0,
// CUDA:         advance(k,

// -----

// all_to_all: one unit per destination, each its own copy.
func.func @all_to_all(%in: memref<1000xf32>, %out: memref<1000xf32>) {
  coll.all_to_all %in, %out world 4 : memref<1000xf32>, memref<1000xf32>
  func.return
}
// CHECK-LABEL: func.func @all_to_all
// CHECK:       snac.role stream blocks 1 {
// CHECK:         snac.push @exchange unit
// ATOM-LABEL: func.func @all_to_all
// ATOM:         atom.push @exchange unit %{{.*}} mech copy_engine
// CUDA-LABEL: // purlin: throughput copy collective, world 4, sm_100
// CUDA:       purlin_throughput_copy_0(
// CUDA:       purlin_throughput_copy_1(
