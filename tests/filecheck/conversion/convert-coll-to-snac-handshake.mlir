// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},snac-verify' | filecheck %s

// Latency, one phase: one fused role pushes and polls. The wait_free / finish
// handshake is dropped only where every rank that pushes to a peer also
// receives from that peer in the same call (so its next write of the half
// follows the peer's reads); snac-verify proves each program below either way.

// all_reduce: everyone exchanges with everyone, no handshake.
func.func @all_reduce(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 4 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce
// CHECK:         snac.role fused blocks 1 {
// CHECK-NOT:     snac.reclaim
// CHECK:         snac.put @exchange
// CHECK:         snac.consume @exchange
// CHECK-NOT:     snac.finish
// CHECK:         snac.advance

// A swap of two ranks is mutual too.
func.func @swap(%in: memref<4xf32>, %out: memref<4xf32>) {
  coll.collective %in, %out in #coll.layout<named, world 2, [(0, 0, 4, 0), (1, 0, 4, 1)]> out #coll.layout<named, world 2, [(1, 0, 4, 0), (0, 0, 4, 1)]> consume #coll.consume<copy> : memref<4xf32>, memref<4xf32>
  func.return
}
// CHECK-LABEL: func.func @swap
// CHECK:         snac.role fused blocks 1 {
// CHECK-NOT:     snac.reclaim
// CHECK-NOT:     snac.finish
// CHECK:         snac.advance

// Broadcast: ranks 1 and 2 only receive, so nothing tells rank 0 they are done
// with a half: the handshake stays.
func.func @broadcast(%in: memref<4xf32>, %out: memref<4xf32>) {
  coll.collective %in, %out in #coll.layout<named, world 3, [(0, 0, 4, 7)]> out #coll.layout<named, world 3, [(0, 0, 4, 7), (1, 0, 4, 7), (2, 0, 4, 7)]> consume #coll.consume<copy> : memref<4xf32>, memref<4xf32>
  func.return
}
// CHECK-LABEL: func.func @broadcast
// CHECK:         snac.role fused blocks 1 {
// CHECK:           snac.reclaim @exchange unit {{%[0-9]+}} of {{%[0-9]+}} epoch {{%[0-9]+}} prev {{%[0-9]+}} acquire system
// CHECK-NEXT:      snac.put @exchange
// CHECK:           snac.finish @exchange of {{%[0-9]+}} value {{%[0-9]+}} release system
// CHECK-NEXT:    }
// CHECK-NEXT:    snac.advance

// A ring shift (0 -> 1 -> 2 -> 0): each rank receives, but not from the rank
// it sends to: the handshake stays.
func.func @shift(%in: memref<4xf32>, %out: memref<4xf32>) {
  coll.collective %in, %out in #coll.layout<named, world 3, [(0, 0, 4, 0), (1, 0, 4, 1), (2, 0, 4, 2)]> out #coll.layout<named, world 3, [(1, 0, 4, 0), (2, 0, 4, 1), (0, 0, 4, 2)]> consume #coll.consume<copy> : memref<4xf32>, memref<4xf32>
  func.return
}
// CHECK-LABEL: func.func @shift
// CHECK:         snac.reclaim @exchange
// CHECK:         snac.finish @exchange
