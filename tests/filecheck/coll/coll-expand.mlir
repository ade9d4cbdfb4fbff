// RUN: purlin-opt %s -p coll-expand | filecheck %s
// RUN: purlin-opt %s -p coll-expand | purlin-opt | filecheck %s
// RUN: xdsl-opt %s -p coll-expand | filecheck %s

// Every named collective becomes one coll.collective whose layouts say what it
// means; the buffers, counts operand and deterministic flag carry over.

func.func @all_reduce(%in: memref<64xbf16>, %out: memref<64xbf16>) {
  coll.all_reduce sum %in, %out world 8 : memref<64xbf16>, memref<64xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce
// CHECK-NEXT: coll.collective %in, %out in #coll.layout<scattered, world 8, 8> out #coll.layout<scattered, world 8, 8> consume #coll.consume<reduce sum> : memref<64xbf16>, memref<64xbf16>
// CHECK-NEXT: func.return

// A size not divisible by world is split into balanced slices, larger first.
func.func @all_reduce_uneven(%a: memref<10xf32>) {
  coll.all_reduce max %a, %a world 4 deterministic : memref<10xf32>, memref<10xf32>
  coll.all_reduce min %a, %a world 16 : memref<10xf32>, memref<10xf32>
  func.return
}
// CHECK-LABEL: func.func @all_reduce_uneven
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered_v, world 4, [3, 3, 2, 2]> out #coll.layout<scattered_v, world 4, [3, 3, 2, 2]> consume #coll.consume<reduce max> deterministic : memref<10xf32>, memref<10xf32>
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered_v, world 16, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]> out #coll.layout<scattered_v, world 16, [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0]> consume #coll.consume<reduce min> : memref<10xf32>, memref<10xf32>

// One dynamic buffer: the slice size comes from the static one.
func.func @all_reduce_one_dynamic(%a: memref<?xf16>, %b: memref<12xf16>) {
  coll.all_reduce prod %a, %b world 3 : memref<?xf16>, memref<12xf16>
  func.return
}
// CHECK-LABEL: func.func @all_reduce_one_dynamic
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<scattered, world 3, 4> out #coll.layout<scattered, world 3, 4> consume #coll.consume<reduce prod> : memref<?xf16>, memref<12xf16>

func.func @all_gather(%a: memref<16xf8E4M3FN>, %b: memref<64xf8E4M3FN>, %d: memref<?xf8E4M3FN>) {
  coll.all_gather %a, %b world 4 : memref<16xf8E4M3FN>, memref<64xf8E4M3FN>
  coll.all_gather %d, %b world 4 : memref<?xf8E4M3FN>, memref<64xf8E4M3FN>
  func.return
}
// CHECK-LABEL: func.func @all_gather
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<packed, world 4, 16> out #coll.layout<scattered, world 4, 16> consume #coll.consume<copy> : memref<16xf8E4M3FN>, memref<64xf8E4M3FN>
// CHECK-NEXT: coll.collective %d, %b in #coll.layout<packed, world 4, 16> out #coll.layout<scattered, world 4, 16> consume #coll.consume<copy> : memref<?xf8E4M3FN>, memref<64xf8E4M3FN>

func.func @reduce_scatter(%a: memref<16xf16>, %b: memref<64xf16>, %d: memref<?xf16>) {
  coll.reduce_scatter sum %b, %a world 4 deterministic : memref<64xf16>, memref<16xf16>
  coll.reduce_scatter max %b, %d world 4 : memref<64xf16>, memref<?xf16>
  func.return
}
// CHECK-LABEL: func.func @reduce_scatter
// CHECK-NEXT: coll.collective %b, %a in #coll.layout<scattered, world 4, 16> out #coll.layout<packed, world 4, 16> consume #coll.consume<reduce sum> deterministic : memref<64xf16>, memref<16xf16>
// CHECK-NEXT: coll.collective %b, %d in #coll.layout<scattered, world 4, 16> out #coll.layout<packed, world 4, 16> consume #coll.consume<reduce max> : memref<64xf16>, memref<?xf16>

func.func @all_to_all(%a: memref<64xf8E5M2>, %b: memref<64xf8E5M2>) {
  coll.all_to_all %a, %b world 4 : memref<64xf8E5M2>, memref<64xf8E5M2>
  coll.all_to_all %a, %b world 1 : memref<64xf8E5M2>, memref<64xf8E5M2>
  func.return
}
// CHECK-LABEL: func.func @all_to_all
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<addressed, world 4, 16> out #coll.layout<transposed, world 4, 16> consume #coll.consume<copy> : memref<64xf8E5M2>, memref<64xf8E5M2>
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<addressed, world 1, 64> out #coll.layout<transposed, world 1, 64> consume #coll.consume<copy> : memref<64xf8E5M2>, memref<64xf8E5M2>

// V forms: the counts become the layouts' counts, zeros included.
func.func @all_gather_v(%a: memref<8xbf16>, %b: memref<12xbf16>) {
  coll.all_gather_v %a, %b world 4 counts [4, 0, 8, 0] : memref<8xbf16>, memref<12xbf16>
  func.return
}
// CHECK-LABEL: func.func @all_gather_v
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<packed_v, world 4, [4, 0, 8, 0]> out #coll.layout<scattered_v, world 4, [4, 0, 8, 0]> consume #coll.consume<copy> : memref<8xbf16>, memref<12xbf16>

func.func @reduce_scatter_v(%a: memref<8xbf16>, %b: memref<12xbf16>) {
  coll.reduce_scatter_v min %b, %a world 4 counts [0, 0, 8, 4] deterministic : memref<12xbf16>, memref<8xbf16>
  func.return
}
// CHECK-LABEL: func.func @reduce_scatter_v
// CHECK-NEXT: coll.collective %b, %a in #coll.layout<scattered_v, world 4, [0, 0, 8, 4]> out #coll.layout<packed_v, world 4, [0, 0, 8, 4]> consume #coll.consume<reduce min> deterministic : memref<12xbf16>, memref<8xbf16>

// all_reduce_v: the counts name every rank's slice of both buffers; those of
// all_reduce's balanced split give the layouts all_reduce of the same buffer has.
func.func @all_reduce_v(%a: memref<10xf32>, %b: memref<12xf32>) {
  coll.all_reduce_v sum %a, %b world 4 counts [3, 0, 5, 2] : memref<10xf32>, memref<12xf32>
  coll.all_reduce_v max %a, %a world 4 counts [3, 3, 2, 2] deterministic : memref<10xf32>, memref<10xf32>
  func.return
}
// CHECK-LABEL: func.func @all_reduce_v
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<scattered_v, world 4, [3, 0, 5, 2]> out #coll.layout<scattered_v, world 4, [3, 0, 5, 2]> consume #coll.consume<reduce sum> : memref<10xf32>, memref<12xf32>
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered_v, world 4, [3, 3, 2, 2]> out #coll.layout<scattered_v, world 4, [3, 3, 2, 2]> consume #coll.consume<reduce max> deterministic : memref<10xf32>, memref<10xf32>

// The count matrix is row = sender: rank 0 sends 1 to itself and 2 to rank 1.
func.func @all_to_all_v(%a: memref<8xf32>) {
  coll.all_to_all_v %a, %a world 2 counts [1, 2, 0, 5] : memref<8xf32>, memref<8xf32>
  coll.all_to_all_v %a, %a world 2 counts [0, 0, 0, 0] : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK-LABEL: func.func @all_to_all_v
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<addressed_v, world 2, {{\[\[}}1, 2], [0, 5]]> out #coll.layout<transposed_v, world 2, {{\[\[}}1, 2], [0, 5]]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<addressed_v, world 2, {{\[\[}}0, 0], [0, 0]]> out #coll.layout<transposed_v, world 2, {{\[\[}}0, 0], [0, 0]]> consume #coll.consume<copy> : memref<8xf32>, memref<8xf32>

// Dynamic counts: the layouts say `?` and the counts operand carries over.
func.func @dynamic_counts(%a: memref<64xf32>, %b: memref<256xf32>, %n: memref<4xi64>, %m: memref<4x4xi64>) {
  coll.all_gather_v %a, %b world 4 counts %n : memref<64xf32>, memref<256xf32>, memref<4xi64>
  coll.reduce_scatter_v sum %b, %a world 4 counts %n deterministic : memref<256xf32>, memref<64xf32>, memref<4xi64>
  coll.all_to_all_v %b, %b world 4 counts %m : memref<256xf32>, memref<256xf32>, memref<4x4xi64>
  coll.all_reduce_v sum %b, %b world 4 counts %n : memref<256xf32>, memref<256xf32>, memref<4xi64>
  func.return
}
// CHECK-LABEL: func.func @dynamic_counts
// CHECK-NEXT: coll.collective %a, %b in #coll.layout<packed_v, world 4, ?> out #coll.layout<scattered_v, world 4, ?> consume #coll.consume<copy> counts %n : memref<64xf32>, memref<256xf32>, memref<4xi64>
// CHECK-NEXT: coll.collective %b, %a in #coll.layout<scattered_v, world 4, ?> out #coll.layout<packed_v, world 4, ?> consume #coll.consume<reduce sum> counts %n deterministic : memref<256xf32>, memref<64xf32>, memref<4xi64>
// CHECK-NEXT: coll.collective %b, %b in #coll.layout<addressed_v, world 4, ?> out #coll.layout<transposed_v, world 4, ?> consume #coll.consume<copy> counts %m : memref<256xf32>, memref<256xf32>, memref<4x4xi64>
// CHECK-NEXT: coll.collective %b, %b in #coll.layout<scattered_v, world 4, ?> out #coll.layout<scattered_v, world 4, ?> consume #coll.consume<reduce sum> counts %n : memref<256xf32>, memref<256xf32>, memref<4xi64>

// Generic collectives are left alone; discardable attributes carry over.
func.func @untouched(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
  coll.all_reduce sum %a, %a world 2 {tag = "t"} : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
// CHECK-NEXT: coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> {tag = "t"} : memref<8xf32>, memref<8xf32>
