// RUN: not purlin-opt %s -p convert-coll-to-snac 2>&1 | filecheck %s

// A lowering that applies to some ops but leaves others of its dialect is an
// error at the first op left, not IR handed on half lowered.

func.func @f(%a: memref<8xf32>, %b: memref<8xf32>) {
  coll.collective %a, %a in #coll.layout<scattered, world 2, 4> out #coll.layout<scattered, world 2, 4> consume #coll.consume<reduce sum> : memref<8xf32>, memref<8xf32>
  coll.all_reduce sum %b, %b world 2 : memref<8xf32>, memref<8xf32>
  func.return
}
// CHECK:     pass-leaves-ops.mlir:8:3: error: 'coll.all_reduce': left unlowered by pass 'convert-coll-to-snac', which lowers coll.collective; run coll-expand before it
// CHECK-NOT: builtin.module
