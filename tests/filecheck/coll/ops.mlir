// RUN: purlin-opt %s | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | purlin-opt | filecheck %s
// RUN: purlin-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Round trip of every coll op: the custom form prints back as written (up to
// spacing), and the generic form re-parses to the same ops.

// -- named collectives, fixed sizes -------------------------------------------

func.func @all_reduce(%a: memref<64xbf16>, %b: memref<64xbf16>) {
  coll.all_reduce sum %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce max %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce min %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce prod %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce sum %a, %b world 8 deterministic : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce sum %a, %b world 3 : memref<64xbf16>, memref<64xbf16>
  coll.all_reduce sum %a, %a world 1 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce
// CHECK-NEXT:    coll.all_reduce sum %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce max %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce min %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce prod %a, %b world 8 : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce sum %a, %b world 8 deterministic : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce sum %a, %b world 3 : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT:    coll.all_reduce sum %a, %a world 1 : memref<64xbf16>, memref<64xbf16>
// GENERIC-LABEL: sym_name = "all_reduce"
// GENERIC:       "coll.all_reduce"(%a, %b) <{world = #builtin.int<8>, op = #coll<reduce_kind sum>}> : (memref<64xbf16>, memref<64xbf16>) -> ()
// GENERIC:       "coll.all_reduce"(%a, %b) <{world = #builtin.int<8>, op = #coll<reduce_kind sum>, deterministic}> : (memref<64xbf16>, memref<64xbf16>) -> ()

// Every element type, with every reduction it allows (prod is not exact on fp8).
func.func @dtypes(%h: memref<16xf16>, %f: memref<16xf32>, %e4: memref<16xf8E4M3FN>, %e5: memref<16xf8E5M2>) {
  coll.all_reduce prod %h, %h world 4 : memref<16xf16>, memref<16xf16>
  coll.all_reduce prod %f, %f world 4 : memref<16xf32>, memref<16xf32>
  coll.all_reduce sum %e4, %e4 world 4 : memref<16xf8E4M3FN>, memref<16xf8E4M3FN>
  coll.all_reduce max %e4, %e4 world 4 : memref<16xf8E4M3FN>, memref<16xf8E4M3FN>
  coll.all_reduce min %e5, %e5 world 4 : memref<16xf8E5M2>, memref<16xf8E5M2>
  coll.all_to_all %e5, %e5 world 4 : memref<16xf8E5M2>, memref<16xf8E5M2>
  func.return
}
// CHECK-LABEL: func.func @dtypes
// CHECK-NEXT:    coll.all_reduce prod %h, %h world 4 : memref<16xf16>, memref<16xf16>
// CHECK-NEXT:    coll.all_reduce prod %f, %f world 4 : memref<16xf32>, memref<16xf32>
// CHECK-NEXT:    coll.all_reduce sum %e4, %e4 world 4 : memref<16xf8E4M3FN>, memref<16xf8E4M3FN>
// CHECK-NEXT:    coll.all_reduce max %e4, %e4 world 4 : memref<16xf8E4M3FN>, memref<16xf8E4M3FN>
// CHECK-NEXT:    coll.all_reduce min %e5, %e5 world 4 : memref<16xf8E5M2>, memref<16xf8E5M2>
// CHECK-NEXT:    coll.all_to_all %e5, %e5 world 4 : memref<16xf8E5M2>, memref<16xf8E5M2>

func.func @gather_scatter(%a: memref<16xf32>, %g: memref<64xf32>) {
  coll.all_gather %a, %g world 4 : memref<16xf32>, memref<64xf32>
  coll.reduce_scatter sum %g, %a world 4 : memref<64xf32>, memref<16xf32>
  coll.reduce_scatter max %g, %a world 4 deterministic : memref<64xf32>, memref<16xf32>
  coll.all_to_all %g, %g world 4 : memref<64xf32>, memref<64xf32>
  func.return
}
// CHECK-LABEL: func.func @gather_scatter
// CHECK-NEXT:    coll.all_gather %a, %g world 4 : memref<16xf32>, memref<64xf32>
// CHECK-NEXT:    coll.reduce_scatter sum %g, %a world 4 : memref<64xf32>, memref<16xf32>
// CHECK-NEXT:    coll.reduce_scatter max %g, %a world 4 deterministic : memref<64xf32>, memref<16xf32>
// CHECK-NEXT:    coll.all_to_all %g, %g world 4 : memref<64xf32>, memref<64xf32>
// GENERIC-LABEL: sym_name = "gather_scatter"
// GENERIC:       "coll.all_gather"(%a, %g) <{world = #builtin.int<4>}> : (memref<16xf32>, memref<64xf32>) -> ()

// Dynamic buffer sizes verify as long as the static side determines the slices.
func.func @dynamic_buffers(%a: memref<?xf16>, %g: memref<64xf16>) {
  coll.all_gather %a, %g world 4 : memref<?xf16>, memref<64xf16>
  coll.all_reduce sum %a, %a world 4 : memref<?xf16>, memref<?xf16>
  func.return
}
// CHECK-LABEL: func.func @dynamic_buffers
// CHECK-NEXT:    coll.all_gather %a, %g world 4 : memref<?xf16>, memref<64xf16>
// CHECK-NEXT:    coll.all_reduce sum %a, %a world 4 : memref<?xf16>, memref<?xf16>

// -- variable-size (V) collectives ----------------------------------------------

func.func @v_static(%a: memref<8xbf16>, %g: memref<10xbf16>, %c: memref<16xbf16>) {
  coll.all_gather_v %a, %g world 4 counts [1, 2, 3, 4] : memref<8xbf16>, memref<10xbf16>
  coll.all_gather_v %a, %g world 4 counts [0, 8, 2, 0] : memref<8xbf16>, memref<10xbf16>
  coll.reduce_scatter_v sum %g, %a world 4 counts [4, 3, 2, 1] : memref<10xbf16>, memref<8xbf16>
  coll.reduce_scatter_v min %g, %a world 4 counts [4, 3, 2, 1] deterministic : memref<10xbf16>, memref<8xbf16>
  coll.all_to_all_v %c, %c world 2 counts [1, 2, 3, 0] : memref<16xbf16>, memref<16xbf16>
  coll.all_to_all_v %c, %c world 1 counts [16] : memref<16xbf16>, memref<16xbf16>
  func.return
}
// CHECK-LABEL: func.func @v_static
// CHECK-NEXT:    coll.all_gather_v %a, %g world 4 counts [1, 2, 3, 4] : memref<8xbf16>, memref<10xbf16>
// CHECK-NEXT:    coll.all_gather_v %a, %g world 4 counts [0, 8, 2, 0] : memref<8xbf16>, memref<10xbf16>
// CHECK-NEXT:    coll.reduce_scatter_v sum %g, %a world 4 counts [4, 3, 2, 1] : memref<10xbf16>, memref<8xbf16>
// CHECK-NEXT:    coll.reduce_scatter_v min %g, %a world 4 counts [4, 3, 2, 1] deterministic : memref<10xbf16>, memref<8xbf16>
// CHECK-NEXT:    coll.all_to_all_v %c, %c world 2 counts [1, 2, 3, 0] : memref<16xbf16>, memref<16xbf16>
// CHECK-NEXT:    coll.all_to_all_v %c, %c world 1 counts [16] : memref<16xbf16>, memref<16xbf16>
// GENERIC-LABEL: sym_name = "v_static"
// GENERIC:       "coll.all_gather_v"(%a, %g) <{world = #builtin.int<4>, static_counts = [#builtin.int<1>, #builtin.int<2>, #builtin.int<3>, #builtin.int<4>]}> : (memref<8xbf16>, memref<10xbf16>) -> ()

// Counts known only at run time: an i64 memref, a vector or a world x world matrix.
func.func @v_dynamic(%a: memref<64xf32>, %b: memref<256xf32>, %n: memref<4xi64>, %m: memref<4x4xi64>) {
  coll.all_gather_v %a, %b world 4 counts %n : memref<64xf32>, memref<256xf32>, memref<4xi64>
  coll.reduce_scatter_v prod %b, %a world 4 counts %n : memref<256xf32>, memref<64xf32>, memref<4xi64>
  coll.reduce_scatter_v sum %b, %a world 4 counts %n deterministic : memref<256xf32>, memref<64xf32>, memref<4xi64>
  coll.all_to_all_v %b, %b world 4 counts %m : memref<256xf32>, memref<256xf32>, memref<4x4xi64>
  func.return
}
// CHECK-LABEL: func.func @v_dynamic
// CHECK-NEXT:    coll.all_gather_v %a, %b world 4 counts %n : memref<64xf32>, memref<256xf32>, memref<4xi64>
// CHECK-NEXT:    coll.reduce_scatter_v prod %b, %a world 4 counts %n : memref<256xf32>, memref<64xf32>, memref<4xi64>
// CHECK-NEXT:    coll.reduce_scatter_v sum %b, %a world 4 counts %n deterministic : memref<256xf32>, memref<64xf32>, memref<4xi64>
// CHECK-NEXT:    coll.all_to_all_v %b, %b world 4 counts %m : memref<256xf32>, memref<256xf32>, memref<4x4xi64>
// GENERIC-LABEL: sym_name = "v_dynamic"
// GENERIC:       "coll.all_gather_v"(%a, %b, %n) <{world = #builtin.int<4>}> : (memref<64xf32>, memref<256xf32>, memref<4xi64>) -> ()

// all_reduce_v: the counts split the buffer it reduces into the ranks' slices;
// buffers may be larger than their sum, in place too, and groups take counts per group rank.
func.func @all_reduce_v(%a: memref<10xf32>, %b: memref<12xf32>, %n: memref<4xi64>) {
  coll.all_reduce_v sum %a, %b world 4 counts [3, 0, 5, 2] : memref<10xf32>, memref<12xf32>
  coll.all_reduce_v max %a, %a world 4 counts [0, 0, 0, 0] deterministic : memref<10xf32>, memref<10xf32>
  coll.all_reduce_v avg %a, %b world 4 counts %n : memref<10xf32>, memref<12xf32>, memref<4xi64>
  coll.all_reduce_v prod %a, %a world 4 groups [[0, 2], [1, 3]] counts [7, 3] : memref<10xf32>, memref<10xf32>
  func.return
}
// CHECK-LABEL: func.func @all_reduce_v
// CHECK-NEXT:    coll.all_reduce_v sum %a, %b world 4 counts [3, 0, 5, 2] : memref<10xf32>, memref<12xf32>
// CHECK-NEXT:    coll.all_reduce_v max %a, %a world 4 counts [0, 0, 0, 0] deterministic : memref<10xf32>, memref<10xf32>
// CHECK-NEXT:    coll.all_reduce_v avg %a, %b world 4 counts %n : memref<10xf32>, memref<12xf32>, memref<4xi64>
// CHECK-NEXT:    coll.all_reduce_v prod %a, %a world 4 groups {{\[}}[0, 2], [1, 3]] counts [7, 3] : memref<10xf32>, memref<10xf32>
// GENERIC-LABEL: sym_name = "all_reduce_v"
// GENERIC:       "coll.all_reduce_v"(%a, %b) <{world = #builtin.int<4>, op = #coll<reduce_kind sum>, static_counts = [#builtin.int<3>, #builtin.int<0>, #builtin.int<5>, #builtin.int<2>]}> : (memref<10xf32>, memref<12xf32>) -> ()
// GENERIC:       "coll.all_reduce_v"(%a, %b, %n) <{world = #builtin.int<4>, op = #coll<reduce_kind avg>}> : (memref<10xf32>, memref<12xf32>, memref<4xi64>) -> ()

// -- the generic collective: every layout form ----------------------------------

func.func @layouts(%a: memref<64xf32>, %b: memref<64xf32>, %n: memref<4xi64>, %m: memref<4x4xi64>) {
  coll.collective %a, %b in #coll.layout<packed, world 4, 16> out #coll.layout<scattered, world 4, 16> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<scattered, world 4, 16> out #coll.layout<packed, world 4, 16> consume #coll.consume<reduce sum> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<addressed, world 4, 16> out #coll.layout<transposed, world 4, 16> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<scattered, world 4, 0> out #coll.layout<scattered, world 4, 0> consume #coll.consume<reduce max> deterministic : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<packed_v, world 4, [1, 0, 3, 4]> out #coll.layout<scattered_v, world 4, [1, 0, 3, 4]> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<scattered_v, world 4, [5, 6, 7, 8]> out #coll.layout<packed_v, world 4, [5, 6, 7, 8]> consume #coll.consume<reduce min> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<addressed_v, world 2, [[1, 2], [0, 4]]> out #coll.layout<transposed_v, world 2, [[1, 2], [0, 4]]> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
  coll.collective %a, %b in #coll.layout<packed_v, world 4, ?> out #coll.layout<scattered_v, world 4, ?> consume #coll.consume<copy> counts %n : memref<64xf32>, memref<64xf32>, memref<4xi64>
  coll.collective %a, %b in #coll.layout<addressed_v, world 4, ?> out #coll.layout<transposed_v, world 4, ?> consume #coll.consume<copy> counts %m : memref<64xf32>, memref<64xf32>, memref<4x4xi64>
  coll.collective %a, %b in #coll.layout<scattered_v, world 4, ?> out #coll.layout<packed_v, world 4, ?> consume #coll.consume<reduce prod> counts %n deterministic : memref<64xf32>, memref<64xf32>, memref<4xi64>
  func.return
}
// CHECK-LABEL: func.func @layouts
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<packed, world 4, 16> out #coll.layout<scattered, world 4, 16> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<scattered, world 4, 16> out #coll.layout<packed, world 4, 16> consume #coll.consume<reduce sum> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<addressed, world 4, 16> out #coll.layout<transposed, world 4, 16> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<scattered, world 4, 0> out #coll.layout<scattered, world 4, 0> consume #coll.consume<reduce max> deterministic : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<packed_v, world 4, [1, 0, 3, 4]> out #coll.layout<scattered_v, world 4, [1, 0, 3, 4]> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<scattered_v, world 4, [5, 6, 7, 8]> out #coll.layout<packed_v, world 4, [5, 6, 7, 8]> consume #coll.consume<reduce min> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<addressed_v, world 2, [[1, 2], [0, 4]]> out #coll.layout<transposed_v, world 2, [[1, 2], [0, 4]]> consume #coll.consume<copy> : memref<64xf32>, memref<64xf32>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<packed_v, world 4, ?> out #coll.layout<scattered_v, world 4, ?> consume #coll.consume<copy> counts %n : memref<64xf32>, memref<64xf32>, memref<4xi64>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<addressed_v, world 4, ?> out #coll.layout<transposed_v, world 4, ?> consume #coll.consume<copy> counts %m : memref<64xf32>, memref<64xf32>, memref<4x4xi64>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<scattered_v, world 4, ?> out #coll.layout<packed_v, world 4, ?> consume #coll.consume<reduce prod> counts %n deterministic : memref<64xf32>, memref<64xf32>, memref<4xi64>
// GENERIC-LABEL: sym_name = "layouts"
// GENERIC:       "coll.collective"(%a, %b) <{input_layout = #coll.layout<packed, world 4, 16>, output_layout = #coll.layout<scattered, world 4, 16>, consume = #coll.consume<copy>}> : (memref<64xf32>, memref<64xf32>) -> ()
// GENERIC:       "coll.collective"(%a, %b, %n) <{input_layout = #coll.layout<packed_v, world 4, ?>, output_layout = #coll.layout<scattered_v, world 4, ?>, consume = #coll.consume<copy>}> : (memref<64xf32>, memref<64xf32>, memref<4xi64>) -> ()

// General named layouts: broadcast, gather, a permutation, a 2-D sub-group
// reduction, tuple names, and an empty slice.
func.func @named(%a: memref<8xf16>, %b: memref<32xf16>) {
  coll.collective %a, %b in #coll.layout<named, world 4, [(0, 0, 8, 7)]> out #coll.layout<named, world 4, [(0, 0, 8, 7), (1, 0, 8, 7), (2, 0, 8, 7), (3, 0, 8, 7)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
  coll.collective %a, %b in #coll.layout<packed, world 4, 8> out #coll.layout<named, world 4, [(2, 0, 8, 0), (2, 8, 8, 1), (2, 16, 8, 2), (2, 24, 8, 3)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
  coll.collective %a, %b in #coll.layout<packed, world 4, 8> out #coll.layout<named, world 4, [(0, 0, 8, 1), (1, 0, 8, 2), (2, 0, 8, 3), (3, 0, 8, 0)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
  coll.collective %a, %b in #coll.layout<named, world 4, [(0, 0, 8, (0, 0)), (1, 0, 8, (0, 0)), (2, 0, 8, (1, 2, 3)), (3, 0, 8, (1, 2, 3)), (1, 8, 0, 9)]> out #coll.layout<named, world 4, [(0, 0, 8, (0, 0)), (3, 24, 8, (1, 2, 3)), (3, 8, 0, 9), (0, 8, 0, 9)]> consume #coll.consume<reduce sum> deterministic : memref<8xf16>, memref<32xf16>
  coll.collective %a, %b in #coll.layout<named, world 2, []> out #coll.layout<named, world 2, []> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
  func.return
}
// CHECK-LABEL: func.func @named
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<named, world 4, [(0, 0, 8, 7)]> out #coll.layout<named, world 4, [(0, 0, 8, 7), (1, 0, 8, 7), (2, 0, 8, 7), (3, 0, 8, 7)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<packed, world 4, 8> out #coll.layout<named, world 4, [(2, 0, 8, 0), (2, 8, 8, 1), (2, 16, 8, 2), (2, 24, 8, 3)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<packed, world 4, 8> out #coll.layout<named, world 4, [(0, 0, 8, 1), (1, 0, 8, 2), (2, 0, 8, 3), (3, 0, 8, 0)]> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<named, world 4, [(0, 0, 8, (0, 0)), (1, 0, 8, (0, 0)), (2, 0, 8, (1, 2, 3)), (3, 0, 8, (1, 2, 3)), (1, 8, 0, 9)]> out #coll.layout<named, world 4, [(0, 0, 8, (0, 0)), (3, 24, 8, (1, 2, 3)), (3, 8, 0, 9), (0, 8, 0, 9)]> consume #coll.consume<reduce sum> deterministic : memref<8xf16>, memref<32xf16>
// CHECK-NEXT:    coll.collective %a, %b in #coll.layout<named, world 2, []> out #coll.layout<named, world 2, []> consume #coll.consume<copy> : memref<8xf16>, memref<32xf16>
// GENERIC-LABEL: sym_name = "named"
// GENERIC:       "coll.collective"(%a, %b) <{input_layout = #coll.layout<named, world 4, [(0, 0, 8, 7)]>, output_layout = #coll.layout<named, world 4, [(0, 0, 8, 7), (1, 0, 8, 7), (2, 0, 8, 7), (3, 0, 8, 7)]>, consume = #coll.consume<copy>}> : (memref<8xf16>, memref<32xf16>) -> ()

// Discardable attributes survive on both kinds of op.
func.func @attributes(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 {tag = "x"} : memref<8xf32>, memref<8xf32>
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> {tag = "y"} : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK-LABEL: func.func @attributes
// CHECK-NEXT:    coll.all_reduce sum %a, %a world 2 {tag = "x"} : memref<8xf32>, memref<8xf32>
// CHECK-NEXT:    coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> {tag = "y"} : memref<8xf32>, memref<8xf32>
