// RUN: xdsl-opt %S/../coll/ops.mlir | purlin-opt | filecheck %S/../coll/ops.mlir
// RUN: xdsl-opt %S/../coll/coll-expand.mlir -p coll-expand | filecheck %S/../coll/coll-expand.mlir
// RUN: xdsl-opt %s -p coll-expand | filecheck %s

// Plain xdsl-opt knows purlin's dialects and passes through the xdsl.universe
// entry point, so the same files work with either driver.

func.func @f(%a: memref<8xf32>) {
  coll.all_reduce sum %a, %a world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK: coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
