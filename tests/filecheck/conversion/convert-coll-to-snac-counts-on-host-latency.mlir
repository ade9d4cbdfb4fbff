// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency counts-on-host=true},snac-verify' | filecheck %s
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{regime=latency},snac-verify' | filecheck %s --check-prefix=DEVICE

// Latency, dynamic counts bound on the host before each call: the phase makes
// a unit of every slice, an empty one one flag-only packet (empty_units), so
// every pair of ranks the layouts connect exchanges a flag each call whatever
// the counts. Where each such pair goes both ways (the three V forms) the
// fused role drops the wait_free / finish handshake, as fixed counts do;
// snac-verify proves it with sampled counts, zeros among them, and counts
// changing from call to call. Counts read on the device make no empty unit:
// the handshake stays.
func.func @all_gather_v(%in: memref<8xf32>, %out: memref<24xf32>, %n: memref<3xi64>) {
  coll.all_gather_v %in, %out world 3 counts %n : memref<8xf32>, memref<24xf32>, memref<3xi64>
  func.return
}
// CHECK-LABEL: func.func @all_gather_v
// CHECK:         snac.buffer @exchange_buf packets halves 2 slots 3 elems 30 : f32
// CHECK:         snac.phase @exchange from input <packed_v, world 3, ?> to <scattered_v, world 3, ?> consume <copy> chunk 0 via @exchange_buf ready @exchange_ready free @exchange_free empty_units{{$}}
// CHECK:         snac.role fused blocks {{[0-9]+}} {
// CHECK-NOT:     snac.reclaim
// CHECK:           snac.put @exchange
// CHECK:           snac.consume @exchange
// CHECK-NOT:     snac.finish
// CHECK:         snac.advance
// DEVICE-LABEL: func.func @all_gather_v
// DEVICE:         snac.phase @exchange {{.*}} free @exchange_free{{$}}
// DEVICE:           snac.reclaim @exchange
// DEVICE:           snac.finish @exchange

func.func @reduce_scatter_v(%in: memref<32xbf16>, %out: memref<16xbf16>, %n: memref<5xi64>) {
  coll.reduce_scatter_v sum %in, %out world 5 counts %n : memref<32xbf16>, memref<16xbf16>, memref<5xi64>
  func.return
}
// CHECK-LABEL: func.func @reduce_scatter_v
// CHECK:         snac.phase @exchange from input <scattered_v, world 5, ?> to <packed_v, world 5, ?> consume <reduce sum> {{.*}} empty_units{{$}}
// CHECK-NOT:     snac.reclaim
// CHECK-NOT:     snac.finish
// CHECK:         snac.advance
// DEVICE-LABEL: func.func @reduce_scatter_v
// DEVICE:           snac.reclaim @exchange
// DEVICE:           snac.finish @exchange

func.func @all_to_all_v(%in: memref<16xf32>, %out: memref<64xf32>, %n: memref<4x4xi64>) {
  coll.all_to_all_v %in, %out world 4 counts %n : memref<16xf32>, memref<64xf32>, memref<4x4xi64>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_v
// CHECK:         snac.phase @exchange from input <addressed_v, world 4, ?> to <transposed_v, world 4, ?> consume <copy> {{.*}} empty_units{{$}}
// CHECK-NOT:     snac.reclaim
// CHECK-NOT:     snac.finish
// CHECK:         snac.advance
// DEVICE-LABEL: func.func @all_to_all_v
// DEVICE:           snac.reclaim @exchange
// DEVICE:           snac.finish @exchange

// Fixed counts make no empty unit: an all_to_all_v whose rank 1 sends nothing
// to rank 0 keeps the handshake, counts-on-host or not.
func.func @one_way(%in: memref<8xf32>, %out: memref<8xf32>) {
  coll.all_to_all_v %in, %out world 2 counts [2, 3, 0, 4] : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK-LABEL: func.func @one_way
// CHECK:         snac.phase @exchange {{.*}} free @exchange_free{{$}}
// CHECK:           snac.reclaim @exchange
// CHECK:           snac.finish @exchange
