// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{symmetric=true},snac-verify' | filecheck %s
// RUN: purlin-opt %s -p 'coll-expand,convert-coll-to-snac{symmetric=true strategy=direct},snac-verify' | filecheck %s --check-prefix=DIRECT

// In place (one buffer), symmetric. Composed, each owner writes only its
// own slice and is the last to read the slices it pushes to: in place.
// One-shot (direct), every rank would overwrite its buffer while its peers
// still read it: that collective is staged instead (snac-verify-negative.mlir
// has the pull in place, which snac-verify refuses).
func.func @all_reduce_in_place(%buf: memref<1048576xbf16>) {
  coll.all_reduce sum %buf, %buf world 8 : memref<1048576xbf16>, memref<1048576xbf16>
  func.return
}
// CHECK-LABEL:  func.func @all_reduce_in_place
// CHECK:        snac.program %buf, %buf world 8 regime throughput strategy composed symmetric
// CHECK:        route to_owner consume <reduce sum> chunk 0 direct pull
// CHECK:        route from_owner consume <copy> chunk 0 direct push
// DIRECT-LABEL: func.func @all_reduce_in_place
// DIRECT:       snac.program %buf, %buf world 8 regime throughput strategy direct symmetric
// DIRECT:       snac.buffer @exchange_buf staging
// DIRECT:       snac.phase @exchange {{.*}} via @exchange_buf
