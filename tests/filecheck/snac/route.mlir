// RUN: purlin-opt %s | filecheck %s
// RUN: purlin-opt %s --print-op-generic | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// A composed reduction's phases keep the collective's layouts and name a
// route, so their IR is the same size at any world size.
func.func @composed(%in: memref<8xf32>, %out: memref<8xf32>) {
  snac.program %in, %out world 2 regime throughput strategy composed : memref<8xf32>, memref<8xf32> {
    snac.buffer @reduce_buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @reduce_ready slots 2
    snac.signals @reduce_free slots 2
    snac.phase @reduce from input <scattered, world 2, 4> to <scattered, world 2, 4> route to_owner consume <reduce sum> chunk 4 via @reduce_buf ready @reduce_ready free @reduce_free
    snac.buffer @forward_buf staging halves 2 slots 2 elems 4 : f32
    snac.signals @forward_ready slots 2
    snac.signals @forward_free slots 2
    snac.phase @forward from output <scattered, world 2, 4> to <scattered, world 2, 4> route from_owner consume <copy> chunk 4 via @forward_buf ready @forward_ready free @forward_free
  }
  func.return
}
// CHECK:      snac.phase @reduce from input <scattered, world 2, 4> to <scattered, world 2, 4> route to_owner consume <reduce sum> chunk 4 via @reduce_buf ready @reduce_ready free @reduce_free{{$}}
// CHECK:      snac.phase @forward from output <scattered, world 2, 4> to <scattered, world 2, 4> route from_owner consume <copy> chunk 4 via @forward_buf ready @forward_ready free @forward_free{{$}}
// GENERIC:    "snac.phase"() <{{{.*}}route = #snac<route to_owner>{{.*}}}>
// GENERIC:    "snac.phase"() <{{{.*}}route = #snac<route from_owner>{{.*}}}>
