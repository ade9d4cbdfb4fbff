// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{symmetric=true counts-on-host=true regime=throughput},snac-verify' | filecheck %s
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{symmetric=true regime=throughput},snac-verify' | filecheck %s --check-prefix=DEVICE

// Dynamic counts bound on the host before each call (counts-on-host) give the
// host every offset, so a symmetric program moves them in place as it does
// fixed counts; snac-verify runs the samples of counts and counts that change
// from call to call. Read on the device, the same counts are staged.
func.func @all_to_all_v(%a: memref<64xbf16>, %b: memref<96xbf16>, %c: memref<3x3xi64>) {
  coll.all_to_all_v %a, %b world 3 counts %c : memref<64xbf16>, memref<96xbf16>, memref<3x3xi64>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_v
// CHECK:       snac.program %{{.*}} world 3 regime throughput strategy {{.*}} symmetric
// CHECK-NOT:   snac.buffer
// CHECK:       snac.phase @exchange from input <addressed_v, world 3, ?> to <transposed_v, world 3, ?> consume <copy> chunk 0 direct push
// DEVICE-LABEL: func.func @all_to_all_v
// DEVICE:       snac.buffer @exchange_buf staging
// DEVICE:       snac.phase @exchange {{.*}} chunk 96 via @exchange_buf

func.func @reduce_scatter_v(%a: memref<256xbf16>, %b: memref<64xbf16>, %c: memref<4xi64>) {
  coll.reduce_scatter_v sum %a, %b world 4 counts %c : memref<256xbf16>, memref<64xbf16>, memref<4xi64>
  func.return
}
// CHECK-LABEL: func.func @reduce_scatter_v
// CHECK:       snac.program %{{.*}} world 4 regime throughput strategy {{.*}} symmetric
// CHECK-NOT:   snac.buffer
// CHECK:       snac.phase @{{.*}} consume <reduce sum> chunk 0 direct pull
// DEVICE-LABEL: func.func @reduce_scatter_v
// DEVICE:       snac.buffer @exchange_buf staging
// DEVICE:       snac.phase @exchange {{.*}} consume <reduce sum> chunk 256 via @exchange_buf
