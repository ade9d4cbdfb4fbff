// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true ranks-per-device=4},snac-verify' | filecheck %s
// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true},snac-verify' | filecheck %s --check-prefix=OWN
// RUN: purlin-opt %s --split-input-file -p 'coll-expand,convert-coll-to-snac{symmetric=true ranks-per-device=4 blocks=16},snac-verify' | filecheck %s --check-prefix=FORCED

// The cost model's copy engine: ranks sharing a GPU, a copy whose slices
// have one receiver each, all on 16 bytes, from 128 MiB per rank
// (cost_model.py has the figures). A GPU of its own keeps the SMs (not measured there), and so
// does any option the stream role does not take (blocks, chunk-bytes,
// strategy, regime).

func.func @all_to_all_128MiB(%in: memref<33554432xf32>, %out: memref<33554432xf32>) {
  coll.all_to_all %in, %out world 4 : memref<33554432xf32>, memref<33554432xf32>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_128MiB
// CHECK:       snac.role stream blocks 1 {
// CHECK-NOT:   snac.role
// OWN-LABEL:   func.func @all_to_all_128MiB
// OWN:         snac.role producer blocks 64 {
// FORCED-LABEL: func.func @all_to_all_128MiB
// FORCED:      snac.role producer blocks 16 {

// -----

func.func @all_to_all_64MiB(%in: memref<16777216xf32>, %out: memref<16777216xf32>) {
  coll.all_to_all %in, %out world 4 : memref<16777216xf32>, memref<16777216xf32>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_64MiB
// CHECK-NOT:   snac.role stream
// CHECK:       snac.role producer blocks 64 {

// -----

// An all_gather's slices go to every rank: one read, every write, on the SMs.
func.func @all_gather_128MiB(%in: memref<33554432xf32>, %out: memref<134217728xf32>) {
  coll.all_gather %in, %out world 4 : memref<33554432xf32>, memref<134217728xf32>
  func.return
}
// CHECK-LABEL: func.func @all_gather_128MiB
// CHECK-NOT:   snac.role stream
// CHECK:       snac.role producer blocks 64 {

// -----

// 5 ranks' slices of 33554435 f32 (134217740 bytes) each: 26843548 bytes,
// on 4 bytes but not 16: the SMs copy.
func.func @all_to_all_off_16_bytes(%in: memref<33554435xf32>, %out: memref<33554435xf32>) {
  coll.all_to_all %in, %out world 5 : memref<33554435xf32>, memref<33554435xf32>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_off_16_bytes
// CHECK-NOT:   snac.role stream
// CHECK:       snac.role producer
