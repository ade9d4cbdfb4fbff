// RUN: not purlin-opt %s 2>&1 | filecheck %s

func.func @f(%a: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered_v, world 2, [4]> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:      bad-layout.mlir:4:42: error: invalid scattered_v layout: expected 2 counts (one per rank), got 1
// CHECK-NEXT: {{^}}  coll.collective
// CHECK-NEXT: {{^ {41}\^$}}
// CHECK-NOT:  {{.}}
