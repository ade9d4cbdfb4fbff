// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true ranks-per-device=8},snac-verify' | filecheck %s
// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true},snac-verify' | filecheck %s --check-prefix=OWN

// symmetric=true: the ranks' buffers are one another's, so the throughput
// regime moves data in place (no snac.buffer), and snac-verify proves it.
// With all 8 ranks on one GPU (ranks-per-device=8) every signal is at GPU
// scope and a rank's grid fits 2 x 132 / 8 = 33 blocks, or 132 / 8 = 16 where
// a rank moves at most 2 MiB (copies) or 4 MiB (reductions): one block an SM;
// alone on its GPU it keeps system scope and the cost model's 64 blocks per
// data role.

// A reduction with a slice every rank receives is composed: each owner
// pulls its slice from every input and pushes the reduced slice to the
// other ranks' outputs.
func.func @all_reduce(%in: memref<1048576xbf16>, %out: memref<1048576xbf16>) {
  coll.all_reduce sum %in, %out world 8 : memref<1048576xbf16>, memref<1048576xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce
// CHECK:       snac.program %in, %out world 8 regime throughput strategy composed symmetric
// CHECK-NOT:   snac.buffer
// CHECK:       snac.phase @reduce from input {{.*}} route to_owner consume <reduce sum> chunk 0 direct pull
// CHECK:       snac.phase @forward from output {{.*}} route from_owner consume <copy> chunk 0 direct push
// CHECK:       snac.role producer blocks 1 {
// CHECK:         snac.notify @reduce unit %{{.*}} release gpu
// CHECK:         snac.drain @reduce of %{{.*}} acquire gpu
// CHECK:       snac.role reducer blocks 14 {
// CHECK:           snac.wait @reduce
// CHECK-NEXT:      snac.consume @reduce
// CHECK-NEXT:      snac.reclaim @forward
// CHECK-NEXT:      snac.push @forward
// CHECK:           snac.notify @forward
// CHECK:         snac.finish @reduce
// CHECK:       snac.role consumer blocks 1 {
// CHECK-NEXT:    snac.grant @forward
// CHECK-NOT:     snac.consume
// CHECK:       snac.advance
// OWN-LABEL:   func.func @all_reduce
// OWN:         snac.role reducer blocks 64 {
// OWN:           snac.wait @reduce group %{{.*}} acquire system

// -----

// A copy pushes: the producer reads its input once and writes every
// destination, its own output included (stage_local); the consumer only
// opens its output (grant) and waits.
func.func @all_gather(%in: memref<131072xf32>, %out: memref<1048576xf32>) {
  coll.all_gather %in, %out world 8 : memref<131072xf32>, memref<1048576xf32>
  func.return
}
// CHECK-LABEL: func.func @all_gather
// CHECK:       snac.phase @exchange from input <packed, world 8, 131072> to <scattered, world 8, 131072> consume <copy> chunk 0 direct push ready @exchange_ready free @exchange_free stage_local
// CHECK:       snac.role producer blocks 32 {
// CHECK:           snac.reclaim @exchange
// CHECK-NEXT:      snac.push @exchange
// CHECK:           snac.notify @exchange
// CHECK:       snac.role consumer blocks 1 {
// CHECK-NEXT:    snac.grant @exchange of %{{.*}} release gpu
// CHECK-NOT:   snac.role local

// -----

// A reduction no two ranks receive alike pulls: the producer announces its
// units in place, then drains; the consumer reduces, then finishes.
func.func @reduce_scatter(%in: memref<1048576xf32>, %out: memref<131072xf32>) {
  coll.reduce_scatter max %in, %out world 8 : memref<1048576xf32>, memref<131072xf32>
  func.return
}
// CHECK-LABEL: func.func @reduce_scatter
// CHECK:       snac.program %in, %out world 8 regime throughput strategy direct symmetric
// CHECK:       snac.phase @exchange from input {{.*}} consume <reduce max> chunk 0 direct pull
// CHECK:       snac.role producer blocks 1 {
// CHECK:           snac.notify @exchange
// CHECK:         snac.drain @exchange
// CHECK:       snac.role consumer blocks 15 {
// CHECK:           snac.consume @exchange
// CHECK:         snac.finish @exchange
