// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac,snac-verify' | filecheck %s

// Dynamic counts over buffers of static size: no unit outgrows the larger
// buffer, whatever the counts, so staging holds one (the cost model's chunk
// would be 1 MiB). snac-verify runs each sample of counts and then counts that
// change from call to call, as a kernel reading them on the device sees them.
func.func @all_to_all_v(%a: memref<64xf32>, %b: memref<96xf32>, %c: memref<3x3xi64>) {
  coll.all_to_all_v %a, %b world 3 counts %c : memref<64xf32>, memref<96xf32>, memref<3x3xi64>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_v
// CHECK:         snac.buffer @exchange_buf staging halves 2 slots {{[0-9]+}} elems 96 : f32
// CHECK:         snac.phase @exchange from input <addressed_v, world 3, ?> to <transposed_v, world 3, ?> consume <copy> chunk 96

// An unknown buffer size bounds nothing: the cost model's chunk stays.
func.func @all_gather_v(%a: memref<?xbf16>, %b: memref<64xbf16>, %n: memref<2xi64>) {
  coll.all_gather_v %a, %b world 2 counts %n : memref<?xbf16>, memref<64xbf16>, memref<2xi64>
  func.return
}
// CHECK-LABEL: func.func @all_gather_v
// CHECK:         snac.phase @exchange from input <packed_v, world 2, ?> to <scattered_v, world 2, ?> consume <copy> chunk {{[0-9][0-9][0-9][0-9][0-9]+}}
